"""Reading evidence back: verify the SHA-256, then return the selected part under a budget.

Reading never re-runs anything: it reads the stored bytes. A tabular artifact
is read in one streaming pass that hashes every byte and keeps only the rows
asked for, so memory stays bounded for any size.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .canonical import dumps
from .capture import PYTHON_DOC, TABULAR
from .catalog import ArtifactCatalog
from .errors import (
    ArtifactFileMissing,
    ArtifactIncomplete,
    ArtifactIntegrityFailed,
    ArtifactNotFound,
    ArtifactSelectorInvalid,
)
from .preview import clip_value
from .records import ArtifactRecord, SelectedResult, Selectors

_CHUNK = 1 << 20


def resolve_catalog(source: Any) -> ArtifactCatalog:
    """The catalog behind a sink, a catalog, a run or a kernel."""
    if isinstance(source, ArtifactCatalog):
        return source
    catalog = getattr(source, "catalog", None)
    if isinstance(catalog, ArtifactCatalog):  # an ArtifactSink
        return catalog
    artifacts = getattr(source, "artifacts", None)
    if artifacts is not None and isinstance(getattr(artifacts, "catalog", None), ArtifactCatalog):
        return artifacts.catalog  # a RunContext with a sink
    kernel = getattr(source, "kernel", None) if not hasattr(source, "registry") else source
    if kernel is not None and hasattr(kernel, "registry"):
        return kernel.evidence.catalog
    raise TypeError(f"cannot find an artifact catalog in {type(source).__name__}")


def get_record(source: Any, artifact_id: str) -> ArtifactRecord:
    record = resolve_catalog(source).get(artifact_id)
    if record is None:
        raise ArtifactNotFound(artifact_id)
    return record


def _open(catalog: ArtifactCatalog, record: ArtifactRecord):
    try:
        return catalog.store.open_content(record.sha256)
    except FileNotFoundError:
        raise ArtifactFileMissing(record.artifact_id, record.sha256) from None


def _check(record: ArtifactRecord, digest: str) -> None:
    if digest != record.sha256:
        raise ArtifactIntegrityFailed(record.artifact_id, record.sha256, digest)


def verify(catalog: ArtifactCatalog, record: ArtifactRecord) -> None:
    """Re-hash one artifact's content; raise when it is missing or altered (always hashes)."""
    before = _signature(catalog, record)
    h = hashlib.sha256()
    with _open(catalog, record) as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    _check(record, h.hexdigest())
    _remember(catalog, record, before)


# A local content file this process hashed whole, and whose stat signature (device, inode, size,
# mtime and ctime in ns) is unchanged since, is not hashed again: reading the first rows of a
# 1,000,000-row artifact then costs what the rows cost, not a 30 MB hash pass. Any write, chmod or
# replacement of the file changes its ctime (which no user can set back), so an altered file is
# hashed again and fails. A file changed less than _SETTLE_NS ago is not trusted yet: file
# times tick coarsely (a few ms), so a write in the same tick as the hash could keep the
# signature; two seconds later any write moves it. Remote stores have no local file: every
# read hashes.
_VERIFIED: dict[str, tuple[int, ...]] = {}
_VERIFIED_MAX = 4096
_SETTLE_NS = 2_000_000_000


def _signature(catalog: ArtifactCatalog, record: ArtifactRecord) -> tuple[int, ...] | None:
    path = catalog.store.local_path(record.sha256)
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _key(catalog: ArtifactCatalog, record: ArtifactRecord) -> str:
    return f"{catalog.store.local_path(record.sha256)}"


def _still_verified(catalog: ArtifactCatalog, record: ArtifactRecord) -> bool:
    known = _VERIFIED.get(_key(catalog, record))
    return known is not None and known == _signature(catalog, record)


def _remember(
    catalog: ArtifactCatalog, record: ArtifactRecord, before: tuple[int, ...] | None
) -> None:
    """Trust the file from now on, if it did not change while it was being hashed."""
    if before is None or before != _signature(catalog, record):
        return
    if time.time_ns() - max(before[3], before[4]) < _SETTLE_NS:
        return
    if len(_VERIFIED) >= _VERIFIED_MAX:
        _VERIFIED.clear()
    _VERIFIED[_key(catalog, record)] = before


def open_verified_content(source: Any, artifact_id: str) -> tuple[ArtifactRecord, bytes | Path]:
    """The exact stored bytes (a local path when the store has one) after a hash check."""
    catalog = resolve_catalog(source)
    record = get_record(catalog, artifact_id)
    path = catalog.store.local_path(record.sha256)
    if path is not None:
        if not _still_verified(catalog, record):
            verify(catalog, record)
        return record, path
    if record.byte_size > _INLINE_MAX:
        return record, _cached_copy(catalog, record)
    with _open(catalog, record) as fh:
        data = fh.read()
    _check(record, hashlib.sha256(data).hexdigest())
    return record, data


