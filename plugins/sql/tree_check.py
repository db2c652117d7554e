"""The walk of one parsed statement: every node allowed, every function and table on the allow-list.

:class:`Checker` raises on the first node that is not allowed: a write, DDL,
session or locking node anywhere below the root (:mod:`.constructs`); a
function whose name, read from the text as the server resolves it (quoting,
case folding, schema qualification), is not on the dialect's allow-list
(:mod:`.allowlist` plus the datasource's ``allow_functions``); a system view
off ``allowlist.SYSTEM_VIEWS``; a DuckDB file read; ``OPERATOR(...)`` over
another schema than ``pg_catalog``; a MySQL/MariaDB variable assignment. A
construct it cannot name is refused. sqlglot is imported when a checker is made.
"""

from __future__ import annotations

import re
from typing import Any

from . import allowlist
from .constructs import SYNTAX, banned_node_types
from .lexical import MYSQL_FAMILY
from .refusals import FUNCTION_HINT, label, refused

_FILE_LIKE = re.compile(
    r"(/|\\|://|\.(csv|tsv|parquet|json|jsonl|ndjson|txt|gz|zst|xlsx|db|duckdb|sqlite)$)",
    re.IGNORECASE,
)
_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")
_PG_OPERATOR = re.compile(r'^\s*(?:(?:pg_catalog|"pg_catalog")\s*\.\s*)?[-+*/<>=~!@#%^&|`?]+\s*$')
_QUOTES = {'"': '"', "`": "`", "[": "]"}


