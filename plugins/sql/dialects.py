"""The sqlglot dialects the guard reads with and writes the executed SQL with.

They are sqlglot's own, plus what reading analysts' SQL and writing it back
faithfully needs (:mod:`.regenerate` sends what these write, never the
submitted text); every tokenizer and parser checks the guard's deadline
(:mod:`.bounded`):

* PostgreSQL and DuckDB: a dollar-quoted string is read as the plain string
  it is (sqlglot writes it as one, and reads that back as another node).
* PostgreSQL: ``XMLPARSE(CONTENT|DOCUMENT expr)`` is read (sqlglot does not);
  ``round(x, n)`` is written as it was read (sqlglot casts ``x`` to DECIMAL
  when it guesses ``x`` is a double).
* MySQL/MariaDB and DuckDB: ``GROUP_CONCAT``/``STRING_AGG`` without a
  separator are written without one (sqlglot adds ``','``, which reads back
  as another tree); DuckDB ``IF(c, a, b)`` as read (sqlglot writes ``CASE``).
* MySQL/MariaDB: ``MONTHNAME(x)`` and ``TO_DAYS(x)`` are read as the calls
  they are (sqlglot reads them as ``DATE_FORMAT``/``DATEDIFF`` arithmetic,
  which it then writes as such and reads back as another tree).
* MySQL/MariaDB: ``MEDIAN(x)``, ``TO_CHAR(x, format)`` and ``TIMESTAMPADD(unit,
  n, x)`` are written as read (sqlglot writes ``PERCENTILE_CONT(x, 0.5)``,
  which MariaDB does not take as a window function, drops the format of
  ``TO_CHAR``, and writes ``DATE_ADD``).
* MariaDB: ``VALUES`` in ``FROM`` is written as such, ``CAST(x AS INT)`` as
  ``INT`` (sqlglot writes ``UNION ALL`` selects and ``SIGNED``).
* SQLite: type names are written as read (SQLite derives affinity from the
  spelling; sqlglot would write ``DECIMAL`` as ``REAL``).
* DuckDB: a ``PIVOT``/``UNPIVOT`` statement followed by ``ORDER BY`` or
  ``LIMIT`` is read as ``SELECT * FROM (PIVOT ...) ORDER BY ...`` (what DuckDB
  does with it); sqlglot stops at the ``ORDER BY``.

Anything else sqlglot writes differently is caught by the round trip in
:mod:`.regenerate` and refused, never sent as submitted.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.dialects.dialect import groupconcat_sql
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.dialects.mysql import MySQL
from sqlglot.dialects.postgres import Postgres
from sqlglot.dialects.sqlite import SQLite
from sqlglot.tokenizer_core import TokenizerCore
from sqlglot.tokens import TokenType

from .bounded import check_deadline


class _DeadlineCore(TokenizerCore):
    """sqlglot's tokenizer, checking the guard's deadline every 256 tokens it adds."""

    __slots__ = ()

    def _add(self, token_type: TokenType, text: str | None = None) -> None:
        super()._add(token_type, text)
        if not len(self.tokens) & 255:
            check_deadline()


class _DeadlineTokenizer:
    """A tokenizer whose core is :class:`_DeadlineCore` (the same object layout, one method more)."""

    def _init_core(self) -> TokenizerCore:
        core = super()._init_core()  # type: ignore[misc]
        core.__class__ = _DeadlineCore
        return core


class _Deadline:
    """A parser that checks the guard's deadline (:mod:`.bounded`) as it starts and every 256 tokens."""

    def parse(self, raw_tokens: Any, sql: str) -> Any:
        check_deadline()  # the tokenizer ran before: it may have used the time up
        return super().parse(raw_tokens, sql)  # type: ignore[misc]

    def _advance(self, times: int = 1) -> None:
        super()._advance(times)  # type: ignore[misc]
        if not self._index & 255:  # type: ignore[attr-defined]
            check_deadline()


