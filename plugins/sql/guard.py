"""The read-only check: one statement, every name in it on the dialect's allow-list.

In order, each step refusing with ``SQL_READ_ONLY_REQUIRED`` (the reason names
what was refused), except text that does not parse, which is
``SQL_QUERY_FAILED`` with the parser's message and position:

1. The raw text (``lexical``): MySQL/MariaDB executable comments are refused
   outright; PostgreSQL ``U&"..."`` names are resolved as the server does.
2. The parse (sqlglot, the datasource's dialect): exactly one statement whose
   root is an allowed statement kind (SELECT, set operations, VALUES, SHOW of
   a setting or a description, DESCRIBE, DuckDB PIVOT/UNPIVOT/SUMMARIZE).
3. The tree: no write, DDL, session, transaction, COPY, ``SELECT ... INTO``
   or locking node anywhere (a data-modifying CTE included); every function
   and table function on the allow-list (``allowlist.FUNCTIONS`` plus the
   datasource's ``allow_functions``), its name taken from the text as the
   server resolves it (quoting, case folding, schema qualification); system
   views only from ``allowlist.SYSTEM_VIEWS``; ``OPERATOR(...)`` only over
   ``pg_catalog``. A construct the check cannot name is refused.

This is the first line; the connection itself is read only below it (each
engine module under ``engines/``).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from . import allowlist
from .errors import SQL_QUERY_FAILED, SQL_READ_ONLY_REQUIRED, SqlError
from .lexical import Unresolvable, mysql_backslash_ambiguity, mysql_executable_comment, resolve_postgres_escapes

# sqlglot dialect names per assay dialect
SQLGLOT_DIALECT = {"sqlite": "sqlite", "postgresql": "postgres", "mysql": "mysql", "mariadb": "mysql", "duckdb": "duckdb"}
_MYSQL = ("mysql", "mariadb")

_FILE_LIKE = re.compile(r"(/|\\|://|\.(csv|tsv|parquet|json|jsonl|ndjson|txt|gz|zst|xlsx|db|duckdb|sqlite)$)", re.IGNORECASE)
_EXPLAIN = re.compile(r"^\s*explain\s+(?:query\s+plan\s+)?(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)
# EXPLAIN's own options: PostgreSQL ``(FORMAT JSON, COSTS OFF)``, MySQL/MariaDB ``FORMAT=JSON`` / ``EXTENDED``.
_EXPLAIN_OPTIONS = re.compile(r"^\s*(?:\((?P<list>[A-Za-z0-9_,\s]*)\)|format\s*=\s*\w+|extended|partitions)\s+",
                              re.IGNORECASE)
_EXPLAIN_EXECUTES = re.compile(r"^\s*(\(.*\banaly[sz]e\b|analy[sz]e\b)", re.IGNORECASE | re.DOTALL)
_VALUES_FIRST = re.compile(r"^\s*values\b", re.IGNORECASE)
_LEADING = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|#[^\n]*(?:\n|$)|/\*.*?\*/|\()*(?P<word>[A-Za-z_]+)", re.DOTALL)
_FILE_WRITE = re.compile(r"\binto\s+(outfile|dumpfile)\b", re.IGNORECASE)
# Statement words that never start a read-only query: text starting with one is refused as such even when
# the parser cannot read the rest (a typo such as SELEC stays a syntax error).
_NOT_A_QUERY = frozenset(["INSERT", "UPDATE", "DELETE", "MERGE", "REPLACE", "UPSERT", "CREATE", "DROP", "ALTER", "TRUNCATE", "RENAME", "GRANT", "REVOKE", "COPY", "LOAD", "UNLOAD", "IMPORT", "EXPORT", "INSTALL", "UNINSTALL", "ATTACH", "DETACH", "PRAGMA", "VACUUM", "ANALYZE", "ANALYSE", "REINDEX", "CLUSTER", "CHECKPOINT", "SET", "RESET", "USE", "BEGIN", "START", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "LOCK", "UNLOCK", "CALL", "DO", "EXECUTE", "PREPARE", "DEALLOCATE", "DECLARE", "FETCH", "MOVE", "CLOSE", "LISTEN", "NOTIFY", "UNLISTEN", "DISCARD", "KILL", "SHUTDOWN", "FLUSH", "HANDLER", "PURGE", "RESTART", "OPTIMIZE", "REPAIR", "CHECKSUM", "BACKUP", "RESTORE", "CHANGE", "SECURITY", "COMMENT", "REFRESH", "FORCE"])
_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")
_PG_SHOW = re.compile(r"^\s*(all|[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?)\s*$", re.IGNORECASE)
_PG_OPERATOR = re.compile(r'^\s*(?:(?:pg_catalog|"pg_catalog")\s*\.\s*)?[-+*/<>=~!@#%^&|`?]+\s*$')
_QUOTES = {'"': '"', "`": "`", "[": "]"}

# Built-in constructs sqlglot builds from syntax or keywords (CAST, CASE, ->, ||, EXTRACT, CURRENT_DATE...),
# not from a function name the server looks up. Only these may appear without a name in the text.
_SYNTAX = frozenset(["And", "Or", "Not", "Xor", "Case", "If", "Cast", "TryCast", "Extract", "Exists", "Any", "All", "Array", "Struct", "Unnest", "Explode", "Bracket", "Paren", "GroupConcat", "JSONExtract", "JSONExtractScalar", "JSONBExtract", "JSONBExtractScalar", "JSONBContains", "JSONBContainedBy", "JSONBExists", "JSONFormat", "JSONObject", "JSONObjectAgg", "JSONArrayContains", "JSONValue", "JSONTable", "JSONColumnDef", "Substring", "Trim", "StrPosition", "Overlay", "Ceil", "Floor", "Chr", "Initcap", "ArgMax", "ArgMin", "MaxBy", "MinBy", "TsOrDsToTimestamp", "TsOrDsToDate", "TimeStrToTime", "StrToTime", "CurrentDate", "CurrentTime", "CurrentTimestamp", "CurrentUser", "CurrentSchema", "Localtime", "Localtimestamp", "Coalesce", "Nullif", "Concat", "ConcatWs", "Lambda", "Map", "VarMap", "ToMap", "StructExtract", "Quantile", "ApproxQuantile", "Min", "Max", "Count", "Sum", "Avg", "ArrayAgg", "Unicode", "Normalize", "Convert", "Decode", "Encode", "Collate", "Interval", "Anonymous", "MatchAgainst", "XMLElement", "Listagg", "ArrayConcat", "ArrayContains", "ArrayFilter", "Transform", "Levenshtein", "DateAdd", "DateSub", "DateDiff", "DateTrunc", "TimestampTrunc", "TimestampAdd", "TimestampSub", "TimestampDiff", "DatetimeAdd", "DatetimeSub", "TimeAdd", "TimeSub", "UnixToTime", "TimeToUnix", "TimeToStr", "StrToDate", "Date", "DateFromParts", "Length", "Lower", "Upper", "Abs", "Round", "Pow", "Sqrt", "Ln", "Log", "Exp", "Mod", "Sign", "Div", "SafeDivide", "IntDiv", "ToChar", "Stddev", "StddevPop", "StddevSamp", "Variance", "VariancePop", "Corr", "CovarPop", "CovarSamp", "PercentileCont", "PercentileDisc", "WithinGroup", "Filter", "Window", "Over", "RowNumber", "Rank", "DenseRank", "PercentRank", "CumeDist", "Ntile", "Lag", "Lead", "FirstValue", "LastValue", "NthValue", "RegexpLike", "RegexpExtract", "RegexpReplace", "RegexpSplit", "RegexpILike", "Left", "Right", "Repeat", "Replace", "Reverse", "Pad", "GenerateSeries", "ExplodingGenerateSeries", "Greatest", "Least", "Hex", "Unhex", "MD5", "SHA", "SHA2", "Split", "SplitPart", "Format", "ParseJSON", "ToJson", "JSONArray", "JSONArrayAgg", "JSONBObjectAgg", "ObjectAgg", "Array", "ArraySize", "ArrayToString", "StringToArray", "ArrayJoin", "Flatten", "IsNan", "IsInf", "Cbrt", "Degrees", "Radians", "Pi", "Rand", "Random", "Trunc", "Truncate"])


@dataclass(frozen=True)
class Verdict:
    """Why a statement was accepted (its kind) - refusals raise instead."""

    kind: str


def refused(reason: str) -> SqlError:
    return SqlError(
        SQL_READ_ONLY_REQUIRED,
        f"refused: {reason}",
        "Send exactly one read-only SELECT (WITH ... SELECT is fine) using the functions on this datasource's "
        "allow-list; writes, DDL, session settings, file access, functions that run SQL text and multiple "
        "statements are not allowed.",
        details={"reason": reason},
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


def check_read_only(sql: str, dialect: str, *, allow_functions: Iterable[str] = ()) -> Verdict:
    """Accept ``sql`` if it is exactly one read-only statement in ``dialect``; else raise SQL_READ_ONLY_REQUIRED
    (SQL_QUERY_FAILED when it does not parse). ``allow_functions`` extends the dialect's function allow-list."""
    if not sql or not sql.strip():
        raise refused("the SQL text is empty")
    if dialect in _MYSQL:
        comment = mysql_executable_comment(sql)
        if comment is not None:
            raise refused(f"executable comment {comment!r}: MySQL/MariaDB run the inside of /*! */, /*M! */ "
                          "and optimizer-hint comments")
        if mysql_backslash_ambiguity(sql):
            raise refused("a backslash in a string or comment reads differently with and without "
                          "NO_BACKSLASH_ESCAPES; write a quote inside a string as '' instead of \\'")
    explain = _EXPLAIN.match(sql)
    if explain:
        rest = explain["rest"]
        if _EXPLAIN_EXECUTES.match(rest):
            raise refused("EXPLAIN ANALYZE executes the statement")
        options = _EXPLAIN_OPTIONS.match(rest)
        if options:
            rest = rest[options.end():]
        inner = check_read_only(rest, dialect, allow_functions=allow_functions)
        return Verdict("explain " + inner.kind)
    if dialect == "postgresql":
        try:
            sql = resolve_postgres_escapes(sql)
        except Unresolvable as exc:
            raise refused(f"{exc} cannot be resolved with certainty") from None
    text, root = _parse_one(sql, dialect)
    kind = _root_kind(root, dialect)
    _Checker(text, dialect, frozenset(allow_functions)).check(root)
    return Verdict(kind)