_INLINE_MAX = 8 << 20


def _cached_copy(catalog: ArtifactCatalog, record: ArtifactRecord) -> Path:
    """A verified local copy of remote content, streamed (memory stays flat)."""
    cache = catalog.store.root / "cache" / record.sha256
    if cache.is_file():
        h = hashlib.sha256()
        with open(cache, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                h.update(chunk)
        if h.hexdigest() == record.sha256:
            return cache
        cache.unlink(missing_ok=True)  # a damaged copy: fetch it again
    temp, out = catalog.store.new_temp()
    h = hashlib.sha256()
    try:
        with out, _open(catalog, record) as fh:
            while chunk := fh.read(_CHUNK):
                h.update(chunk)
                out.write(chunk)
        _check(record, h.hexdigest())
        cache.parent.mkdir(parents=True, exist_ok=True)
        os.replace(temp, cache)
    finally:
        Path(temp).unlink(missing_ok=True)
    return cache


# --- selectors ---------------------------------------------------------------


def parse_selectors(selectors: Selectors | dict | None) -> Selectors:
    if selectors is None:
        return Selectors()
    if isinstance(selectors, Selectors):
        return selectors
    if isinstance(selectors, str):
        try:
            selectors = json.loads(selectors)
        except ValueError:
            raise ArtifactSelectorInvalid(
                'selectors must be an object such as {"rows": [0, 10]}'
            ) from None
    try:
        return Selectors.model_validate(selectors)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'selectors'}: {e['msg']}"
            for e in exc.errors(include_url=False)
        )
        raise ArtifactSelectorInvalid(f"invalid selectors: {problems}") from None


def _path_steps(path: Any) -> list[int | str]:
    if path is None:
        return []
    if isinstance(path, int):
        return [path]
    if isinstance(path, str):
        path = [p for p in path.split(".") if p != ""]
    steps: list[int | str] = []
    for step in path:
        if isinstance(step, str) and _is_int(step):
            steps.append(int(step))
        else:
            steps.append(step)
    return steps


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()


def _range(spec: Any, total: int, what: str) -> tuple[int, int]:
    """``[start, stop]`` or ``"a:b"`` resolved against ``total`` (negatives count from the end)."""
    if isinstance(spec, str):
        parts = spec.split(":")
        if len(parts) != 2 or not all(p.strip() == "" or _is_int(p.strip()) for p in parts):
            raise ArtifactSelectorInvalid(f"{what} {spec!r} is not a range like '10:20'")
        spec = [int(p) if p.strip() else None for p in parts]
    if not isinstance(spec, (list, tuple)) or len(spec) != 2:
        raise ArtifactSelectorInvalid(f"{what} must be [start, stop]")
    start, stop = spec
    start = 0 if start is None else start
    stop = total if stop is None else stop
    if start < 0:
        start += total
    if stop < 0:
        stop += total
    start, stop = max(0, min(start, total)), max(0, min(stop, total))
    if stop < start:
        raise ArtifactSelectorInvalid(f"{what} {spec!r} is empty or reversed")
    return start, stop


def _index(i: int, total: int) -> int:
    j = i + total if i < 0 else i
    if not 0 <= j < total:
        raise ArtifactSelectorInvalid(
            f"row {i} is out of range: the artifact has {total} rows "
            f"(0..{total - 1}, or -1..-{total})"
        )
    return j


def _step_into(value: Any, step: int | str, columns: list[str] | None = None) -> Any:
    if isinstance(value, list):
        if isinstance(step, str):
            if columns is not None and step in columns:
                return value[columns.index(step)]
            raise ArtifactSelectorInvalid(f"{step!r} is not a column; columns: {columns or []}")
        if not -len(value) <= step < len(value):
            raise ArtifactSelectorInvalid(f"index {step} is out of range (length {len(value)})")
        return value[step]
    if isinstance(value, dict):
        key = str(step)
        if key not in value:
            raise ArtifactSelectorInvalid(f"key {key!r} not found; keys: {sorted(value)[:20]}")
        return value[key]
    raise ArtifactSelectorInvalid(f"cannot step into a {type(value).__name__} with {step!r}")


# --- reading -------------------------------------------------------------------


def read_artifact_result(
    source: Any,
    artifact_id: str,
    selectors: Selectors | dict | None = None,
    *,
    max_rows: int = 100,
    max_chars: int = 20_000,
) -> SelectedResult:
    """The selected part of an artifact, hash-verified, within ``max_rows``/``max_chars``."""
    sel = parse_selectors(selectors)
    catalog = resolve_catalog(source)
    record = get_record(catalog, artifact_id)
    if record.media_type == TABULAR:
        return _read_tabular(catalog, record, sel, max_rows, max_chars)
    if record.media_type == PYTHON_DOC:
        return _read_python(catalog, record, sel, max_rows, max_chars)
    return _read_file(catalog, record, sel, max_chars)