class XMLParse(exp.Expression, exp.Func):
    """PostgreSQL ``XMLPARSE(CONTENT expr)`` / ``XMLPARSE(DOCUMENT expr)``."""

    arg_types = {"this": True, "kind": True}


def _xmlparse_sql(self: Any, expression: XMLParse) -> str:
    return f"XMLPARSE({expression.text('kind')} {self.sql(expression, 'this')})"


def _dollar_string(self: Any, token: Any) -> exp.Literal:
    """A dollar-quoted string is a plain string value (sqlglot keeps it as a RawString, which it writes as a
    plain string and reads back as a Literal: the round trip would refuse it)."""
    return self.expression(exp.Literal(this=token.text, is_string=True), token)


def _as_read(name: str, *args: str) -> Any:
    """A generator that writes the node as the call it was read from: ``NAME(arg, ...)``."""

    def sql(self: Any, expression: Any) -> str:
        return self.func(name, *(expression.args.get(a) for a in args))

    return sql


# _SQLGLOT_CLASSES: sqlglot binds a dialect's Parser and Generator as class attributes
# (``Parser = PostgresParser``), which mypy reads as variables it cannot subclass; its documented way
# to extend a dialect is this subclassing, so those lines say ``type: ignore[valid-type, misc]``.
class AssayPostgres(Postgres):
    class Tokenizer(_DeadlineTokenizer, Postgres.Tokenizer):
        pass

    class Parser(_Deadline, Postgres.Parser):  # type: ignore[valid-type, misc]  # see _SQLGLOT_CLASSES
        FUNCTION_PARSERS = {
            **Postgres.Parser.FUNCTION_PARSERS,
            "XMLPARSE": lambda self: self._parse_xmlparse(),
        }
        PRIMARY_PARSERS = {
            **Postgres.Parser.PRIMARY_PARSERS,
            TokenType.HEREDOC_STRING: _dollar_string,
        }

        def _parse_xmlparse(self) -> XMLParse:
            if not self._match_texts(("CONTENT", "DOCUMENT")):
                self.raise_error("Expecting CONTENT or DOCUMENT")
            kind = self._prev.text.upper()
            return self.expression(XMLParse(this=self._parse_bitwise(), kind=kind))

    class Generator(Postgres.Generator):  # type: ignore[valid-type, misc]  # see _SQLGLOT_CLASSES
        TRANSFORMS = {
            **Postgres.Generator.TRANSFORMS,
            XMLParse: _xmlparse_sql,
            exp.Round: _as_read("ROUND", "this", "decimals"),
        }


def _mysql_group_concat(self: Any, expression: exp.GroupConcat) -> str:
    """``GROUP_CONCAT(x [SEPARATOR s])``: the separator only when one was given (sqlglot writes ',' always)."""
    separator = self.sql(expression, "separator")
    return (
        f"GROUP_CONCAT({self.sql(expression, 'this')}"
        + (f" SEPARATOR {separator}" if separator else "")
        + ")"
    )


def _duckdb_group_concat(self: Any, expression: exp.GroupConcat) -> str:
    """``LISTAGG(x [, s] ...)``: the separator only when one was given (sqlglot writes ',' always)."""
    return groupconcat_sql(self, expression, sep=None, within_group=False)


def _call_as_written(name: str) -> Any:
    """Read ``name(args)`` as a call of that name (sqlglot would rewrite it into other functions)."""
    return lambda args: exp.Anonymous(this=name, expressions=args)


