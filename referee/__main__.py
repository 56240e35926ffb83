from referee.launch import main

raise SystemExit(main())
