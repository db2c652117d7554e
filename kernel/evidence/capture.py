"""Capture: stream a result to a staged file, hash it, publish it, record it.

Rows are turned into canonical JSON lines in batches sized to about 1 MiB,
hashed and written as they come, so memory stays flat however many rows a
result has. The content is fsynced before the store publishes it under its
SHA-256, and the record is written only after that: a capture that dies
half-way leaves nothing a reader can see.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain, islice
from typing import Any, BinaryIO, Literal

from .canonical import canonical_value, dumps_bytes, rows_bytes
from .errors import ArtifactCaptureFailed, ArtifactQuotaExceeded
from .preview import PreviewBuilder
from .records import ArtifactRecord, ProducedFile, new_artifact_id, utcnow
from .settings import EvidenceSettings
from .sink import ArtifactSink
from .staging import BATCH_TARGET, StagedFile, stage

TABULAR = "application/x-ndjson"
PYTHON_DOC = "application/vnd.assay.python+json"


class RowBatches:
    """Rows handed over as the batches (lists of rows) a streaming driver produced them in.

    Iterating it gives the rows; a capture takes the batches as they are
    instead of regrouping the rows one by one.
    """

    def __init__(self, batches: Iterable[list[Any]]) -> None:
        self.batches = batches

    def __iter__(self) -> Iterator[Any]:
        return chain.from_iterable(self.batches)


def _write_rows(
    staged: StagedFile,
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
        size[0] = max(1, min(8192, len(batch) * BATCH_TARGET // max(1, len(data))))
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
    sha, size, (count, returned) = stage(
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

    def fill(st: StagedFile) -> bool:
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

    sha, size, complete = stage(sink, fill, held)
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

    def fill(st: StagedFile) -> None:
        st.write(content)

    sha, size, _ = stage(sink, fill, held)
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