def _base(record: ArtifactRecord, **fields: Any) -> SelectedResult:
    """The answer, with what a reader must know about the record itself in ``note``: that it is
    incomplete (and what was kept of what), or that it records a failed attempt."""
    notes = [
        n for n in (fields.pop("note", ""), record.incomplete_note(), _failed_note(record)) if n
    ]
    returned = record.rows_returned if not record.complete and record.is_tabular else None
    return SelectedResult(
        artifact_id=record.artifact_id,
        kind=record.kind,
        status=record.status,
        sha256=record.sha256,
        complete=record.complete,
        rows_returned=returned,
        note="; ".join(notes),
        **fields,
    )


def _failed_note(record: ArtifactRecord) -> str:
    if record.status == "succeeded":
        return ""
    error = record.provenance.get("error")
    return f"a {record.status} attempt: it holds no result" + (f" ({error})" if error else "")


def _end_free(record: ArtifactRecord, spec: Any, what: str) -> None:
    """On an incomplete artifact, refuse a row selector that depends on where the data ends.

    ``-1`` or a range to "the end" would name the last *kept* row as if it
    were the last row; a row past the kept ones is not known at all.
    """
    if record.complete:
        return
    kept = record.row_count or 0
    if isinstance(spec, str) and ":" in spec:
        parts = spec.split(":")
        spec = [int(p) if _is_int(p.strip()) else None for p in parts] if len(parts) == 2 else spec
    bounds = list(spec) if isinstance(spec, (list, tuple)) else [spec]
    if isinstance(spec, (list, tuple)) and len(spec) == 2 and spec[1] is None:
        bad = "a range to the end"
    elif any(isinstance(b, int) and b < 0 for b in bounds):
        bad = "an index counted from the end"
    elif (
        isinstance(spec, int)
        and spec >= kept
        or isinstance(spec, (list, tuple))
        and any(isinstance(b, int) and b > kept for b in bounds)
    ):
        bad = "rows past the kept ones"
    else:
        return
    raise ArtifactIncomplete(
        record.artifact_id, f"{what} {spec!r} is {bad}", record.incomplete_note(), kept
    )


def _read_tabular(catalog, record, sel: Selectors, max_rows: int, max_chars: int) -> SelectedResult:
    total = record.row_count or 0
    columns = list(record.columns)
    steps = _path_steps(sel.path)
    single: int | None = None
    if steps:
        first = steps.pop(0)
        if isinstance(first, int):
            _end_free(record, first, "row")
            single = _index(first, total)
            start, stop = single, single + 1
        elif isinstance(first, str) and ":" in first:
            _end_free(record, first, "path range")
            start, stop = _range(first, total, "path range")
        else:
            raise ArtifactSelectorInvalid(f"a path starts with a row index or range, not {first!r}")
        if sel.rows is not None:
            raise ArtifactSelectorInvalid(
                "use either rows or a path that starts with rows, not both"
            )
    elif sel.rows is not None:
        _end_free(record, sel.rows, "rows")
        start, stop = _range(sel.rows, total, "rows")
    else:
        start, stop = 0, total
    col_index = None
    if sel.field is not None:
        if sel.field not in columns:
            raise ArtifactSelectorInvalid(f"no column {sel.field!r}; columns: {columns}")
        col_index = columns.index(sel.field)
    wanted = min(stop, start + max(0, max_rows))
    lines, over = _scan_rows(catalog, record, start, wanted, max_chars)
    rows = [json.loads(line) for line in lines]
    if col_index is not None:
        rows = [[r[col_index]] for r in rows]
        columns = [sel.field]
    if single is not None:
        if not rows:
            raise ArtifactSelectorInvalid(
                f"row {single} could not be read within max_chars={max_chars}"
            )
        if steps or col_index is not None:
            value = rows[0][0] if col_index is not None else rows[0]
            for step in steps:
                value = _step_into(value, step, columns if value is rows[0] else None)
            value, clipped = _clip_to(value, max_chars)
            return _base(
                record,
                total_rows=record.row_count,
                columns=columns,
                start=single,
                value=value,
                truncated=clipped,
            )
    truncated = over or len(rows) < stop - start
    if single is not None:  # one row by path: the row is also the value
        row, clipped = _clip_to(rows[0], max_chars) if rows else (None, False)
        return _base(
            record,
            total_rows=record.row_count,
            columns=columns,
            start=single,
            rows=[row],
            value=row,
            truncated=clipped,
        )
    if steps:  # a range then a column/key: project every row
        rows = [[_step_into(r, steps[0], columns)] for r in rows]
        columns = [str(steps[0])] if isinstance(steps[0], str) else columns
    rows, clipped = _clip_rows(rows, max_chars)
    return _base(
        record,
        total_rows=record.row_count,
        columns=columns,
        start=start,
        rows=rows,
        truncated=truncated or clipped,
    )