def _parse_one(sql: str, dialect: str) -> tuple[str, Any]:
    import sqlglot
    from sqlglot.errors import SqlglotError

    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    read = SQLGLOT_DIALECT.get(dialect, dialect)
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
        raise syntax_error(dialect, exc) from None
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
    if dialect == "postgresql" and isinstance(root, exp.Command) and str(root.this).upper() == "SHOW":
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
                raise refused("SELECT ... INTO writes a table or file" if isinstance(node, exp.Into)
                              else "locking clauses (FOR UPDATE/SHARE) are not allowed")
            if isinstance(node, exp.Func):
                self._function(node)
            elif isinstance(node, exp.Table):
                self._table(node)
            elif isinstance(node, exp.Operator):
                if self.dialect != "postgresql" or not _PG_OPERATOR.match(str(node.args.get("operator") or "")):
                    raise refused(f"OPERATOR({node.args.get('operator')}) is only allowed over pg_catalog")
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
                return self._ident(node.this if isinstance(node.this, exp.Identifier) else str(node.this))
            if type(node).__name__ in _SYNTAX or isinstance(node, self.operators):
                return ""  # an operator or keyword construct: no function name the server looks up
            raise refused(f"the construct {type(node).__name__} is not on the allow-list")
        raw = self.text[start:end + 1]
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
                raise refused(f"function {name}() called on a value cannot be resolved with certainty")
            qualifier = []
        if name in allowlist.NEVER:
            raise refused(f"function {name}() is never allowed: it runs SQL text, reads files or reaches "
                          "other servers")
        if qualifier:
            full = ".".join(qualifier + [name])
            if full in self.qualified:
                return
            if len(qualifier) != 1 or qualifier[0] not in allowlist.FUNCTION_SCHEMAS.get(self.dialect, ()):
                raise refused(f"function {full}() is not on the {self.dialect} allow-list")
        if name not in self.functions:
            raise refused(f"function {name}() is not on the {self.dialect} allow-list of read-only functions")

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
        unqualified = not schema or (self.dialect in ("sqlite", "duckdb") and schema in ("main", "temp"))
        is_system = schema in system or (unqualified and bool(prefixes) and name.startswith(prefixes))
        if is_system and (schema, name) not in allowlist.SYSTEM_VIEWS.get(self.dialect, frozenset()):
            shown = f"{schema}.{name}" if schema else name
            raise refused(f"the system view {shown} is not on the {self.dialect} allow-list")


def _dot_parts(node: Any, exp: Any) -> list[Any]:
    if isinstance(node, exp.Dot):
        return _dot_parts(node.this, exp) + _dot_parts(node.expression, exp)
    if isinstance(node, exp.Column):
        return [p for p in (node.args.get(k) for k in ("catalog", "db", "table", "this")) if p is not None]
    return [node]


@functools.cache
def _banned_node_types(exp: Any) -> tuple[type, ...]:
    names = (
        "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "AlterTable", "TruncateTable",
        "Command", "Copy", "Pragma", "Into", "Set", "Use", "Transaction", "Commit", "Rollback", "Grant",
        "Revoke", "LoadData", "Attach", "Detach", "Install", "Export", "Cache", "Uncache", "Refresh", "Lock",
        "Analyze", "Comment", "Kill", "Call", "Declare", "Execute", "Prepare", "Show", "Describe",
    )
    return tuple(getattr(exp, n) for n in names if isinstance(getattr(exp, n, None), type))


def _label(node: Any) -> str:
    key = getattr(node, "key", "") or type(node).__name__
    if key == "command":
        word = str(getattr(node, "this", "") or "").split()[:1]
        return (word[0].upper() if word else "this command")
    return key.upper().replace("_", " ")
