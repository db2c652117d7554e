"""A database the model can be given: a :class:`assay.Resource` of type ``database``."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from assay import PromptBudget, Resource, ResourceType
from assay.kernel.database_engine import DatabaseEngine, DatabasePool
from assay.kernel.log import get_logger
from assay.kernel.settings import mask_url

from . import builtin_engines
from .engines.base import EngineLimits
from .errors import (
    SQL_DATASOURCE_INVALID,
    SQL_DATASOURCE_UNAVAILABLE,
    SQL_SCHEMA_INDEX_FAILED,
    SQL_TABLE_NOT_FOUND,
    SqlError,
)
from .execution import Attempt, Executor, run_cancellable
from .privileges import LoginReport
from .results import QueryResult, RowStream
from .schema import TableInfo, render_schema
from .schema_index import SchemaIndex, index_path
from .schema_rank import (
    SchemaLayout,
    TableChoice,
    foreign_key_neighbours,
    layout_schema,
    rank_tables,
)
from .settings import DatasourceConfig, SqlSettings

log = get_logger("assay.sql")


def find_engine(url: Any, engines: Iterable[DatabaseEngine]) -> DatabaseEngine:
    """The engine for a parsed URL (its ``drivername``) or a scheme; ``SQL_DATASOURCE_INVALID`` when none."""
    scheme = (url if isinstance(url, str) else url.drivername).lower()
    for engine in engines:
        if scheme in engine.schemes:
            return engine
    known = sorted({s for e in engines for s in e.schemes})
    raise SqlError(
        SQL_DATASOURCE_INVALID,
        f"no SQL engine handles URLs of scheme {scheme!r}",
        f"Use one of: {', '.join(known)}.",
    )


def _parse_own_url(url: str, engines: tuple[DatabaseEngine, ...]) -> Any:
    """The URL as parsed by the engine of its scheme, if that engine parses its own (``parse_url``); else None."""
    scheme = url.split("://", 1)[0] if "://" in url else ""
    for engine in engines:
        if scheme.lower() in engine.schemes:
            parse = getattr(engine, "parse_url", None)
            return parse(url) if parse is not None else None
    return None


def _unavailable(code: str, message: str) -> str:
    return f"unavailable: {code}: {message}"


def _parse_sqlalchemy_url(name: str, url: str) -> Any:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url)
    except ArgumentError:
        raise SqlError(
            SQL_DATASOURCE_INVALID,
            f"datasource {name!r}: not a database URL: {mask_url(url)!r}",
            "Write it as scheme://user@host:port/database, sqlite:///path.db or duckdb:///path.duckdb.",
        ) from None


class DatabaseResource(Resource):
    """One datasource: a read-only, time-limited, pooled connection to a database.

    ``query`` / ``aquery`` check the SQL (one read-only statement, always),
    run it with a time limit that cancels it on the server, and return the
    fetched rows. Connections open lazily on first use; ``close`` releases them.
    """

    type = ResourceType.DATABASE

    def __init__(
        self,
        name: str,
        url: str,
        *,
        settings: SqlSettings | None = None,
        config: DatasourceConfig | None = None,
        engines: Iterable[DatabaseEngine] | None = None,
        description: str = "",
        home: Path | str | None = None,
        knowledge: Callable[[], Iterable[Any]] | None = None,
    ) -> None:
        self.name = name
        # The resources beside this one (the kernel's): knowledge bases among them give the schema index
        # their definitions naming a table (see _sync_notes).
        self._knowledge = knowledge
        self.settings = settings or SqlSettings()
        self.config = config or DatasourceConfig(url=url)
        self.description = description or self.config.description
        engines = (
            tuple(engines) if engines else builtin_engines()
        )  # no kernel: the plugin's own engines
        parsed = _parse_own_url(url, engines)  # SQLite's sqlite:///PATH: no SQLAlchemy import
        if parsed is None:
            parsed = _parse_sqlalchemy_url(name, url)
        self.engine = find_engine(parsed, engines)
        self._url = self.engine.normalize_url(parsed)
        self.dialect: str = self.engine.dialect_for(parsed)
        self.url: str = self._url.render_as_string(hide_password=True)  # safe to show anywhere
        self._executor: Executor | None = None
        self._lock = threading.Lock()
        self._schema: list[TableInfo] | None = None
        # The schema index: a file under ASSAY_HOME/schema/ (``home``), or memory without one.
        self.schema_index = SchemaIndex(index_path(Path(home), name, self.url) if home else None)
        self.index_state = (
            ""  # fresh | rebuilt | memory | unavailable: CODE: message (see schema_index_state)
        )
        self._sample_deadline = 0.0
        self._blocks: dict[str, str] = {}  # a table's block in the prompt, its sample values read
        self._links: dict[str, set[str]] | None = None  # foreign-key neighbours
        self.last_layout: SchemaLayout | None = (
            None  # what the last prompt held (assay prompt --json)
        )
        # What the login may do, known once the pool opened (None: not yet, or an engine without logins).
        self.login: LoginReport | None = None

    @property
    def privileged_login(self) -> bool:
        """The datasource runs as a privileged login it was allowed to use (every result says so)."""
        return self.login is not None and self.login.is_privileged

    # --- limits -----------------------------------------------------------

    @property
    def default_timeout_s(self) -> float:
        return min(self.config.timeout_s or self.settings.default_timeout_s, self.max_timeout_s)

    @property
    def max_timeout_s(self) -> float:
        return self.config.max_timeout_s or self.settings.max_timeout_s

    def effective_timeout(self, timeout_s: float | None) -> float:
        """A call may lower the limit, never raise it past the maximum."""
        if timeout_s is None or timeout_s <= 0:
            return self.default_timeout_s
        return min(float(timeout_s), self.max_timeout_s)

    # --- running SQL ------------------------------------------------------

    def executor(self) -> Executor:
        """The datasource's executor; its pool opens on the first statement that passes the read-only check."""
        with self._lock:
            if self._executor is None:
                self._executor = Executor(
                    self.name,
                    self.engine,
                    self._open_pool,
                    dialect=self.dialect,
                    cancel_grace_s=self.settings.cancel_grace_s,
                    backstop_margin_s=self.settings.backstop_margin_s,
                    max_result_rows=self.settings.max_result_rows,
                    allow_functions=tuple(self.config.allow_functions),
                    max_sql_bytes=self.settings.max_sql_bytes,
                )
            return self._executor

    def _open_pool(self) -> DatabasePool:
        """The engine's pool, once its login passed the privilege check (fail-closed)."""
        size = self.config.pool_size or self.settings.pool_size
        try:
            pool = self._make_pool(size)
        except SqlError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise self._unavailable(exc) from None
        try:
            report = self._login_report(pool)
        except BaseException as exc:
            pool.close()
            if isinstance(exc, SqlError) or not isinstance(exc, Exception):
                raise
            raise self._unavailable(exc) from None
        if report is not None and report.is_privileged and not self.config.allow_privileged:
            pool.close()
            raise report.refusal(self.name)
        if report is not None and report.is_privileged:
            log.warning(
                "sql_privileged_login_allowed",
                datasource=self.name,
                login=report.login,
                privileges=report.summary(),
            )
        self.login = report
        return pool

    @property
    def limits(self) -> EngineLimits:
        """What one statement may cost, as the engine bounds it (settings ``max_value_bytes``, ``duckdb_*``...)."""
        s = self.settings
        return EngineLimits(
            max_value_bytes=s.max_value_bytes,
            max_row_bytes=s.max_row_bytes,
            duckdb_memory_limit_mb=s.duckdb_memory_limit_mb,
            duckdb_threads=s.duckdb_threads,
            pg_temp_file_limit_mb=s.pg_temp_file_limit_mb,
        )

    def _make_pool(self, size: int) -> DatabasePool:
        extra = {"limits": self.limits} if getattr(self.engine, "takes_limits", False) else {}
        return self.engine.make_pool(
            self._url, pool_size=size, pool_timeout_s=self.settings.pool_timeout_s, **extra
        )

    def _login_report(self, pool: DatabasePool) -> LoginReport | None:
        """What the login may do, asked on one pooled connection (None: the engine has no logins)."""
        report_fn = getattr(self.engine, "login_report", None)
        if report_fn is None:
            return None
        fairy = pool.connect()
        try:
            return report_fn(fairy.dbapi_connection)
        finally:
            fairy.close()

    def inspect_login(self) -> LoginReport | None:
        """The login report without refusing anything (``assay db doctor``); opens and closes its own pool."""
        try:
            pool = self._make_pool(1)
        except Exception as exc:  # noqa: BLE001
            raise self._unavailable(exc) from None
        try:
            report = self._login_report(pool)
            if report is not None:
                report.advise_temp_file_limit(self.settings.pg_temp_file_limit_mb)
            return report
        except SqlError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise self._unavailable(exc) from None
        finally:
            pool.close()

    def _unavailable(self, exc: BaseException) -> SqlError:
        return SqlError(
            SQL_DATASOURCE_UNAVAILABLE,
            f"cannot open datasource {self.name!r} ({self.url}): {mask_url(str(exc))}",
            "Check the URL and that the database exists and is reachable.",
        )

    def new_attempt(
        self,
        timeout_s: float | None = None,
        *,
        consume: Callable[[RowStream], Any] | None = None,
        keep_rows: int = 50,
        decimal_text: bool = False,
        max_value_bytes: int | None = None,
    ) -> Attempt:
        """One statement's state: its time limit (clamped), and what the caller takes (see :class:`Attempt`)."""
        return Attempt(
            timeout_s=self.effective_timeout(timeout_s),
            consume=consume,
            keep_rows=keep_rows,
            decimal_text=decimal_text,
            max_value_bytes=max_value_bytes,
        )

    def query(
        self, sql: str, *, timeout_s: float | None = None, attempt: Attempt | None = None
    ) -> QueryResult:
        """Check and run one read-only statement; rows come back fetched.

        Raises :class:`SqlError` (``SQL_READ_ONLY_REQUIRED`` before anything
        runs; a timeout, cancellation or the engine's error after).
        """
        return self.executor().run(sql, attempt or self.new_attempt(timeout_s))

    async def aquery(
        self, sql: str, *, timeout_s: float | None = None, attempt: Attempt | None = None
    ) -> QueryResult:
        """:meth:`query` off the event loop; cancelling the task cancels the statement the same way."""
        attempt = attempt or self.new_attempt(timeout_s)
        return await run_cancellable(
            lambda: self.query(sql, attempt=attempt), attempt, grace_s=self.settings.cancel_grace_s
        )

    # --- schema -----------------------------------------------------------

    def tables(self, refresh: bool = False) -> list[TableInfo]:
        """Every table and view with columns, keys, comments and row estimates.

        Read from the schema index when the engine's schema fingerprint matches the one it was built for,
        else introspected and the index rebuilt; kept in memory after. An index that cannot be read or
        written leaves ``index_state`` saying why (the prompt then falls back to the catalog order).
        """
        if self._schema is None or refresh:
            self._schema = self._load_schema(refresh)
            self._blocks, self._links = {}, None
        return self._schema

    def _load_schema(self, refresh: bool) -> list[TableInfo]:
        executor = self.executor()
        try:
            fingerprint = executor.fingerprint(self.config.schemas)
        except SqlError as exc:
            if exc.code.startswith("SQL_DATASOURCE"):  # unavailable, busy, privileged: as before
                raise
            fingerprint, self.index_state = (
                None,
                _unavailable(exc.code, f"the schema fingerprint failed: {exc.message}"),
            )
        try:
            if fingerprint and not refresh and self.schema_index.fingerprint() == fingerprint:
                tables = self.schema_index.load_tables()
                self.index_state = "fresh"
                return tables
        except (sqlite3.Error, OSError, ValueError) as exc:
            self.index_state = _unavailable(
                SQL_SCHEMA_INDEX_FAILED, f"cannot read the schema index: {exc}"
            )
        tables = executor.introspect(self.config.schemas)
        if self.index_state.startswith("unavailable"):
            return tables
        try:
            self.schema_index.rebuild(tables, fingerprint)
            self.index_state = "rebuilt" if self.schema_index.path is not None else "memory"
        except (sqlite3.Error, OSError) as exc:
            self.index_state = _unavailable(
                SQL_SCHEMA_INDEX_FAILED, f"cannot write the schema index: {exc}"
            )
        return tables

    def knowledge_notes(self, tables: list[TableInfo]) -> dict[str, list[str]]:
        """The loaded knowledge bases' definitions naming each of ``tables`` (or one of its columns as
        ``table.column``): ``{table: [passage, ...]}``. A base that fails is left out (and logged)."""
        if self._knowledge is None:
            return {}
        bases: list[Any] = []
        pending = list(self._knowledge())
        while pending:
            resource = pending.pop(0)
            if getattr(resource, "is_pack", False):
                pending.extend(resource.sub_resources)
            elif str(getattr(resource, "type", "")) == "knowledge" and callable(
                getattr(resource, "definitions_naming", None)
            ):
                bases.append(resource)
        notes: dict[str, list[str]] = {}
        names = [t.name for t in tables]
        for base in bases:
            try:
                found = base.definitions_naming(names)
            except Exception as exc:  # noqa: BLE001 - a broken knowledge base must not take the schema down
                log.warning(
                    "sql_knowledge_notes_failed",
                    datasource=self.name,
                    knowledge=getattr(base, "name", "?"),
                    error=f"{type(exc).__name__}: {str(exc)[:200]}",
                )
                continue
            for table, texts in found.items():
                notes.setdefault(table, []).extend(texts)
        return notes

    def _sync_notes(self, tables: list[TableInfo]) -> None:
        """Bring the index's notes in step with the knowledge bases (only when their definitions changed)."""
        if self.index_state.startswith("unavailable"):
            return
        notes = self.knowledge_notes(tables)
        key = (
            hashlib.sha256(json.dumps(notes, sort_keys=True).encode()).hexdigest()[:16]
            if notes
            else ""
        )
        try:
            if (self.schema_index.notes_key() or "") != key:
                self.schema_index.set_notes(tables, notes, key)
        except (sqlite3.Error, OSError) as exc:
            self.index_state = _unavailable(
                SQL_SCHEMA_INDEX_FAILED, f"cannot write the schema index: {exc}"
            )

    def search_tables(self, text: str, limit: int = 20) -> list[TableInfo]:
        """The tables ``text`` matches best (BM25 over the schema index), best first."""
        listing = self.tables()
        self._sync_notes(listing)
        tables = {t.name: t for t in listing}
        if self.index_state.startswith("unavailable"):
            raise SqlError(
                SQL_SCHEMA_INDEX_FAILED,
                f"datasource {self.name!r}: {self.index_state}",
                "Use pattern= on list_tables, or check that ASSAY_HOME is writable.",
            )
        return [tables[name] for name, _ in self.schema_index.search(text, limit) if name in tables]

    def _block(self, table: TableInfo) -> str:
        """``table`` rendered for the prompt with its sample values (kept once they are known)."""
        text = self._blocks.get(table.name)
        if text is None:
            sampled = self._sampled(table)
            text = sampled.render()
            if sampled is not table or not self._sampling_pending(table):
                self._blocks[table.name] = text
        return text

    def _sampling_pending(self, table: TableInfo) -> bool:
        """Whether ``table``'s samples are still to be read (a prompt ran out of time for them)."""
        enabled = (
            self.config.sample_values
            if self.config.sample_values is not None
            else self.settings.sample_values
        )
        if not enabled:
            return False
        try:
            return self.schema_index.samples(table.name) is None
        except (sqlite3.Error, OSError):
            return False

    def _sampled(self, table: TableInfo) -> TableInfo:
        """``table`` with its low-cardinality text columns' values (cached in the index), when allowed."""
        from .schema_samples import read_samples, with_samples

        enabled = (
            self.config.sample_values
            if self.config.sample_values is not None
            else self.settings.sample_values
        )
        if not enabled:
            return table
        try:
            values = self.schema_index.samples(table.name)
        except (sqlite3.Error, OSError):
            return table
        if values is None:
            if time.monotonic() > self._sample_deadline:
                return table  # this prompt spent its time on samples: read for the next one
            values = read_samples(self, table)
            try:
                self.schema_index.store_samples(table.name, values)
            except (sqlite3.Error, OSError):
                pass  # shown this time, read again next time
        return with_samples(table, values)

    def table(self, name: str) -> TableInfo:
        wanted = name.strip().strip('"`[]').lower()
        tables = self.tables()
        for table in tables:
            if table.name.lower() == wanted:
                return table
        for table in tables:  # "public.orders" or "main.orders" for a table shown bare
            if table.name.lower() == wanted.split(".", 1)[-1] and "." in wanted:
                return table
        close = [t.name for t in tables if wanted in t.name.lower() or t.name.lower() in wanted][
            :10
        ]
        raise SqlError(
            SQL_TABLE_NOT_FOUND,
            f"datasource {self.name!r} has no table {name!r}",
            ("Did you mean: " + ", ".join(close) + "? " if close else "")
            + "Call list_tables to see every table.",
        )

    def get_prompt(self, budget: PromptBudget | None = None) -> str:
        """The schema within ``budget``: for its question, the tables it needs in full (ranked over the schema
        index) and the others named; without one, as many tables as fit in catalog order."""
        budget = budget or PromptBudget()
        limit = min(budget.max_chars, self.settings.schema_prompt_chars)
        header = f"{self.dialect} database {self.name!r}" + (
            f": {self.description}" if self.description else ""
        )
        header += "\nQuery it with sql_query (one read-only SELECT). Tables:"
        try:
            tables = self.tables()
        except SqlError as exc:
            self.last_layout = SchemaLayout(
                self.name,
                budget.question,
                "catalog",
                index=self.index_state,
                note=f"schema unavailable: {exc.code}",
            )
            return f"{header}\n(schema unavailable: {exc.code}: {exc.message})"[:limit]
        question = (budget.question or "").strip()
        self._sample_deadline = time.monotonic() + self.settings.sample_prompt_s
        if question:
            self._sync_notes(tables)
        if question and not self.index_state.startswith("unavailable"):
            by_name = {t.name: t for t in tables}
            if self._links is None:
                self._links = foreign_key_neighbours(by_name)
            ranked = rank_tables(
                self.schema_index.search(question, limit=60), by_name, question, self._links
            )
            layout = layout_schema(
                header,
                tables,
                ranked,
                limit,
                datasource=self.name,
                question=question,
                block=self._block,
                index_state=self.index_state,
            )
            self.last_layout = layout
            return layout.text
        fallback = ""
        if question:  # the index is unusable: today's order, and the prompt says so
            fallback = f"\n(schema index {self.index_state}; tables in catalog order, not chosen for the question)"
        names: dict = {}
        text = render_schema(header + fallback, tables, limit, out=names)
        self.last_layout = SchemaLayout(
            self.name,
            budget.question,
            "catalog",
            total=len(tables),
            index=self.index_state,
            shown=[
                TableChoice(n, "fits the budget (catalog order, smallest first)")
                for n in names.get("shown", [])
            ],
            listed=names.get("listed", []),
            left_out=names.get("left_out", []),
            note=fallback.strip(),
            text=text,
        )
        return text

    def close(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.close()
        self.schema_index.close()

    def __repr__(self) -> str:
        return f"<DatabaseResource {self.name} {self.url}>"
