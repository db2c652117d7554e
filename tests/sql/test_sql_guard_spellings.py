"""Property test (hypothesis): every spelling of a refused function's name is refused, naming the function.

Spellings are the ones each server resolves to the same function: PostgreSQL
``U&"..."`` escapes (4- and 6-digit, custom ``UESCAPE``), quoting, case
(folded when unquoted), ``pg_catalog`` qualification (itself quoted, escaped
or upper case); MySQL/MariaDB backticks and case; SQLite ``"..."``, ``[...]``
and backticks; and comments or line breaks between every token.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from assay.plugins.sql.errors import SQL_READ_ONLY_REQUIRED, SqlError
from assay.plugins.sql.guard import check_read_only

REFUSED = {
    "postgresql": [
        "pg_read_file",
        "pg_ls_dir",
        "pg_terminate_backend",
        "pg_advisory_lock",
        "pg_try_advisory_lock_shared",
        "ts_stat",
        "ts_rewrite",
        "query_to_xml",
        "txid_current",
        "pg_stat_reset",
        "dblink_exec",
        "pg_logical_emit_message",
        "set_config",
        "lo_import",
        "brin_summarize_new_values",
    ],
    "mariadb": [
        "load_file",
        "get_lock",
        "release_all_locks",
        "benchmark",
        "master_pos_wait",
        "last_insert_id",
        "sys_exec",
        "setval",
    ],
    "sqlite": ["load_extension", "readfile", "writefile", "fts3_tokenizer", "edit"],
    "duckdb": [
        "read_csv",
        "read_text",
        "query",
        "query_table",
        "getenv",
        "glob",
        "json_execute_serialized_sql",
    ],
}
GAPS = st.sampled_from(["", " ", "  ", "\n", "/* c */", "/**/", "-- c\n", " /* x */ ", "\t"])


def _case(draw, name: str) -> str:
    flips = draw(st.lists(st.booleans(), min_size=len(name), max_size=len(name)))
    return "".join(c.upper() if f else c for c, f in zip(name, flips))


def _unicode_escaped(draw, name: str) -> str:
    escape = draw(st.sampled_from(["\\", "!", "#", "~"]))
    chars = []
    for c in name:
        form = draw(st.sampled_from(["plain", "four", "six"]))
        chars.append(
            c
            if form == "plain"
            else f"{escape}{ord(c):04X}"
            if form == "four"
            else f"{escape}+{ord(c):06X}"
        )
    body = "".join(chars)
    tail = "" if escape == "\\" else f"{draw(GAPS) or ' '}UESCAPE{draw(GAPS) or ' '}'{escape}'"
    return f'{draw(st.sampled_from(["U", "u"]))}&"{body}"{tail}'


@st.composite
def pg_spelling(draw) -> tuple[str, str]:
    name = draw(st.sampled_from(REFUSED["postgresql"]))
    form = draw(st.sampled_from(["plain", "case", "quoted", "escaped"]))
    spelled = {
        "plain": lambda: name,
        "case": lambda: _case(draw, name),
        "quoted": lambda: f'"{name}"',
        "escaped": lambda: _unicode_escaped(draw, name),
    }[form]()
    schema = draw(st.sampled_from([None, "plain", "upper", "quoted", "escaped"]))
    if schema is not None:
        prefix = {
            "plain": "pg_catalog",
            "upper": "PG_CATALOG",
            "quoted": '"pg_catalog"',
            "escaped": _unicode_escaped(draw, "pg_catalog") if schema == "escaped" else "",
        }[schema]
        spelled = f"{prefix}{draw(GAPS)}.{draw(GAPS)}{spelled}"
    return name, spelled


@st.composite
def other_spelling(draw, dialect: str) -> tuple[str, str]:
    name = draw(st.sampled_from(REFUSED[dialect]))
    quotes = {"mariadb": ["", "`"], "sqlite": ["", '"', "[", "`"], "duckdb": ["", '"']}[dialect]
    quote = draw(st.sampled_from(quotes))
    body = _case(draw, name)
    spelled = body if not quote else (f"[{body}]" if quote == "[" else f"{quote}{body}{quote}")
    if draw(st.booleans()):
        schema = {"mariadb": "test", "sqlite": "main", "duckdb": "main"}[dialect]
        spelled = f"{schema}{draw(GAPS)}.{draw(GAPS)}{spelled}"
    return name, spelled


def _assert_refused(dialect: str, name: str, sql: str) -> None:
    with pytest.raises(SqlError) as info:
        check_read_only(sql, dialect)
    assert info.value.code == SQL_READ_ONLY_REQUIRED, (sql, info.value.message)
    assert name in info.value.message.lower() or "cannot be resolved" in info.value.message, (
        sql,
        info.value.message,
    )


def _statement(draw, spelled: str) -> str:
    gap = draw(GAPS)
    where = draw(st.sampled_from(["select", "from", "nested", "where"]))
    call = f"{spelled}{gap}('x')"
    return {
        "select": f"SELECT {call}",
        "from": f"SELECT * FROM {call} AS t",
        "nested": f"SELECT upper(coalesce({call}, 'y'))",
        "where": f"SELECT 1 WHERE {call} IS NOT NULL",
    }[where]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_postgres_spelling_of_a_refused_function_is_refused(data):
    name, spelled = data.draw(pg_spelling())
    _assert_refused("postgresql", name, _statement(data.draw, spelled))


@pytest.mark.parametrize("dialect", ["mariadb", "sqlite", "duckdb"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_spelling_of_a_refused_function_is_refused(dialect, data):
    name, spelled = data.draw(other_spelling(dialect))
    _assert_refused(dialect, name, _statement(data.draw, spelled))