class AssayMySQL(MySQL):
    class Tokenizer(_DeadlineTokenizer, MySQL.Tokenizer):
        pass

    class Parser(_Deadline, MySQL.Parser):  # type: ignore[valid-type, misc]  # see _SQLGLOT_CLASSES
        FUNCTIONS = {
            **MySQL.Parser.FUNCTIONS,
            "MONTHNAME": _call_as_written("MONTHNAME"),
            "TO_DAYS": _call_as_written("TO_DAYS"),
        }

    class Generator(MySQL.Generator):  # type: ignore[valid-type, misc]  # see _SQLGLOT_CLASSES
        TRANSFORMS = {
            **MySQL.Generator.TRANSFORMS,
            exp.Median: _as_read("MEDIAN", "this"),
            exp.ToChar: _as_read("TO_CHAR", "this", "format"),
            exp.GroupConcat: _mysql_group_concat,
            exp.TimestampAdd: _as_read("TIMESTAMPADD", "unit", "expression", "this"),
        }


def _values_sql(self: Any, expression: exp.Values) -> str:
    """``(VALUES (1, 'a'), ...) AS alias``: MariaDB's table value constructor (sqlglot writes UNION ALL selects)."""
    rows = ", ".join(self.sql(row) for row in expression.expressions)
    alias = self.sql(expression, "alias")
    return f"(VALUES {rows})" + (f" AS {alias}" if alias else "")


class AssayMariaDB(AssayMySQL):
    class Generator(AssayMySQL.Generator):
        TRANSFORMS = {**AssayMySQL.Generator.TRANSFORMS, exp.Values: _values_sql}
        # MariaDB takes CAST(x AS INT); sqlglot writes SIGNED, which it reads back as BIGINT
        CAST_MAPPING = {
            k: v for k, v in AssayMySQL.Generator.CAST_MAPPING.items() if k is not exp.DType.INT
        }


class AssaySQLite(SQLite):
    class Tokenizer(_DeadlineTokenizer, SQLite.Tokenizer):
        pass

    class Parser(_Deadline, SQLite.Parser):  # type: ignore[valid-type, misc]  # see _SQLGLOT_CLASSES
        pass

    class Generator(SQLite.Generator):  # type: ignore[valid-type, misc]  # see _SQLGLOT_CLASSES
        # Types as read: SQLite derives a column's affinity from the name's spelling, and sqlglot's renames
        # change it (DECIMAL, NUMERIC affinity, would be written REAL).
        TYPE_MAPPING: dict = {}


class AssayDuckDB(DuckDB):
    class Tokenizer(_DeadlineTokenizer, DuckDB.Tokenizer):
        pass

    class Parser(_Deadline, DuckDB.Parser):  # type: ignore[valid-type, misc]  # see _SQLGLOT_CLASSES
        PRIMARY_PARSERS = {
            **DuckDB.Parser.PRIMARY_PARSERS,
            TokenType.HEREDOC_STRING: _dollar_string,
        }
        STATEMENT_PARSERS = {
            **DuckDB.Parser.STATEMENT_PARSERS,
            TokenType.PIVOT: lambda self: self._parse_pivot_statement(False),
            TokenType.UNPIVOT: lambda self: self._parse_pivot_statement(True),
        }

        def _parse_pivot_statement(self, unpivot: bool) -> exp.Expr:
            pivot = self._parse_simplified_pivot(is_unpivot=unpivot)
            if self._curr is None or self._curr.token_type not in (
                TokenType.ORDER_BY,
                TokenType.LIMIT,
            ):
                return pivot
            select = exp.Select(
                expressions=[exp.Star()], from_=exp.From(this=exp.Subquery(this=pivot))
            )
            return self._parse_query_modifiers(select)

    class Generator(DuckDB.Generator):  # type: ignore[valid-type, misc]  # see _SQLGLOT_CLASSES
        TRANSFORMS = {
            **DuckDB.Generator.TRANSFORMS,
            exp.GroupConcat: _duckdb_group_concat,
            exp.If: _as_read("IF", "this", "true", "false"),
        }


# assay dialect -> the sqlglot dialect it is read and written with
DIALECTS: dict[str, type] = {
    "postgresql": AssayPostgres,
    "mysql": AssayMySQL,
    "mariadb": AssayMariaDB,
    "duckdb": AssayDuckDB,
    "sqlite": AssaySQLite,
}
