"""The mail's own map and wordwrap filters (referee.mail.compose) write what Jinja's would."""

import jinja2
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.config import Config
from referee.mail.compose import Composer

TEMPLATE = (
    '{{ cards|map("card")|join(" ") }}|{{ cards|map("card_long")|list }}|{{ players|map(attribute="label")|join(",") }}'
    '|{{ none_list|map("card")|list }}|{{ cards|map("string")|map("upper")|join }}'
    "|{% filter wordwrap(12, break_long_words=False) %}{{ text }}{% endfilter %}|{{ text|wordwrap(9) }}"
)


def _jinja_s_own(composer: Composer) -> jinja2.Environment:
    plain = composer.env.overlay()
    plain.filters = {**composer.env.filters, "map": jinja2.filters.do_map, "wordwrap": jinja2.filters.do_wordwrap}
    return plain


@settings(max_examples=60, deadline=None)
@given(
    cards=st.lists(st.integers(min_value=1, max_value=13), max_size=13),
    text=st.text(alphabet=st.sampled_from("ab -\n"), max_size=60),
)
def test_the_mail_s_map_and_wordwrap_write_what_jinja_s_own_would(tmp_path_factory, cards, text):
    composer = Composer(Config(address="referee@example.org", database=tmp_path_factory.mktemp("db") / "g.db"))
    context = {"cards": cards, "players": [{"label": "Ann"}, {"label": "Bo"}], "none_list": [], "text": text}
    ours = composer.env.from_string(TEMPLATE).render(**context)
    theirs = _jinja_s_own(composer).from_string(TEMPLATE).render(**context)
    assert ours == theirs
    assert composer.env.from_string(TEMPLATE).render(**context) == theirs  # (a second time: the wrap kept)


def test_a_missing_filter_is_still_refused_by_map():
    composer = Composer(Config(address="referee@example.org"))
    try:
        composer.env.from_string('{{ [1]|map("no_such_filter")|list }}').render()
    except jinja2.TemplateRuntimeError as error:
        assert "no_such_filter" in str(error)
    else:
        raise AssertionError("map of a filter that does not exist rendered")
