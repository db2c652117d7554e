"""Capture: stream a result to a staged file, hash it, publish it, record it.

Rows are turned into canonical JSON lines in batches sized to about 1 MiB,
hashed and written as they come, so memory stays flat however many rows a
result has. The content is fsynced before the store publishes it under its
SHA-256, and the record is written only after that: a capture that dies
half-way leaves nothing a reader can see.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import chain, islice
from pathlib import Path
from typing import Any, BinaryIO, Literal

from .canonical import canonical_value, dumps_bytes, rows_bytes
from .catalog import ArtifactCatalog
from .errors import ArtifactCaptureFailed, ArtifactQuotaExceeded
from .preview import PreviewBuilder
from .records import ArtifactRecord, ProducedFile, new_artifact_id, utcnow
from .settings import EvidenceSettings

TABULAR = "application/x-ndjson"
PYTHON_DOC = "application/vnd.assay.python+json"
_BATCH_TARGET = 1 << 20  # bytes of canonical text per write


class RowBatches:
    """Rows handed over as the batches (lists of rows) a streaming driver produced them in.

    Iterating it gives the rows; a capture takes the batches as they are
    instead of regrouping the rows one by one.
    """

    def __init__(self, batches: Iterable[list[Any]]) -> None:
        self.batches = batches

    def __iter__(self) -> Iterator[Any]:
        return chain.from_iterable(self.batches)


@dataclass(frozen=True)
class Quota:
    """Evidence bytes a scope may hold: ``used()`` asks the catalog each time (other processes capture too)."""

    scope: str  # "run", "owner" ...
    limit: int
    used: Callable[[], int]
    setting: str  # what raises it, named in the error's hint


class ArtifactSink:
    """Where one run's captures go: a catalog (and its content store) plus the run id.

    Every capture is charged to the sink's quotas (the run's ``ASSAY_ARTIFACT_RUN_MAX_BYTES``,
    and what a host adds with :meth:`add_quota`, e.g. the service's per-owner quota): a capture
    that would take one past its limit is refused with ``ARTIFACT_QUOTA_EXCEEDED`` before its
    content is published, and nothing of it is kept. Bytes staged but not yet recorded are
    counted too, so captures running at once in one run cannot both take the last room.
    """

    def __init__(
        self, catalog: ArtifactCatalog, run_id: str, settings: EvidenceSettings | None = None
    ) -> None:
        self.catalog = catalog
        self.run_id = run_id
        self.thread: tuple[
            str, ...
        ] = ()  # a follow-up's earlier runs (RunContext.continue_thread): citable too
        self.settings = settings or EvidenceSettings()
        # read as the run's records are written: through a catalog outage for a run on a worker
        self.quotas: list[Quota] = [
            Quota(
                "run",
                self.settings.run_max_bytes,
                lambda: catalog.read_through_outage(
                    run_id, lambda: catalog.bytes_of_runs([run_id])
                ),
                "ASSAY_ARTIFACT_RUN_MAX_BYTES",
            )
        ]
        self._pending = 0
        self._lock = threading.Lock()

    def add_quota(self, quota: Quota) -> None:
        self.quotas.append(quota)

    def remaining(self) -> int:
        """Bytes the next captures may still take (the tightest quota)."""
        with self._lock:
            pending = self._pending
        return max(0, min(q.limit - q.used() - pending for q in self.quotas))

    def reserve(self, size: int) -> None:
        """Hold ``size`` bytes against every quota until :meth:`release`; raise when one would be passed."""
        with self._lock:
            for quota in self.quotas:
                used = quota.used() + self._pending
                if used + size > quota.limit:
                    raise ArtifactQuotaExceeded(quota.scope, quota.limit, used, size, quota.setting)
            self._pending += size

    def release(self, size: int) -> None:
        with self._lock:
            self._pending -= size

    def record(self, records: list[ArtifactRecord], held: list[int]) -> None:
        """Write the records and turn their held bytes from pending into used in one step.

        The catalog counts a record as used the moment it is written; were the hold released only
        afterwards, a capture reserving in between would count those bytes twice and be refused
        room it has. ``held`` is emptied: nothing of it is left for :meth:`release`.
        """
        with self._lock:
            if len(records) == 1:
                self.catalog.add(records[0])
            else:
                self.catalog.add_all(records)
            self._pending -= sum(held)
            held.clear()

    @property
    def store(self):
        return self.catalog.store

    def records(self) -> list[ArtifactRecord]:
        return self.catalog.list(self.run_id)

    def __repr__(self) -> str:
        return f"ArtifactSink(run_id={self.run_id!r}, store={self.store.name!r})"


class _Staged:
    """A staging file being written: hashed and sized as it grows.

    Small writes are gathered up to about 1 MiB. Large writes are hashed and
    written on a helper thread (both release the GIL) while the caller
    encodes the next batch; one write is in flight at a time, so the bytes
    go out in order. After each large write the kernel is
    asked to start writing the pages back (``sync_file_range``), so the final
    ``fsync`` has little left to wait for. The bytes and the hash are the same
    as a plain sequential write.
    """

    def __init__(self, sink: ArtifactSink) -> None:
        self.store = sink.store
        self.path, self.fh = self.store.new_temp()
        self.hash = hashlib.sha256()
        self.size = 0
        self._written = 0
        self._helper: Any = None
        self._pending: Any = None
        self._gathered: list[bytes] = []
        self._gathered_size = 0

    def write(self, data: bytes) -> None:
        self.size += len(data)
        self._gathered.append(data)
        self._gathered_size += len(data)
        if self._gathered_size >= _BATCH_TARGET:
            self._flush()

    def _flush(self) -> None:
        """Hand the gathered bytes to the file (on the helper thread when they are large)."""
        if not self._gathered:
            return
        data = self._gathered[0] if len(self._gathered) == 1 else b"".join(self._gathered)
        self._gathered, self._gathered_size = [], 0
        if self._helper is None and len(data) < _ASYNC_WRITE_MIN:
            self._write_now(data)
            return
        self._wait()
        if self._helper is None:
            self._helper = ThreadPoolExecutor(1, thread_name_prefix="assay-capture-write")
        self._pending = self._helper.submit(self._write_now, data)

    def _write_now(self, data: bytes) -> None:
        self.hash.update(data)
        self.fh.write(data)
        if len(data) >= _ASYNC_WRITE_MIN:
            start = _writeback()
            if start is not None:
                self.fh.flush()
                start(self.fh.fileno(), self._written, len(data))
        self._written += len(data)

    def _wait(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def _stop_helper(self) -> None:
        helper, self._helper = self._helper, None
        if helper is not None:
            helper.shutdown(wait=True)

    def publish(self) -> tuple[str, int]:
        try:
            self._flush()
            self._wait()
        finally:
            self._stop_helper()
        self.fh.flush()
        os.fsync(self.fh.fileno())
        self.fh.close()
        sha = self.hash.hexdigest()
        self.store.commit(self.path, sha, self.size)
        return sha, self.size

    def discard(self) -> None:
        try:
            try:
                self._wait()
            except BaseException:  # noqa: BLE001 - the file is being thrown away
                pass
            self._gathered, self._gathered_size = [], 0
            self._stop_helper()
            self.fh.close()
        finally:
            Path(self.path).unlink(missing_ok=True)


_ASYNC_WRITE_MIN = 256 << 10  # smaller writes are done in place (no thread for small results)


def _writeback_starter() -> Any:
    """``sync_file_range(fd, offset, n, SYNC_FILE_RANGE_WRITE)`` (Linux): start writing pages back, do not wait."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.sync_file_range
        fn.argtypes = (ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_uint)
        fn.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None

    def start(fd: int, offset: int, length: int) -> None:
        fn(
            fd, offset, length, 2
        )  # a hint only: the fsync before publishing is what makes it durable

    return start


