"""The contract of a SQL engine: what ``register_database_engines`` takes.

An engine is one object per database family (``sqlite``, ``postgresql``,
...). The kernel only records it by ``name`` and checks it has ``schemes``;
the SQL plugin (``assay.plugins.sql``) picks the engine whose ``schemes``
hold a datasource URL's scheme and drives it through the methods below, so
its execution code has no per-engine branches:

1. ``make_pool`` once per datasource: connections opened read-only.
2. Per statement, on a worker thread holding one pooled connection ``raw``:
   ``begin`` (a read-only transaction, a server-side time limit as backstop),
   then ``stream`` (rows in batches as they arrive) or ``cursor`` + execute +
   ``fetch_decimal_text`` / fetch, ``column_types``, and always ``end``
   (roll back). Meanwhile another thread may call ``cancel`` at the deadline.
3. ``introspect`` for the schema the model is shown.

Optional, looked up with ``getattr`` (``SqlEngine`` has defaults): ``verify``
(what is wrong with a session at checkout; a connection with problems is
discarded), ``reset`` (after ``end``: the session back to its just-opened
state; False or raising discards the connection), ``login_report`` (what the
login may do; a privileged login is refused unless the datasource allows it)
and ``parse_url`` (the URL text parsed by the engine itself, so that opening
it imports no SQLAlchemy; ``None`` lets SQLAlchemy's ``make_url`` parse it:
the SQLite engine reads ``sqlite:///PATH`` this way).

The built-in engines (``assay.plugins.sql.engines``) subclass
``assay.plugins.sql.engines.base.SqlEngine``, which implements the optional
parts; a third-party engine may do the same. This module only names the
contract: it imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

#: Runs one of the engine's own catalog queries, ``(sql, params) -> rows``, on the
#: datasource's read-only path. Only :meth:`DatabaseEngine.introspect` gets one.
CatalogFetch = Callable[[str, Any], list[tuple]]


class StatementDeadline(Protocol):
    """What ``begin`` may watch while its statement runs (the SQL plugin's attempt)."""

    deadline: float | None  # time.monotonic() value; None until the statement starts

    def cancel_requested(self) -> bool: ...


@runtime_checkable
class DatabasePool(Protocol):
    """What ``make_pool`` returns: pooled connections and whatever the engine keeps open beside them."""

    def connect(self) -> Any:
        """A pooled connection: ``.dbapi_connection`` is the driver's, ``.close()`` hands it back,
        ``.invalidate()`` drops it (SQLAlchemy's pooled-connection interface)."""
        ...

    def close(self) -> None:
        """Close every connection and everything opened with them."""
        ...


@runtime_checkable
class DatabaseEngine(Protocol):
    """A SQL engine as the SQL plugin drives it (see the module docstring for the order of calls)."""

    name: str  # the URL scheme family, e.g. "postgresql"
    schemes: tuple[str, ...]  # every URL scheme it accepts, e.g. ("postgresql", "postgres")
    dialect: str  # the SQL dialect the read-only check parses with
    # True when fetchmany() pulls rows from the engine as they are produced (it then bounds memory).
    streams_rows: bool

    def normalize_url(self, url: Any) -> Any:
        """The SQLAlchemy URL to connect with (e.g. the driver named)."""
        ...

    def dialect_for(self, url: Any) -> str:
        """The dialect of this URL (MariaDB vs MySQL), usually ``dialect``."""
        ...

    def make_pool(self, url: Any, *, pool_size: int, pool_timeout_s: float) -> DatabasePool:
        """Connections that are read-only whatever SQL they are given."""
        ...

    def begin(self, raw: Any, state: StatementDeadline, backstop_s: float) -> None:
        """Prepare ``raw`` for one read-only statement bounded by ``state.deadline``."""
        ...

    def end(self, raw: Any) -> None:
        """Undo anything the statement did (roll back); called after success and failure."""
        ...

    def session_id(self, raw: Any) -> Any:
        """The server's id of this connection (backend pid, thread id), for cancel and for logs."""
        ...

    def cursor(self, raw: Any) -> Any: ...

    def close_cursor(self, cur: Any) -> None: ...

    def cancel(self, raw: Any, session_id: Any, pool: DatabasePool) -> None:
        """Stop the statement running on ``raw``; called from another thread."""
        ...

    def is_timeout_error(self, exc: BaseException) -> bool:
        """``exc`` is the engine's report of a statement stopped by a time limit or cancel."""
        ...

    def column_types(self, raw: Any, description: Any, rows: list[tuple]) -> list[str]:
        """Each result column's type name."""
        ...

    def value_length_bound(self, raw: Any) -> int | None:
        """The longest text or binary value the engine can return on ``raw``, or None (no known bound)."""
        ...

    def fetch_decimal_text(
        self, raw: Any, cur: Any, limit: int
    ) -> tuple[list[tuple], list[int]] | None:
        """Up to ``limit`` rows with numeric columns as decimal text, and their indexes; None if it cannot."""
        ...

    def stream(self, raw: Any, cur: Any, sql: str, *, chunk_rows: int, decimal_text: bool) -> Any:
        """Start ``sql`` and return its rows in batches as they arrive, or None (fetched as usual)."""
        ...

    def introspect(self, fetch: CatalogFetch, schemas: list[str] | None) -> list[Any]:
        """Tables and views with columns, keys and row estimates, read from the catalog with ``fetch``."""
        ...
