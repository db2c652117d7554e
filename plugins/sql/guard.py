"""The read-only check: one statement, every name in it on the dialect's allow-list; and the SQL to run.

In order, each step refusing with ``SQL_READ_ONLY_REQUIRED`` (the reason names
what was refused) unless it says otherwise; nothing reaches the database:

0. The size: text longer than ``max_sql_bytes`` (UTF-8) is ``SQL_TOO_LONG``.
1. The raw text (``lexical``), scanned as the server lexes it: a non-ASCII
   space or control character outside strings and quoted names is
   ``SQL_AMBIGUOUS_CHARACTER``, ``/*`` inside a comment
   ``SQL_AMBIGUOUS_COMMENT``, a MySQL/MariaDB string that would end elsewhere
   without backslash escapes ``SQL_AMBIGUOUS_BACKSLASH``; MySQL/MariaDB
   executable comments are refused outright; PostgreSQL ``U&"..."`` names are
   resolved as the server does.
2. The parse (sqlglot, the datasource's dialect from :mod:`.dialects`):
   exactly one statement whose root is an allowed statement kind (SELECT, set
   operations, VALUES, SHOW of a setting or a description, DESCRIBE, DuckDB
   PIVOT/UNPIVOT/SUMMARIZE). Text that does not parse is ``SQL_QUERY_FAILED``
   with the parser's message and position; text nested deeper than the parser
   can follow is ``SQL_TOO_DEEPLY_NESTED``.
3. The tree: no write, DDL, session, transaction, COPY, ``SELECT ... INTO``
   or locking node anywhere (a data-modifying CTE included); every function
   and table function on the allow-list (``allowlist.FUNCTIONS`` plus the
   datasource's ``allow_functions``), its name taken from the text as the
   server resolves it (quoting, case folding, schema qualification); system
   views only from ``allowlist.SYSTEM_VIEWS``; ``OPERATOR(...)`` only over
   ``pg_catalog``. A construct the check cannot name is refused.
4. The SQL to run is written from the checked tree (:mod:`.regenerate`), never
   the submitted text; one it cannot write back faithfully is
   ``SQL_NOT_REPRODUCIBLE``.

This is the first line; the connection itself is read only below it (each
engine module under ``engines/``), with the settings this reading relies on
pinned (PostgreSQL ``standard_conforming_strings``, MySQL/MariaDB ``sql_mode``).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from . import allowlist
from .errors import (
    SQL_AMBIGUOUS_BACKSLASH,
    SQL_AMBIGUOUS_CHARACTER,
    SQL_AMBIGUOUS_COMMENT,
    SQL_QUERY_FAILED,
    SQL_READ_ONLY_REQUIRED,
    SQL_TOO_DEEPLY_NESTED,
    SQL_TOO_LONG,
    SqlError,
)
from .lexical import Unresolvable, mysql_backslash_ambiguity, resolve_postgres_escapes, two_readings
from .regenerate import regenerate

MAX_SQL_BYTES = 1 << 20  # the default of the max_sql_bytes setting
_MYSQL = ("mysql", "mariadb")

_FILE_LIKE = re.compile(
    r"(/|\\|://|\.(csv|tsv|parquet|json|jsonl|ndjson|txt|gz|zst|xlsx|db|duckdb|sqlite)$)",
    re.IGNORECASE,
)
_EXPLAIN = re.compile(
    r"^\s*explain\s+(?P<plan>query\s+plan\s+)?(?P<rest>.*)$", re.IGNORECASE | re.DOTALL
)
# EXPLAIN's own options: PostgreSQL ``(FORMAT JSON, COSTS OFF)``, MySQL/MariaDB ``FORMAT=JSON`` / ``EXTENDED``.
_EXPLAIN_OPTIONS = re.compile(
    r"^\s*(?:\((?P<list>[A-Za-z0-9_,\s]*)\)|format\s*=\s*\w+|extended|partitions)\s+", re.IGNORECASE
)
_EXPLAIN_EXECUTES = re.compile(r"^\s*(\(.*\banaly[sz]e\b|analy[sz]e\b)", re.IGNORECASE | re.DOTALL)
_VALUES_FIRST = re.compile(r"^\s*values\b", re.IGNORECASE)
_LEADING = re.compile(
    r"^(?:\s+|--[^\n]*(?:\n|$)|#[^\n]*(?:\n|$)|/\*.*?\*/|\()*(?P<word>[A-Za-z_]+)", re.DOTALL
)
_FILE_WRITE = re.compile(r"\binto\s+(outfile|dumpfile)\b", re.IGNORECASE)
_NEXT_VALUE = re.compile(r"\bnext\s+value\s+for\b", re.IGNORECASE)
# Statement words that never start a read-only query: text starting with one is refused as such even when
# the parser cannot read the rest (a typo such as SELEC stays a syntax error).
_NOT_A_QUERY = frozenset(
    [
        "INSERT",
        "UPDATE",
        "DELETE",
        "MERGE",
        "REPLACE",
        "UPSERT",
        "CREATE",
        "DROP",
        "ALTER",
        "TRUNCATE",
        "RENAME",
        "GRANT",
        "REVOKE",
        "COPY",
        "LOAD",
        "UNLOAD",
        "IMPORT",
        "EXPORT",
        "INSTALL",
        "UNINSTALL",
        "ATTACH",
        "DETACH",
        "PRAGMA",
        "VACUUM",
        "ANALYZE",
        "ANALYSE",
        "REINDEX",
        "CLUSTER",
        "CHECKPOINT",
        "SET",
        "RESET",
        "USE",
        "BEGIN",
        "START",
        "COMMIT",
        "ROLLBACK",
        "SAVEPOINT",
        "RELEASE",
        "LOCK",
        "UNLOCK",
        "CALL",
        "DO",
        "EXECUTE",
        "PREPARE",
        "DEALLOCATE",
        "DECLARE",
        "FETCH",
        "MOVE",
        "CLOSE",
        "LISTEN",
        "NOTIFY",
        "UNLISTEN",
        "DISCARD",
        "KILL",
        "SHUTDOWN",
        "FLUSH",
        "HANDLER",
        "PURGE",
        "RESTART",
        "OPTIMIZE",
        "REPAIR",
        "CHECKSUM",
        "BACKUP",
        "RESTORE",
        "CHANGE",
        "SECURITY",
        "COMMENT",
        "REFRESH",
        "FORCE",
    ]
)
_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")
_PG_SHOW = re.compile(
    r"^\s*(all|[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?)\s*$", re.IGNORECASE
)
_PG_OPERATOR = re.compile(r'^\s*(?:(?:pg_catalog|"pg_catalog")\s*\.\s*)?[-+*/<>=~!@#%^&|`?]+\s*$')
_QUOTES = {'"': '"', "`": "`", "[": "]"}

# Built-in constructs sqlglot builds from syntax or keywords (CAST, CASE, ->, ||, EXTRACT, CURRENT_DATE...),
# not from a function name the server looks up. Only these may appear without a name in the text.
_SYNTAX = frozenset(
    [
        "And",
        "Or",
        "Not",
        "Xor",
        "Case",
        "If",
        "Cast",
        "TryCast",
        "Extract",
        "Exists",
        "Any",
        "All",
        "Array",
        "Struct",
        "Unnest",
        "Explode",
        "Bracket",
        "Paren",
        "GroupConcat",
        "JSONExtract",
        "JSONExtractScalar",
        "JSONBExtract",
        "JSONBExtractScalar",
        "JSONBContains",
        "JSONBContainedBy",
        "JSONBExists",
        "JSONFormat",
        "JSONObject",
        "JSONObjectAgg",
        "JSONArrayContains",
        "JSONValue",
        "JSONTable",
        "JSONColumnDef",
        "Substring",
        "Trim",
        "StrPosition",
        "Overlay",
        "Ceil",
        "Floor",
        "Chr",
        "Initcap",
        "ArgMax",
        "ArgMin",
        "MaxBy",
        "MinBy",
        "TsOrDsToTimestamp",
        "TsOrDsToDate",
        "TimeStrToTime",
        "StrToTime",
        "CurrentDate",
        "CurrentTime",
        "CurrentTimestamp",
        "CurrentUser",
        "CurrentSchema",
        "Localtime",
        "Localtimestamp",
        "Coalesce",
        "Nullif",
        "Concat",
        "ConcatWs",
        "Lambda",
        "Map",
        "VarMap",
        "ToMap",
        "StructExtract",
        "Quantile",
        "ApproxQuantile",
        "Min",
        "Max",
        "Count",
        "Sum",
        "Avg",
        "ArrayAgg",
        "Unicode",
        "Normalize",
        "Convert",
        "Decode",
        "Encode",
        "Collate",
        "Interval",
        "Anonymous",
        "MatchAgainst",
        "XMLElement",
        "Listagg",
        "ArrayConcat",
        "ArrayContains",
        "ArrayFilter",
        "Transform",
        "Levenshtein",
        "DateAdd",
        "DateSub",
        "DateDiff",
        "DateTrunc",
        "TimestampTrunc",
        "TimestampAdd",
        "TimestampSub",
        "TimestampDiff",
        "DatetimeAdd",
        "DatetimeSub",
        "TimeAdd",
        "TimeSub",
        "UnixToTime",
        "TimeToUnix",
        "TimeToStr",
        "StrToDate",
        "Date",
        "DateFromParts",
        "Length",
        "Lower",
        "Upper",
        "Abs",
        "Round",
        "Pow",
        "Sqrt",
        "Ln",
        "Log",
        "Exp",
        "Mod",
        "Sign",
        "Div",
        "SafeDivide",
        "IntDiv",
        "ToChar",
        "Stddev",
        "StddevPop",
        "StddevSamp",
        "Variance",
        "VariancePop",
        "Corr",
        "CovarPop",
        "CovarSamp",
        "PercentileCont",
        "PercentileDisc",
        "WithinGroup",
        "Filter",
        "Window",
        "Over",
        "RowNumber",
        "Rank",
        "DenseRank",
        "PercentRank",
        "CumeDist",
        "Ntile",
        "Lag",
        "Lead",
        "FirstValue",
        "LastValue",
        "NthValue",
        "RegexpLike",
        "RegexpExtract",
        "RegexpReplace",
        "RegexpSplit",
        "RegexpILike",
        "Left",
        "Right",
        "Repeat",
        "Replace",
        "Reverse",
        "Pad",
        "GenerateSeries",
        "ExplodingGenerateSeries",
        "Greatest",
        "Least",
        "Hex",
        "Unhex",
        "MD5",
        "SHA",
        "SHA2",
        "Split",
        "SplitPart",
        "Format",
        "ParseJSON",
        "ToJson",
        "JSONArray",
        "JSONArrayAgg",
        "JSONBObjectAgg",
        "ObjectAgg",
        "Array",
        "ArraySize",
        "ArrayToString",
        "StringToArray",
        "ArrayJoin",
        "Flatten",
        "IsNan",
        "IsInf",
        "Cbrt",
        "Degrees",
        "Radians",
        "Pi",
        "Rand",
        "Random",
        "Trunc",
        "Truncate",
        "SessionUser",
        "XMLParse",
    ]
)


@dataclass(frozen=True)
class Verdict:
    """Why a statement was accepted (its kind) and the SQL to run (written from the checked tree) - refusals
    raise instead."""

    kind: str
    sql: str = ""


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


_AMBIGUOUS = {
    "character": (
        SQL_AMBIGUOUS_CHARACTER,
        "Write SQL with ASCII spaces, tabs and newlines only; other characters "
        "are fine inside string literals and quoted names.",
    ),
    "comment": (
        SQL_AMBIGUOUS_COMMENT,
        "Do not write /* inside a /* comment */ (servers disagree on whether it "
        "nests); remove the comment, or close it first.",
    ),
}


def _check_text(sql: str, dialect: str, max_bytes: int) -> None:
    """Step 0 and the raw-text part of step 1 (see the module docstring)."""
    if len(sql) > max_bytes or (
        len(sql) * 4 > max_bytes and len(sql.encode("utf-8", "surrogatepass")) > max_bytes
    ):
        raise SqlError(
            SQL_TOO_LONG,
            f"refused: the SQL text is longer than the {max_bytes:,}-byte limit (max_sql_bytes); nothing was run",
            "Send a shorter query: filter with a join or a subquery instead of a long literal IN list, and "
            "aggregate in the database.",
            details={"reason": "length", "limit_bytes": max_bytes},
        )
    found = two_readings(sql, dialect)
    if found is not None and found.kind == "executable_comment":
        raise refused(
            f"executable comment {found.what!r}: MySQL/MariaDB run the inside of /*! */, /*M! */ "
            "and optimizer-hint comments"
        )
    if found is not None:
        code, hint = _AMBIGUOUS[found.kind]
        raise SqlError(
            code,
            f"refused: {found.what} at position {found.position} could be read two ways "
            "(the server and the check could see different statements); nothing was run",
            hint,
            details={"reason": found.what, "position": found.position},
        )
    if dialect in _MYSQL and mysql_backslash_ambiguity(sql):
        raise SqlError(
            SQL_AMBIGUOUS_BACKSLASH,
            "refused: a backslash in a string or comment reads differently with and without NO_BACKSLASH_ESCAPES "
            "(the string would end in another place); nothing was run",
            "Write a quote inside a string as '' instead of \\', and a backslash before a quote not at all.",
            details={"reason": "backslash"},
        )


def check_read_only(
    sql: str, dialect: str, *, allow_functions: Iterable[str] = (), max_bytes: int = MAX_SQL_BYTES
) -> Verdict:
    """Accept ``sql`` if it is exactly one read-only statement in ``dialect``, and write the SQL to run from it.

    Raises SQL_READ_ONLY_REQUIRED, SQL_QUERY_FAILED when it does not parse, or one of the codes of the module
    docstring. ``allow_functions`` extends the dialect's function allow-list; ``max_bytes`` bounds the text."""
    if not sql or not sql.strip():
        raise refused("the SQL text is empty")
    _check_text(sql, dialect, max_bytes)
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
    text, root = _parse_one(sql, dialect)
    kind = _root_kind(root, dialect)
    _Checker(text, dialect, extra).check(root)
    return Verdict(kind, regenerate(root, dialect, text))


