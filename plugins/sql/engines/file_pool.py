"""A fixed-size pool of DB-API connections to an in-process database file (SQLite), and its URL.

SQLite needs nothing of SQLAlchemy but a pool and a URL parser, and importing
SQLAlchemy costs a few hundred milliseconds of CPU: more than the whole
`assay ask` start-up budget (bench/bench_agent.py). So the SQLite engine uses
these two, built on the standard library, with SQLAlchemy's semantics where
assay relies on them:

- :class:`ConnectionPool` is SQLAlchemy's ``QueuePool(pool_size=N,
  max_overflow=0, timeout=T, reset_on_return="rollback")``: at most N
  connections, made on demand; a checkout waits up to T seconds for one to
  come back, then raises :class:`PoolBusy`; a connection handed back is
  rolled back first (one whose rollback fails is closed instead).
- :func:`parse_file_url` reads ``sqlite:///path`` (and ``sqlite+pysqlite``)
  as ``sqlalchemy.engine.make_url`` does (the path percent-decoded, and
  rendered back percent-encoded); any other shape (a query string, a host, no
  path) returns ``None`` and the caller parses it with SQLAlchemy.
"""

from __future__ import annotations

import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote


class PoolBusy(TimeoutError):
    """Every connection stayed checked out for longer than the pool's timeout."""


class PooledConnection:
    """One checked-out connection: ``dbapi_connection``, then ``close()`` (hand it back) or ``invalidate()``."""

    __slots__ = ("_pool", "dbapi_connection")

    def __init__(self, pool: ConnectionPool, raw: Any) -> None:
        self._pool: ConnectionPool | None = pool
        self.dbapi_connection = raw

    def close(self) -> None:
        """Hand the connection back (rolled back first); a second call does nothing."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool._checkin(self.dbapi_connection)

    def invalidate(self) -> None:
        """Close the connection for good; its place in the pool is free for a new one."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool._discard(self.dbapi_connection)


class ConnectionPool:
    """At most ``pool_size`` connections from ``creator``, made on first need (no overflow)."""

    def __init__(
        self,
        creator: Callable[[], Any],
        *,
        pool_size: int,
        timeout_s: float,
        reset_on_return: bool = True,
    ) -> None:
        if pool_size < 1:
            raise ValueError("pool_size must be at least 1")
        self._creator = creator
        self._size = pool_size
        self._timeout_s = timeout_s
        self._reset = reset_on_return
        self._idle: deque[Any] = deque()
        self._open = 0  # connections made and not yet closed (idle or checked out)
        self._disposed = False
        self._cond = threading.Condition()

    def size(self) -> int:
        return self._size

    def connect(self) -> PooledConnection:
        """A connection: an idle one, a new one while fewer than ``pool_size`` are open, else the next handed back."""
        deadline = time.monotonic() + self._timeout_s
        with self._cond:
            while True:
                if self._idle:
                    return PooledConnection(self, self._idle.popleft())
                if self._open < self._size:
                    self._open += 1  # the place is taken before connecting (outside the lock)
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PoolBusy(
                        f"all {self._size} connections of the pool are checked out; "
                        f"none came back within {self._timeout_s:g} s"
                    )
                self._cond.wait(left)
        try:
            raw = self._creator()
        except BaseException:
            self._release_place()
            raise
        return PooledConnection(self, raw)

    def dispose(self) -> None:
        """Close every idle connection; connections handed back from now on are closed too."""
        with self._cond:
            self._disposed = True
            idle, self._idle = list(self._idle), deque()
            self._open -= len(idle)
            self._cond.notify_all()
        for raw in idle:
            _close_quietly(raw)

    def _checkin(self, raw: Any) -> None:
        if self._reset:
            try:
                raw.rollback()
            except Exception:  # noqa: BLE001 - a connection that cannot roll back is not handed out again
                self._discard(raw)
                return
        with self._cond:
            if not self._disposed:
                self._idle.append(raw)
                self._cond.notify()
                return
        self._discard(raw)

    def _discard(self, raw: Any) -> None:
        _close_quietly(raw)
        self._release_place()

    def _release_place(self) -> None:
        with self._cond:
            self._open -= 1
            self._cond.notify()


def _close_quietly(raw: Any) -> None:
    try:
        raw.close()
    except Exception:  # noqa: BLE001 - closing what is already broken
        pass


# --- the URL ---------------------------------------------------------------------

_FILE_URL = re.compile(r"(?P<drivername>[\w+]+):///(?P<database>[^?]+)\Z", re.S)


@dataclass(frozen=True)
class FileURL:
    """``DRIVER:///PATH``: the attributes of a SQLAlchemy ``URL`` that the file engines read."""

    drivername: str
    database: str
    username: None = None
    password: None = None
    host: None = None
    port: None = None
    query: dict[str, Any] = field(default_factory=dict)

    def get_backend_name(self) -> str:
        return self.drivername.split("+", 1)[0]

    def render_as_string(self, hide_password: bool = True) -> str:
        return f"{self.drivername}:///{quote(self.database, safe=' +/')}"

    def __str__(self) -> str:
        return self.render_as_string()


def parse_file_url(text: str, schemes: tuple[str, ...]) -> FileURL | None:
    """``text`` as a :class:`FileURL` when it is ``SCHEME:///PATH`` for one of ``schemes``; else ``None``."""
    match = _FILE_URL.match(text)
    if match is None or match["drivername"].lower() not in schemes:
        return None
    return FileURL(drivername=match["drivername"], database=unquote(match["database"]))
