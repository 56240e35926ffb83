"""bench/site.py --instructions counts a forced render by Valgrind as two
runs of the bench: one that ends where the render starts, one that ends
where it ends (the first count taken from the second).  Each run must
stop exactly there: the first with no page written, the second with the
whole site written and nothing after it (the folder it renders into is
left where it was, not removed), and neither prints a figure."""

from __future__ import annotations

import os
import subprocess
import sys

from test_bench_mailcount import BENCHES, load_bench


def _counted_run(part: str, cache, scratch) -> subprocess.CompletedProcess[str]:
    bench = load_bench("site")
    command = [sys.executable, str(BENCHES / "site.py"), "--kinds", "pure-skill", "--games", "2", "--cache", str(cache)]
    env = {**os.environ, bench._COUNTED: part, "TMPDIR": str(scratch)}
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def test_bench48_each_counted_run_ends_where_the_render_starts_or_ends(tmp_path):
    cache = tmp_path / "cache"
    bench = load_bench("site")
    _, _, report = bench.forced_render(bench.built("pure-skill", 2, cache), cache)  # (the games built once)
    assert report.games_rendered == 2
    for part, pages in (("setup", 0), ("render", 2)):
        scratch = tmp_path / part
        scratch.mkdir()
        done = _counted_run(part, cache, scratch)
        assert done.returncode == 0, done.stderr
        assert done.stdout == ""
        assert len(list(scratch.glob("*/site/games/*/index.html"))) == pages
        assert len(list(scratch.glob("*/site/index.html"))) == (1 if pages else 0)
