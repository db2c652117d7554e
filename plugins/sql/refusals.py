"""What the read-only check says when it refuses: the errors it raises and how a reason names a node.

:func:`refused` is ``SQL_READ_ONLY_REQUIRED`` with the reason and the hint every
refusal carries (``FUNCTION_HINT`` added for a function off the allow-list);
:func:`syntax_error` is ``SQL_QUERY_FAILED`` with the parser's message and
position; :func:`too_deeply_nested` is ``SQL_TOO_DEEPLY_NESTED``. :func:`label`
is the word a reason names a parsed node by (``INSERT``, ``SHOW``...).
"""

from __future__ import annotations

from typing import Any

from .errors import SQL_QUERY_FAILED, SQL_READ_ONLY_REQUIRED, SQL_TOO_DEEPLY_NESTED, SqlError

_HINT = (
    "Send exactly one read-only SELECT (WITH ... SELECT is fine) using the functions on this datasource's "
    "allow-list; writes, DDL, session settings, file access, functions that run SQL text and multiple "
    "statements are not allowed."
)
FUNCTION_HINT = (
    " If it is the database's own read-only function, call it schema-qualified as the server has it "
    "(PostgreSQL built-ins as pg_catalog.name), or ask the operator to add it to this datasource's "
    "allow_functions ('name' or 'schema.name')."
)


def refused(reason: str, hint: str = "") -> SqlError:
    return SqlError(
        SQL_READ_ONLY_REQUIRED, f"refused: {reason}", _HINT + hint, details={"reason": reason}
    )


def syntax_error(dialect: str, exc: Exception) -> SqlError:
    errors = getattr(exc, "errors", None) or [{}]
    first = errors[0] if isinstance(errors[0], dict) else {}
    line, col = first.get("line"), first.get("col")
    what = first.get("description") or str(exc).splitlines()[0][:200]
    where = f" at line {line}, column {col}" if line is not None else ""
    near = f" near {first['highlight']!r}" if first.get("highlight") else ""
    return SqlError(
        SQL_QUERY_FAILED,
        f"the SQL does not parse as {dialect} SQL: {what}{where}{near}; nothing was run",
        "Fix the syntax at that position and send the query again.",
        details={"reason": "syntax", "line": line, "col": col, "stage": "parser"},
    )


def too_deeply_nested() -> SqlError:
    return SqlError(
        SQL_TOO_DEEPLY_NESTED,
        "refused: the SQL is nested too deeply to be checked (calls, parentheses or subqueries inside each other, "
        "more levels than the parser follows); nothing was run",
        "Flatten it: compute inner steps in a WITH clause (a CTE) or a subquery in FROM, or write a long chain "
        "of calls as CASE or fewer nested calls.",
        details={"reason": "nesting"},
    )


def label(node: Any) -> str:
    """The word a reason names a parsed node by: its kind in capitals, a command's first word."""
    key = getattr(node, "key", "") or type(node).__name__
    if key == "command":
        word = str(getattr(node, "this", "") or "").split()[:1]
        return word[0].upper() if word else "this command"
    return key.upper().replace("_", " ")
