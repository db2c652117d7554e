"""A query is untrusted text: FTS5 syntax in it is never interpreted, and never leaks an FTS5 error."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from assay.plugins.knowledge.errors import KnowledgeError
from assay.plugins.knowledge.index import match_expression
from assay.plugins.knowledge.resource import KnowledgeBase
from assay.plugins.knowledge.settings import KnowledgeBaseConfig

QUOTED_WORDS = re.compile(r'^"[^\W_]+"( OR "[^\W_]+")*$')
FTS_SYNTAX = [
    '"',
    '""',
    '"refund',
    'refund"',
    "*",
    "refund*",
    "NEAR",
    "NEAR(refund rate)",
    "NEAR(refund rate, 2)",
    "AND",
    "refund AND",
    "OR OR",
    "NOT refund",
    "(refund",
    "refund)",
    "heading:refund",
    "{heading}: x",
    "^refund",
    "-refund",
    "+",
    "'",
    "refund' OR '1'='1",
    "\\",
    "\"'\"'",
    ":",
    "a:b:c",
    "\x00refund",
]

# FTS5 syntax characters and keywords mixed with words, as an attacker (or a confused model) would write them.
query_text = st.lists(
    st.one_of(
        st.sampled_from(FTS_SYNTAX + ["refund", "rate", "denominator", "Promoted", "é"]),
        st.text(max_size=12),
    ),
    max_size=8,
).map(" ".join)


@pytest.fixture
def base(docs, tmp_path):
    kb = KnowledgeBase("kb", KnowledgeBaseConfig(paths=[str(docs)]), home=tmp_path / "home")
    kb.refresh()
    yield kb
    kb.close()


@pytest.mark.parametrize("query", FTS_SYNTAX)
def test_fts_syntax_alone_is_an_empty_query_or_plain_words(base, query):
    try:
        result = base.search(query)
    except KnowledgeError as exc:
        assert exc.code == "KNOWLEDGE_QUERY_EMPTY"
        return
    assert QUOTED_WORDS.match(result.match)


def test_operators_are_searched_as_words_not_obeyed(base):
    assert base.search("refund NOT rate").match == '"refund" OR "not" OR "rate"'
    assert base.search(
        'NEAR("refund" "rate")'
    ).hits  # no syntax error; the words still find passages


@given(query=query_text)
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_query_gives_results_or_a_clear_empty_query_error(base, query):
    expression = match_expression(query)
    assert expression == "" or QUOTED_WORDS.match(expression)
    try:
        result = base.search(query, 3)
    except KnowledgeError as exc:
        assert exc.code == "KNOWLEDGE_QUERY_EMPTY" and expression == ""
        return
    assert len(result.hits) <= 3


@given(words=st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=60))
@settings(max_examples=200, deadline=None)
def test_the_match_expression_holds_only_quoted_words_and_is_bounded(words):
    expression = match_expression(" ".join(words))
    assert expression == "" or QUOTED_WORDS.match(expression)
    assert expression.count('"') <= 2 * 32