def _parse_one(sql: str, dialect: str) -> tuple[str, Any]:
    import sqlglot
    from sqlglot.errors import SqlglotError

    from .dialects import DIALECTS

    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    read = DIALECTS[dialect]
    try:
        statements = [s for s in sqlglot.parse(sql, read=read) if s is not None]
    except SqlglotError as exc:
        if dialect in _MYSQL and _VALUES_FIRST.match(sql):
            # sqlglot reads MariaDB's bare VALUES only inside a FROM; the text itself is unchanged.
            wrapped = f"SELECT * FROM ({sql}\n) AS assay_values"
            try:
                return wrapped, sqlglot.parse_one(wrapped, read=read)
            except SqlglotError:
                pass
        first = _LEADING.match(sql)
        if first and first["word"].upper() in _NOT_A_QUERY:
            raise refused(f"{first['word'].upper()} is not a read-only query") from None
        if _FILE_WRITE.search(sql):
            raise refused("INTO OUTFILE/DUMPFILE writes a file") from None
        if dialect in _MYSQL and _NEXT_VALUE.search(sql):
            raise refused("NEXT VALUE FOR advances a sequence: it is a write") from None
        raise syntax_error(dialect, exc) from None
    except RecursionError:
        raise
    except Exception as exc:  # noqa: BLE001 - a parser crash is a refusal, never a pass
        raise refused(f"the text could not be parsed ({type(exc).__name__})") from None
    if not statements:
        raise refused("the SQL text holds no statement")
    if len(statements) > 1:
        raise refused(f"{len(statements)} statements were sent; send exactly one")
    return sql, statements[0]