_WRITEBACK: list[Any] = []


def _writeback() -> Any:
    if not _WRITEBACK:  # looked up on the first large write, not at import (ctypes is not free)
        _WRITEBACK.append(_writeback_starter())
    return _WRITEBACK[0]


def _stage(sink: ArtifactSink, fill, held: list[int]) -> tuple[str, int, Any]:
    """Write, charge to the sink's quotas (the bytes are appended to ``held``, for the caller to release
    once the records are written), publish."""
    staged = _Staged(sink)
    try:
        out = fill(staged)
        sink.reserve(staged.size)
        held.append(staged.size)
        sha, size = staged.publish()
    except BaseException:
        staged.discard()
        raise
    return sha, size, out


def _write_rows(
    staged: _Staged,
    columns: list[str],
    rows: Iterable[Sequence[Any]],
    preview: PreviewBuilder,
    max_bytes: int,
    decimal_text: Sequence[int] = (),
    value_kinds: Sequence[str] | None = None,
    count_rest: bool = False,
) -> tuple[int, int | None]:
    """Write the rows; returns (rows kept, rows returned). When ``max_bytes`` cuts the capture, the rest
    is read only to be counted if ``count_rest`` (else reading stops there and the total is ``None``)."""
    staged.write(dumps_bytes({"columns": columns}) + b"\n")
    count, size = 0, [1]  # rows may be wide: measure one, then aim at ~1 MiB batches
    batches = _batches(rows, size)
    for batch in batches:
        data = rows_bytes(batch, columns, decimal_text, value_kinds)
        if not preview.full:
            preview.offer_lines(data)
        if staged.size + len(data) > max_bytes:
            room = data[: max(0, max_bytes - staged.size)]
            room = room[: room.rfind(b"\n") + 1]
            staged.write(room)
            kept = count + room.count(b"\n")
            if not count_rest:
                return kept, None
            size[0] = 8192  # only counted from here on
            return kept, count + len(batch) + sum(len(b) for b in batches)
        staged.write(data)
        count += len(batch)
        # aim each batch at about 1 MiB of text, whatever the row width
        size[0] = max(1, min(8192, len(batch) * _BATCH_TARGET // max(1, len(data))))
    return count, count


def _batches(rows: Iterable[Sequence[Any]], size: list[int]) -> Iterator[list[Any]]:
    """``rows`` in batches of at most ``size[0]`` rows (the caller adjusts it as it learns the width).

    A driver's own batches (:class:`RowBatches`) are kept whole when they fit,
    else sliced; other rows are grouped as they come.
    """
    if isinstance(rows, RowBatches):
        for incoming in rows.batches:
            if len(incoming) <= size[0]:
                yield incoming
                continue
            start = 0
            while start < len(incoming):
                n = size[0]
                yield incoming[start : start + n]
                start += n
        return
    it = iter(rows)
    while batch := list(islice(it, size[0])):
        yield batch


def _guarded(what: str, fn):
    try:
        return fn()
    except (ArtifactCaptureFailed, ArtifactQuotaExceeded):
        raise
    except Exception as exc:
        raise ArtifactCaptureFailed(what, exc) from exc


def capture_rows(
    sink: ArtifactSink,
    *,
    kind: str,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    status: str = "succeeded",
    column_types: Sequence[str] | None = None,
    provenance: dict[str, Any] | Callable[[], dict[str, Any]] | None = None,
    decimal_text_columns: Sequence[int] = (),
    value_kinds: Sequence[str] | None = None,
    count_rest: bool = False,
) -> ArtifactRecord:
    """Capture a tabular result of any kind (the engine under :func:`capture_sql_execution`).

    ``decimal_text_columns``: columns whose ``str`` values are decimal text from
    the driver; they are stored exactly as ``Decimal(text)`` would be.
    ``value_kinds``: the driver's promise of each column's value kind
    (``canonical.PROMISED_KINDS``); it makes encoding cheaper, never different.
    ``provenance`` may be a function, called once the rows are written (for
    rows that stream while they are captured: their timing is known only then).
    ``count_rest``: when ``ASSAY_ARTIFACT_MAX_BYTES`` stops the capture, read the
    remaining rows only to count them (``provenance.rows_returned``), for a caller
    that reads them to the end anyway (the SQL plugin drains its statement).
    """
    held: list[int] = []
    try:
        return _capture_rows(
            sink,
            held,
            kind,
            columns,
            rows,
            status,
            column_types,
            provenance,
            decimal_text_columns,
            value_kinds,
            count_rest,
        )
    finally:
        sink.release(sum(held))


def _capture_rows(
    sink,
    held,
    kind,
    columns,
    rows,
    status,
    column_types,
    provenance,
    decimal_text_columns,
    value_kinds,
    count_rest,
) -> ArtifactRecord:
    cfg = sink.settings
    cols = [str(c) for c in columns]
    preview = PreviewBuilder(cfg.preview_rows, cfg.preview_bytes)
    sha, size, (count, returned) = _stage(
        sink,
        lambda st: _write_rows(
            st,
            cols,
            rows if rows is not None else (),
            preview,
            cfg.max_bytes,
            tuple(decimal_text_columns),
            value_kinds,
            count_rest,
        ),
        held,
    )
    complete = returned == count
    prev_rows, prev_truncated = preview.result(count)
    prov = dict((provenance() if callable(provenance) else provenance) or {})
    if not complete:
        limit = f"the capture stopped at ASSAY_ARTIFACT_MAX_BYTES={cfg.max_bytes}"
        if returned is None:
            prov["incomplete_reason"] = (
                f"only the first {count:,} rows were kept ({limit}; the rest were not counted)"
            )
        else:
            source = "query" if kind == "sql" else "execution"
            prov["incomplete_reason"] = (
                f"the {source} returned {returned:,} rows; {count:,} were kept ({limit})"
            )
            prov["rows_returned"] = returned
    record = ArtifactRecord(
        artifact_id=new_artifact_id(),
        kind=kind,
        status=status,
        run_id=sink.run_id,
        # a failed attempt has no row count (None), which is not an empty result (0)
        created_at=utcnow(),
        row_count=None if status == "failed" else count,
        columns=cols,
        column_types=[str(t) for t in (column_types or [])],
        byte_size=size,
        sha256=sha,
        content_uri=sink.store.uri(sha),
        media_type=TABULAR,
        preview=prev_rows,
        preview_truncated=prev_truncated,
        complete=complete,
        provenance=prov,
    )
    sink.record([record], held)
    return record


def capture_sql_execution(
    sink: ArtifactSink | None,
    *,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    sql: str,
    database: str,
    dialect: str,
    elapsed_ms: float | Callable[[], float],
    status: Literal["succeeded", "failed"] = "succeeded",
    error: str | None = None,
    column_types: Sequence[str] | None = None,
    decimal_text_columns: Sequence[int] = (),
    value_kinds: Sequence[str] | None = None,
    count_rest: bool = False,
    submitted_sql: str | None = None,
    sources: Sequence[str] = (),
) -> ArtifactRecord | None:
    """Keep a SQL result as evidence; ``None`` when the run captures nothing.

    ``sources`` (optional): ids of the ``source`` artifacts of the files the
    datasource reads (a files datasource): the provenance names them.

    ``sql`` is the SQL that ran; ``submitted_sql`` (optional) the text as it was
    submitted, when the two differ (the SQL plugin runs SQL written from the
    checked statement): the provenance keeps both.

    ``decimal_text_columns`` (optional): indexes of columns a driver returned as
    decimal text instead of ``Decimal``; the stored bytes are the same.
    ``value_kinds`` (optional): what the driver promises each column holds
    (``canonical.PROMISED_KINDS``), for a cheaper encoding of the same bytes.
    ``elapsed_ms`` may be a function, read after the last row (rows captured while
    the statement still streams them).
    ``count_rest``: see :func:`capture_rows` (how many rows a cut capture did not keep).
    """
    if sink is None:
        return None

    def provenance() -> dict[str, Any]:
        ms = elapsed_ms() if callable(elapsed_ms) else elapsed_ms
        prov = {
            "sql": sql,
            "datasource": database,
            "dialect": dialect,
            "elapsed_ms": round(float(ms), 3),
            "error": error,
        }
        if submitted_sql is not None and submitted_sql != sql:
            prov["submitted_sql"] = submitted_sql
        if sources:
            prov["sources"] = list(sources)
        return prov

    return _guarded(
        "sql",
        lambda: capture_rows(
            sink,
            kind="sql",
            columns=columns,
            rows=rows,
            status=status,
            column_types=column_types,
            provenance=provenance,
            decimal_text_columns=decimal_text_columns,
            value_kinds=value_kinds,
            count_rest=count_rest,
        ),
    )


def capture_file(
    sink: ArtifactSink | None,
    *,
    data: bytes | BinaryIO,
    name: str,
    media_type: str,
    kind: str = "file",
    provenance: dict | None = None,
) -> ArtifactRecord | None:
    """Keep a file (a chart, an export...) as evidence, byte for byte."""
    if sink is None:
        return None
    held: list[int] = []
    try:
        return _guarded(
            kind, lambda: _capture_file(sink, data, name, media_type, kind, provenance, held)
        )
    finally:
        sink.release(sum(held))


def _capture_file(
    sink: ArtifactSink,
    data: Any,
    name: str,
    media_type: str,
    kind: str,
    provenance: dict | None,
    held: list[int],
    record: bool = True,
) -> ArtifactRecord:
    limit = sink.settings.max_bytes

    def fill(st: _Staged) -> bool:
        if isinstance(data, (bytes, bytearray, memoryview)):
            blob = bytes(data)
            st.write(blob[:limit])
            return len(blob) <= limit
        while True:
            chunk = data.read(1 << 20)
            if not chunk:
                return True
            if st.size + len(chunk) > limit:
                st.write(chunk[: limit - st.size])
                return False
            st.write(chunk)

    sha, size, complete = _stage(sink, fill, held)
    prov = dict(provenance or {})
    if not complete:
        prov["incomplete_reason"] = f"file cut at ASSAY_ARTIFACT_MAX_BYTES={limit}"
    out = ArtifactRecord(
        artifact_id=new_artifact_id(),
        kind=kind,
        status="succeeded",
        run_id=sink.run_id,
        created_at=utcnow(),
        row_count=None,
        byte_size=size,
        sha256=sha,
        content_uri=sink.store.uri(sha),
        media_type=media_type,
        name=name,
        complete=complete,
        provenance=prov,
    )
    if record:
        sink.record([out], held)
    return out


def capture_python_execution(
    sink: ArtifactSink | None,
    *,
    code: str,
    result: Any,
    result_set: bool,
    stdout: str,
    stderr: str,
    files: Sequence[ProducedFile] = (),
    status: Literal["succeeded", "failed"],
    error: str | None = None,
    elapsed_ms: float = 0.0,
    inputs: Sequence[str] = (),
    sources: Sequence[str] = (),
) -> ArtifactRecord | None:
    """Keep a Python execution (result, output, produced files) as evidence.

    ``sources``: the ``source`` artifacts of the registered files the sandbox could read (``/data``).
    """
    if sink is None:
        return None
    lost = "nothing of this execution was kept (not its result, output" + (
        f" or its {len(files)} produced file(s): {', '.join(f.name for f in files)[:300]})"
        if files
        else ")"
    )
    held: list[int] = []
    try:
        return _capture_python(
            sink,
            held,
            code,
            result,
            result_set,
            stdout,
            stderr,
            files,
            status,
            error,
            elapsed_ms,
            inputs,
            sources,
        )
    except ArtifactQuotaExceeded:
        raise
    except Exception as exc:
        raise ArtifactCaptureFailed("python", exc, lost) from exc
    finally:
        sink.release(sum(held))


def _capture_python(
    sink,
    held,
    code,
    result,
    result_set,
    stdout,
    stderr,
    files,
    status,
    error,
    elapsed_ms,
    inputs,
    sources=(),
) -> ArtifactRecord:
    """All or nothing: every file and the execution's document are staged and published first, then
    all their records are written together (:meth:`ArtifactCatalog.add_all`); a failure anywhere leaves
    no record (published content nothing refers to is left to ``gc``)."""
    cfg = sink.settings
    file_records = []
    for f in files:
        kind = f.kind or ("chart" if f.media_type.startswith("image/") else "file")
        file_records.append(
            _capture_file(
                sink,
                f.data,
                f.name,
                f.media_type,
                kind,
                {"produced_by": "python", "code": code},
                held,
                record=False,
            )
        )
    value = canonical_value(result) if result_set else None
    doc = {
        "result_set": bool(result_set),
        "result": value,
        "stdout": stdout,
        "stderr": stderr,
        "files": [
            {
                "name": r.name,
                "media_type": r.media_type,
                "sha256": r.sha256,
                "byte_size": r.byte_size,
            }
            for r in file_records
        ],
    }
    content = dumps_bytes(doc) + b"\n"
    complete = True
    if len(content) > cfg.max_bytes:
        doc["result"] = None
        doc["stdout"] = stdout[: cfg.max_bytes // 4]
        doc["stderr"] = stderr[: cfg.max_bytes // 4]
        content = dumps_bytes(doc) + b"\n"
        complete = False

    def fill(st: _Staged) -> None:
        st.write(content)

    sha, size, _ = _stage(sink, fill, held)
    columns, preview, row_count, prev_truncated = _python_preview(value, result_set, cfg)
    inline = value
    if len(dumps_bytes(value)) > cfg.preview_bytes:
        inline, prev_truncated = None, True
    prov: dict[str, Any] = {
        "code": code,
        "elapsed_ms": float(elapsed_ms),
        "error": error,
        "inputs": list(inputs),
        "result_set": bool(result_set),
        "files": [r.artifact_id for r in file_records],
        "stdout_chars": len(stdout),
        "stderr_chars": len(stderr),
    }
    if sources:
        prov["sources"] = list(sources)
    if not complete:
        prov["incomplete_reason"] = f"result dropped: over ASSAY_ARTIFACT_MAX_BYTES={cfg.max_bytes}"
    record = ArtifactRecord(
        artifact_id=new_artifact_id(),
        kind="python",
        status=status,
        run_id=sink.run_id,
        created_at=utcnow(),
        row_count=None if status == "failed" else row_count,
        columns=columns,
        byte_size=size,
        sha256=sha,
        content_uri=sink.store.uri(sha),
        media_type=PYTHON_DOC,
        preview=preview,
        preview_truncated=prev_truncated,
        complete=complete,
        provenance=prov,
        result=inline,
    )
    sink.record([*file_records, record], held)
    return record


def _python_preview(value: Any, result_set: bool, cfg: EvidenceSettings):
    """Columns, preview rows, row count and truncation for a Python result."""
    if not result_set or not isinstance(value, list):
        return [], [], None, False
    columns: list[str] = []
    if value and all(isinstance(v, dict) for v in value[: cfg.preview_rows]):
        columns = list(value[0].keys())
        rows = [[item.get(c) for c in columns] for item in value[: cfg.preview_rows]]
    else:
        rows = [v if isinstance(v, list) else [v] for v in value[: cfg.preview_rows]]
    builder = PreviewBuilder(cfg.preview_rows, cfg.preview_bytes)
    for row in rows:
        if builder.full:
            break
        builder.offer_line(dumps_bytes(row))
    prev, truncated = builder.result(len(value))
    return columns, prev, len(value), truncated
