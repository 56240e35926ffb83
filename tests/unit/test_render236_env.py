"""The site's and the mail's Jinja environment (referee.templating) reads ``a.b`` of a dict by its item first
(issue 36, full renders): what a template shows is what Jinja shows."""

from __future__ import annotations

import jinja2
import pytest

from referee.templating import Environment

TEMPLATE = (
    "{{ d.label }}|{{ d.items }}|{{ d['items'] }}|{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|"
    "{{ d.get('label') }}|{{ d.inner.label }}|{{ d.keys is defined }}|{{ d.nothing is defined }}|{{ o.real }}"
)


@pytest.mark.parametrize(
    "d",
    [
        {"label": "Round 1", "items": "three items", "inner": {"label": "<b>x</b>"}},
        {"label": 0, "items": None, "inner": {"label": ""}, "keys": "a key named keys"},
    ],
)
def test_site_environment_shows_what_jinja_shows(d):
    made = [
        kind(autoescape=True).from_string(TEMPLATE).render(d=d, o=3.5) for kind in (jinja2.Environment, Environment)
    ]
    assert made[0] == made[1]


def test_site_environment_refuses_a_missing_key_as_jinja_does():
    for kind in (jinja2.Environment, Environment):
        template = kind(undefined=jinja2.StrictUndefined).from_string("{{ d.missing }}")
        with pytest.raises(jinja2.UndefinedError):
            template.render(d={"label": 1})


def test_a_template_sees_the_environment_s_globals_and_its_own_alone():
    env = Environment()
    own = env.from_string("{{ range(2)|list }} {{ x }}", globals={"x": 1})
    assert own.render() == "[0, 1] 1"
    own.globals["x"] = 2
    assert own.render() == "[0, 1] 2"
    assert "x" not in env.globals
    assert env.from_string("{{ x is defined }}").render() == "False"