def _root_kind(root: Any, dialect: str) -> str:
    from sqlglot import exp

    if isinstance(root, (exp.Select, exp.SetOperation, exp.Values, exp.Subquery, exp.Describe)):
        return _label(root)
    if isinstance(root, exp.Show):
        if dialect == "duckdb":
            return "SHOW"
        shown = ("FULL " if root.args.get("full") else "") + str(root.name or "").upper()
        if dialect in _MYSQL and shown in allowlist.SHOW_KINDS:
            return "SHOW"
        raise refused(f"SHOW {shown} is not on the allow-list of SHOW statements")
    if (
        dialect == "postgresql"
        and isinstance(root, exp.Command)
        and str(root.this).upper() == "SHOW"
    ):
        setting = root.expression.name if isinstance(root.expression, exp.Literal) else ""
        if _PG_SHOW.match(setting):
            return "SHOW"
        raise refused(f"SHOW {setting!r} is not a setting name")
    if dialect == "duckdb" and isinstance(root, (exp.Pivot, exp.Summarize)):
        return _label(root)
    raise refused(f"{_label(root)} is not a read-only query")


class _Checker:
    """Walks one parsed statement; raises on the first node that is not allowed."""

    def __init__(self, text: str, dialect: str, extra: frozenset[str]) -> None:
        from sqlglot import exp

        self.exp, self.text, self.dialect = exp, text, dialect
        self.functions = allowlist.FUNCTIONS.get(dialect, frozenset())
        if extra:
            self.functions = self.functions | {e for e in extra if "." not in e}
        self.qualified = {e for e in extra if "." in e}
        self.banned = _banned_node_types(exp)
        self.operators = (exp.Binary, exp.Unary, exp.Predicate, exp.Connector)

    def check(self, root: Any) -> None:
        exp = self.exp
        for node in root.walk():
            if isinstance(node, self.banned) and node is not root:
                raise refused(f"{_label(node)} is not allowed in a read-only query")
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
            elif isinstance(node, exp.PropertyEQ) and self.dialect in _MYSQL:
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
            if type(node).__name__ in _SYNTAX or isinstance(node, self.operators):
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
        if self.dialect in _MYSQL:
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


@functools.cache
def _banned_node_types(exp: Any) -> tuple[type, ...]:
    names = (
        "Insert",
        "Update",
        "Delete",
        "Merge",
        "Create",
        "Drop",
        "Alter",
        "AlterTable",
        "TruncateTable",
        "Command",
        "Copy",
        "Pragma",
        "Into",
        "Set",
        "Use",
        "Transaction",
        "Commit",
        "Rollback",
        "Grant",
        "Revoke",
        "LoadData",
        "Attach",
        "Detach",
        "Install",
        "Export",
        "Cache",
        "Uncache",
        "Refresh",
        "Lock",
        "Analyze",
        "Comment",
        "Kill",
        "Call",
        "Declare",
        "Execute",
        "Prepare",
        "Show",
        "Describe",
    )
    return tuple(getattr(exp, n) for n in names if isinstance(getattr(exp, n, None), type))


def _label(node: Any) -> str:
    key = getattr(node, "key", "") or type(node).__name__
    if key == "command":
        word = str(getattr(node, "this", "") or "").split()[:1]
        return word[0].upper() if word else "this command"
    return key.upper().replace("_", " ")
