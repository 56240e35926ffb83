"""bench/pipeline.py's pass finds its templates compiled beside games.db, as
a cron run of `referee run --once` finds them from its second run on (review
44): the site's too, not only the mail's.  The setup's render of games with
no phase resolved yet never loads a kind's rounds page, the chart or the
events' text, so the pass compiled them (3 templates a pass of Pure Skill, 9
of every kind), which a cron run reads compiled."""

from __future__ import annotations

from types import SimpleNamespace

import jinja2
from test_bench_mailcount import load_bench

from referee.site.render import Site


def test_the_bench_finds_the_site_templates_compiled(tmp_path, monkeypatch):
    servers = SimpleNamespace(imap_port=1, smtp_port=2)  # (only their ports go into the config)
    config = load_bench("pipeline").bench_config(servers, servers, tmp_path)
    compiled: list[str] = []
    compile_ = jinja2.Environment._compile

    def counted(env, source, filename):
        compiled.append(filename)
        return compile_(env, source, filename)

    monkeypatch.setattr(jinja2.Environment, "_compile", counted)
    env = Site(None, config.site_dir, config.templates, config.template_cache).env  # type: ignore[arg-type]
    names = env.list_templates(filter_func=lambda name: name.startswith(("site/", "events/")) and name.endswith(".j2"))
    assert "site/pure-skill/rounds.html.j2" in names and "site/_chart.svg.j2" in names
    for name in names:
        env.get_template(name)
    assert compiled == []