class Checker:
    """Walks one parsed statement; raises on the first node that is not allowed."""

    def __init__(self, text: str, dialect: str, extra: frozenset[str]) -> None:
        from sqlglot import exp

        self.exp, self.text, self.dialect = exp, text, dialect
        self.functions = allowlist.FUNCTIONS.get(dialect, frozenset())
        if extra:
            self.functions = self.functions | {e for e in extra if "." not in e}
        self.qualified = {e for e in extra if "." in e}
        self.banned = banned_node_types(exp)
        self.operators = (exp.Binary, exp.Unary, exp.Predicate, exp.Connector)

    def check(self, root: Any) -> None:
        exp = self.exp
        for node in root.walk():
            if isinstance(node, self.banned) and node is not root:
                raise refused(f"{label(node)} is not allowed in a read-only query")
            if isinstance(node, (exp.Into, exp.Lock)):
                raise refused(
                    "SELECT ... INTO writes a table or file"
                    if isinstance(node, exp.Into)
                    else "locking clauses (FOR UPDATE/SHARE) are not allowed"
                )
            if isinstance(node, exp.Func):
                self._function(node)
            elif isinstance(node, exp.Table):
                self._table(node)
            elif isinstance(node, exp.Operator):
                if self.dialect != "postgresql" or not _PG_OPERATOR.match(
                    str(node.args.get("operator") or "")
                ):
                    raise refused(
                        f"OPERATOR({node.args.get('operator')}) is only allowed over pg_catalog"
                    )
            elif isinstance(node, exp.PropertyEQ) and self.dialect in MYSQL_FAMILY:
                raise refused("assigning a user variable (:=) changes the session")

    # --- names ------------------------------------------------------------

    def _ident(self, node: Any) -> str:
        """An identifier as the server resolves it: quoted exact, unquoted folded (PostgreSQL) / case-insensitive."""
        if isinstance(node, self.exp.Identifier):
            name, quoted = str(node.this), bool(node.args.get("quoted"))
        else:
            name, quoted = str(getattr(node, "name", node) or ""), False
        return name if (quoted and self.dialect == "postgresql") else name.lower()

    def _called_name(self, node: Any) -> str:
        """The function's name from the text itself (sqlglot may rename what it knows)."""
        exp = self.exp
        start, end = node.meta.get("start"), node.meta.get("end")
        if start is None or end is None:
            if isinstance(node, exp.Anonymous):
                return self._ident(
                    node.this if isinstance(node.this, exp.Identifier) else str(node.this)
                )
            if type(node).__name__ in SYNTAX or isinstance(node, self.operators):
                return ""  # an operator or keyword construct: no function name the server looks up
            raise refused(f"the construct {type(node).__name__} is not on the allow-list")
        raw = self.text[start : end + 1]
        if raw[:1] in _QUOTES:
            close = _QUOTES[raw[0]]
            if len(raw) < 2 or raw[-1] != close:
                raise refused(f"the function name {raw!r} cannot be resolved with certainty")
            name = raw[1:-1].replace(close * 2, close)
            return name if self.dialect == "postgresql" else name.lower()
        if not _PLAIN_NAME.match(raw):
            raise refused(f"the function name {raw!r} cannot be resolved with certainty")
        return raw.lower()

    def _qualifier(self, node: Any) -> list[str] | None:
        """Schema parts a call is qualified with ([] for none); None for a method call on a value (DuckDB)."""
        exp = self.exp
        parent = node.parent
        if isinstance(parent, exp.Dot) and parent.expression is node:
            parts: list[str] = []
            for part in _dot_parts(parent.this, exp):
                if not isinstance(part, exp.Identifier):
                    return None
                parts.append(self._ident(part))
            return parts
        if isinstance(parent, exp.Table) and parent.this is node:
            return [self._ident(parent.args[k]) for k in ("catalog", "db") if parent.args.get(k)]
        return []

    # --- checks -----------------------------------------------------------

    def _function(self, node: Any) -> None:
        name = self._called_name(node)
        if not name:
            return
        qualifier = self._qualifier(node)
        if qualifier is None:
            if self.dialect != "duckdb":
                raise refused(
                    f"function {name}() called on a value cannot be resolved with certainty"
                )
            qualifier = []
        if name in allowlist.NEVER:
            raise refused(
                f"function {name}() is never allowed: it runs SQL text, reads files or reaches "
                "other servers"
            )
        if qualifier:
            full = ".".join(qualifier + [name])
            if full in self.qualified:
                return
            if len(qualifier) != 1 or qualifier[0] not in allowlist.FUNCTION_SCHEMAS.get(
                self.dialect, ()
            ):
                raise refused(
                    f"function {full}() is not on the {self.dialect} allow-list", FUNCTION_HINT
                )
        if name not in self.functions:
            raise refused(
                f"function {name}() is not on the {self.dialect} allow-list of read-only functions",
                FUNCTION_HINT,
            )

    def _table(self, node: Any) -> None:
        exp = self.exp
        if not isinstance(node.this, exp.Identifier):
            return  # a table function: checked as a function
        name = self._ident(node.this)
        schema = self._ident(node.args["db"]) if node.args.get("db") else ""
        if self.dialect == "duckdb" and _FILE_LIKE.search(node.name or ""):
            raise refused(f"reading the file {node.name!r} is not allowed")
        system = allowlist.SYSTEM_SCHEMAS.get(self.dialect, frozenset())
        if self.dialect in MYSQL_FAMILY:
            name, schema = name.lower(), schema.lower()
        prefixes = allowlist.SYSTEM_PREFIXES.get(self.dialect, ())
        unqualified = not schema or (
            self.dialect in ("sqlite", "duckdb") and schema in ("main", "temp")
        )
        is_system = schema in system or (
            unqualified and bool(prefixes) and name.startswith(prefixes)
        )
        if is_system and (schema, name) not in allowlist.SYSTEM_VIEWS.get(
            self.dialect, frozenset()
        ):
            if not schema:
                raise refused(
                    f"the unqualified name {name} resolves to a system view first ({self.dialect} looks "
                    "in its own catalog before your schemas), and that view is not on the allow-list",
                    " If it is your own table or view, schema-qualify it (myschema." + name + ").",
                )
            raise refused(
                f"the system view {schema}.{name} is not on the {self.dialect} allow-list"
            )


def _dot_parts(node: Any, exp: Any) -> list[Any]:
    if isinstance(node, exp.Dot):
        return _dot_parts(node.this, exp) + _dot_parts(node.expression, exp)
    if isinstance(node, exp.Column):
        return [
            p
            for p in (node.args.get(k) for k in ("catalog", "db", "table", "this"))
            if p is not None
        ]
    return [node]
