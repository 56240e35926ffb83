from referee.cli import main

raise SystemExit(main())
