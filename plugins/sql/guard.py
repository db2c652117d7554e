"""The read-only check: one statement, every name in it on the dialect's allow-list; and the SQL to run.

In order, each step refusing with ``SQL_READ_ONLY_REQUIRED`` (the reason names
what was refused) unless it says otherwise; nothing reaches the database:

0. The size (:mod:`.raw_text`): text longer than ``max_sql_bytes`` (UTF-8) is
   ``SQL_TOO_LONG``.
1. The raw text (:mod:`.raw_text`), scanned as the server lexes it
   (:mod:`.lexical`): a non-ASCII space or control character outside strings
   and quoted names is ``SQL_AMBIGUOUS_CHARACTER``, ``/*`` inside a comment
   ``SQL_AMBIGUOUS_COMMENT``, a MySQL/MariaDB string that would end elsewhere
   without backslash escapes ``SQL_AMBIGUOUS_BACKSLASH``; MySQL/MariaDB
   executable comments are refused outright; PostgreSQL ``U&"..."`` names are
   resolved as the server does.
2. The parse (:mod:`.statement`; sqlglot, the datasource's dialect from
   :mod:`.dialects`): exactly one statement whose root is an allowed statement
   kind (SELECT, set operations, VALUES, SHOW of a setting or a description,
   DESCRIBE, DuckDB PIVOT/UNPIVOT/SUMMARIZE). Text that does not parse is
   ``SQL_QUERY_FAILED`` with the parser's message and position; text nested
   deeper than the parser can follow is ``SQL_TOO_DEEPLY_NESTED``.
3. The tree (:mod:`.tree_check`): no write, DDL, session, transaction, COPY,
   ``SELECT ... INTO`` or locking node anywhere (a data-modifying CTE
   included); every function and table function on the allow-list
   (``allowlist.FUNCTIONS`` plus the datasource's ``allow_functions``), its
   name taken from the text as the server resolves it (quoting, case folding,
   schema qualification); system views only from ``allowlist.SYSTEM_VIEWS``;
   ``OPERATOR(...)`` only over ``pg_catalog``. A construct the check cannot
   name is refused (the node types judged by type are in :mod:`.constructs`).
4. The SQL to run is written from the checked tree (:mod:`.regenerate`), never
   the submitted text; one it cannot write back faithfully is
   ``SQL_NOT_REPRODUCIBLE``.

This module holds the entry point, :func:`check_read_only` and its
:class:`Verdict`, and reads an ``EXPLAIN`` prefix (never ``EXPLAIN ANALYZE``)
before checking the statement it explains; the refusals' wording is in
:mod:`.refusals`.

This is the first line; the connection itself is read only below it (each
engine module under ``engines/``), with the settings this reading relies on
pinned (PostgreSQL ``standard_conforming_strings``, MySQL/MariaDB ``sql_mode``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .lexical import Unresolvable, resolve_postgres_escapes
from .raw_text import MAX_SQL_BYTES, check_raw_text
from .refusals import refused, too_deeply_nested
from .regenerate import regenerate
from .statement import parse_one, root_kind
from .tree_check import Checker

_EXPLAIN = re.compile(
    r"^\s*explain\s+(?P<plan>query\s+plan\s+)?(?P<rest>.*)$", re.IGNORECASE | re.DOTALL
)
# EXPLAIN's own options: PostgreSQL ``(FORMAT JSON, COSTS OFF)``, MySQL/MariaDB ``FORMAT=JSON`` / ``EXTENDED``.
_EXPLAIN_OPTIONS = re.compile(
    r"^\s*(?:\((?P<list>[A-Za-z0-9_,\s]*)\)|format\s*=\s*\w+|extended|partitions)\s+", re.IGNORECASE
)
_EXPLAIN_EXECUTES = re.compile(r"^\s*(\(.*\banaly[sz]e\b|analy[sz]e\b)", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Verdict:
    """Why a statement was accepted (its kind) and the SQL to run (written from the checked tree) - refusals
    raise instead."""

    kind: str
    sql: str = ""


def check_read_only(
    sql: str, dialect: str, *, allow_functions: Iterable[str] = (), max_bytes: int = MAX_SQL_BYTES
) -> Verdict:
    """Accept ``sql`` if it is exactly one read-only statement in ``dialect``, and write the SQL to run from it.

    Raises SQL_READ_ONLY_REQUIRED, SQL_QUERY_FAILED when it does not parse, or one of the codes of the module
    docstring. ``allow_functions`` extends the dialect's function allow-list; ``max_bytes`` bounds the text."""
    if not sql or not sql.strip():
        raise refused("the SQL text is empty")
    check_raw_text(sql, dialect, max_bytes)
    try:
        return _check(sql, dialect, frozenset(allow_functions))
    except RecursionError:
        raise too_deeply_nested() from None


def _check(sql: str, dialect: str, extra: frozenset[str]) -> Verdict:
    explain = _EXPLAIN.match(sql)
    if explain:
        rest = explain["rest"]
        if _EXPLAIN_EXECUTES.match(rest):
            raise refused("EXPLAIN ANALYZE executes the statement")
        options = _EXPLAIN_OPTIONS.match(rest)
        prefix = "EXPLAIN " + ("QUERY PLAN " if explain["plan"] else "")
        if options:
            rest = rest[options.end() :]
            prefix += " ".join(options.group(0).replace(",", ", ").split()) + " "
        inner = _check(rest, dialect, extra)
        return Verdict("explain " + inner.kind, prefix + inner.sql)
    if dialect == "postgresql":
        try:
            sql = resolve_postgres_escapes(sql)
        except Unresolvable as exc:
            raise refused(f"{exc} cannot be resolved with certainty") from None
    text, root = parse_one(sql, dialect)
    kind = root_kind(root, dialect)
    Checker(text, dialect, extra).check(root)
    return Verdict(kind, regenerate(root, dialect, text))