def _scan_rows(catalog, record, start: int, stop: int, max_chars: int) -> tuple[list[bytes], bool]:
    """Hash the whole content and keep rows ``start..stop`` (line ``i + 1``) within the budget
    (a file this process already hashed, unchanged since, is read only up to ``stop``)."""
    lo, hi = start + 1, stop + 1
    trusted = _still_verified(catalog, record)
    before = None if trusted else _signature(catalog, record)
    h = None if trusted else hashlib.sha256()
    picked: list[bytes] = []
    picked_chars, over = 0, False
    line_no, carry = 0, b""
    size = _CHUNK >> 4 if trusted else _CHUNK  # only the rows asked for are read: small steps
    with _open(catalog, record) as fh:
        while chunk := fh.read(size):
            if trusted and (line_no >= hi or over):
                break
            if h is not None:
                h.update(chunk)
            buf = carry + chunk if carry else chunk
            n = buf.count(b"\n")
            if not over and line_no < hi and line_no + n > lo:
                parts = buf.split(b"\n")
                carry = parts.pop()
                for i, part in enumerate(parts):
                    ln = line_no + i
                    if lo <= ln < hi and not over:
                        if picked and picked_chars + len(part) > max_chars:
                            over = True
                        else:
                            picked.append(part)
                            picked_chars += len(part)
            else:
                carry = buf[buf.rfind(b"\n") + 1 :]
            line_no += n
    if h is not None:
        _check(record, h.hexdigest())
        _remember(catalog, record, before)
    return picked, over


def _clip_to(value: Any, max_chars: int) -> tuple[Any, bool]:
    if len(dumps(value)) <= max_chars:
        return value, False
    limit = max(16, max_chars // 2)
    while limit > 16:
        clipped, _ = clip_value(value, limit)
        if len(dumps(clipped)) <= max_chars:
            return clipped, True
        limit //= 2
    return clip_value(value, 16)[0], True


def _clip_rows(rows: list[Any], max_chars: int) -> tuple[list[Any], bool]:
    if len(rows) == 1:
        return [_clip_to(rows[0], max_chars)[0]], len(dumps(rows[0])) > max_chars
    return rows, False


def _read_python(catalog, record, sel: Selectors, max_rows: int, max_chars: int) -> SelectedResult:
    with _open(catalog, record) as fh:
        data = fh.read()
    _check(record, hashlib.sha256(data).hexdigest())
    doc = json.loads(data)
    value = doc.get("result")
    if not doc.get("result_set"):
        return _base(record, value=None, note="the code did not set REPORT_RESULT (no result)")
    if (
        not record.complete and value is None
    ):  # the result itself was dropped: there is nothing to select
        if sel.path is not None or sel.rows is not None or sel.field is not None:
            raise ArtifactIncomplete(
                record.artifact_id, "its result was not kept", record.incomplete_note()
            )
        return _base(
            record, value=None, note="the result was not kept: null here is not the result"
        )
    steps = _path_steps(sel.path)
    if isinstance(value, list):
        total = len(value)
        if steps and isinstance(steps[0], str) and ":" in steps[0]:
            value = value[slice(*_range(steps.pop(0), total, "path range"))]
        elif steps:
            value = value[_index(int(steps.pop(0)), total)] if isinstance(steps[0], int) else value
        elif sel.rows is not None:
            start, stop = _range(sel.rows, total, "rows")
            value = value[start:stop]
    for step in steps:
        value = _step_into(value, step)
    if sel.field is not None:
        if isinstance(value, list):
            value = [_step_into(v, sel.field, record.columns or None) for v in value]
        else:
            value = _step_into(value, sel.field)
    truncated = False
    if isinstance(value, list) and len(value) > max_rows:
        value, truncated = value[:max_rows], True
    value, clipped = _clip_to(value, max_chars)
    return _base(
        record,
        total_rows=record.row_count,
        columns=record.columns,
        value=value,
        truncated=truncated or clipped,
    )


def _read_file(catalog, record, sel: Selectors, max_chars: int) -> SelectedResult:
    with _open(catalog, record) as fh:
        data = fh.read()
    _check(record, hashlib.sha256(data).hexdigest())
    info = {"name": record.name, "media_type": record.media_type, "byte_size": record.byte_size}
    if record.media_type.startswith("text/") or record.media_type.endswith("json"):
        text = data.decode("utf-8", errors="replace")
        info["text"] = text[:max_chars]
        return _base(record, value=info, truncated=len(text) > max_chars)
    return _base(
        record, value=info, note="binary content; cite the artifact id, it cannot be shown as text"
    )
