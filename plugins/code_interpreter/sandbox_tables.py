"""``load_artifact`` and ``load_file`` inside the sandbox: the placed inputs and the registered files (/data), read into pandas or JSON.

Uploaded beside the runner (as ``assay_ci_tables``) and imported only when a
cell calls ``load_artifact`` or ``list_artifacts``. Standard library and pandas
only; the host's tests import it as ``assay.plugins.code_interpreter.sandbox_tables``.
"""

import io
import json
import os

WORKDIR = os.getcwd()
INPUTS_DIR = os.path.join(WORKDIR, "inputs")


def configure(workdir: str) -> None:
    global WORKDIR, INPUTS_DIR
    WORKDIR = workdir
    INPUTS_DIR = os.path.join(workdir, "inputs")


def _meta(artifact_id: str) -> dict:
    import re

    path = os.path.join(
        INPUTS_DIR, re.sub(r"[^A-Za-z0-9._-]+", "_", str(artifact_id)) + ".meta.json"
    )
    try:
        return _meta_file(path)
    except FileNotFoundError:
        raise KeyError(
            f"artifact {artifact_id!r} is not in this session; pass it in the tool's `inputs` list"
        ) from None


def _meta_file(path: str) -> dict:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def list_artifacts() -> list:
    """The artifacts placed in this session: id, kind, name, rows, columns."""
    out = []
    if os.path.isdir(INPUTS_DIR):
        for entry in sorted(os.listdir(INPUTS_DIR)):
            if entry.endswith(".meta.json"):
                m = _meta_file(os.path.join(INPUTS_DIR, entry))
                out.append(
                    {k: m.get(k) for k in ("id", "kind", "name", "row_count", "columns", "path")}
                )
    return out


def load_artifact(artifact_id: str, *, raw: bool = False):
    """An input artifact: a pandas DataFrame for tabular ones, the JSON value otherwise.

    ``raw=True`` returns the stored bytes unchanged (charts, files).
    """
    meta = _meta(artifact_id)
    path = os.path.join(WORKDIR, meta["path"])
    if raw:
        with open(path, "rb") as fh:
            return fh.read()
    if meta.get("tabular"):
        return read_table(path, meta.get("columns") or [])
    with open(path, "rb") as fh:
        data = fh.read()
    media = meta.get("media_type") or ""
    if media == "application/vnd.assay.python+json":
        return _decode(json.loads(data).get("result"))
    if media.endswith("json"):
        return _decode(json.loads(data))
    if media.startswith("text/") or media in ("application/csv",):
        return data.decode("utf-8", "replace")
    return data


_TAGS = ("$float", "$decimal", "$duration", "$bytes", "$repr")


def _decode(value):
    """Undo the evidence store's tags: $float -> float, $decimal -> float, $bytes -> bytes..."""
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, inner),) = value.items()
            if key in ("$float", "$decimal") and isinstance(inner, str):
                return float(inner.replace("Infinity", "inf"))
            if key == "$bytes" and isinstance(inner, str):
                import base64

                return base64.b64decode(inner)
            if key == "$duration" and isinstance(inner, str) and inner.startswith("PT"):
                import datetime

                return datetime.timedelta(seconds=float(inner[2:-1]))
        return {k: _decode(v) for k, v in value.items()}
    return value


def read_table(path: str, columns: list):
    """Canonical JSON Lines (optional header object, then one array per row) -> DataFrame.

    The fast path hands the body to pandas' C CSV parser: a canonical row
    ``[1,"a",2.5,true,null]`` is CSV once its brackets are cut, as long as no
    string holds an escape, a bracket or a brace, and no string spells a JSON
    literal. Anything else takes the exact path (``json.loads``), which is
    slower but handles every value.
    """
    import pandas as pd

    with open(path, "rb") as fh:
        data = fh.read()
    if data.startswith(b"{"):
        end = data.find(b"\n")
        header = json.loads(data[: end if end >= 0 else len(data)])
        columns = list(header.get("columns") or columns)
        data = data[end + 1 :] if end >= 0 else b""
    if not data.strip():
        return pd.DataFrame({c: [] for c in columns}, columns=columns)
    frame = _fast_table(pd, data, columns)
    if frame is None:
        frame = _exact_table(pd, data, columns)
    return frame


_LITERAL_STRINGS = (b'"null"', b'"true"', b'"false"', b'"NaN"', b'"nan"', b'"NA"', b'""')


def _fast_table(pd, data: bytes, columns: list):
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    if (
        b"\\" in data
        or b"{" in data
        or data.count(b"[") != lines
        or data.count(b"]") != lines
        or any(lit in data for lit in _LITERAL_STRINGS)
        or b"\r" in data
    ):
        return None
    # Which columns hold strings is decided from the first rows (a column typed
    # by SQL holds one kind of value; numbers or nulls elsewhere are checked below).
    head = data[: 1 << 16]
    cut = head.rfind(b"\n")
    sample_rows = (
        json.loads(b"[" + head[:cut].replace(b"\n", b",") + b"]") if cut > 0 else [json.loads(data)]
    )
    text_cols = set()
    for row in sample_rows:
        if len(row) != len(columns):
            return None
        for i, v in enumerate(row):
            if isinstance(v, str):
                text_cols.add(columns[i])
            elif isinstance(v, (list, dict)):
                return None
    body = data.replace(b"\n[", b"\n")
    body = body[1:] if body.startswith(b"[") else body
    body = body.replace(b"]\n", b"\n")
    if body.endswith(b"]"):
        body = body[:-1]
    try:
        frame = pd.read_csv(
            io.BytesIO(body),
            header=None,
            names=columns,
            quotechar='"',
            doublequote=False,
            na_values=["null"],
            keep_default_na=False,
            true_values=["true"],
            false_values=["false"],
            dtype=dict.fromkeys(text_cols, object),
            engine="c",
            low_memory=False,
        )
    except Exception:  # noqa: BLE001 - the exact path decides
        return None
    if len(frame) != lines:
        return None
    for col in frame.columns:
        if col not in text_cols and frame[col].dtype == object:
            return None  # a value that was not a number, bool or null: take the exact path
    return frame


def _exact_table(pd, data: bytes, columns: list):
    rows = json.loads(b"[" + data.rstrip(b"\n").replace(b"\n", b",") + b"]")
    if any(isinstance(v, dict) for r in rows[:1000] for v in r) or b'{"$' in data:
        rows = [[_decode(v) if isinstance(v, (dict, list)) else v for v in r] for r in rows]
    cols = list(zip(*rows)) if rows else [() for _ in columns]
    if rows and len(cols) != len(columns):
        return pd.DataFrame.from_records(rows, columns=columns)
    return pd.DataFrame({c: list(v) for c, v in zip(columns, cols)}, columns=columns)


# --- registered files (/data) -------------------------------------------------------------------

# load_file's refusals (the tool returns the code, message and hint: tool.py, _failure).
SANDBOX_DATA_FILE_NOT_FOUND = "SANDBOX_DATA_FILE_NOT_FOUND"
SANDBOX_DATA_FILE_AMBIGUOUS = "SANDBOX_DATA_FILE_AMBIGUOUS"
SANDBOX_DATA_FILE_UNREADABLE = "SANDBOX_DATA_FILE_UNREADABLE"
SANDBOX_FILE_FORMAT_UNSUPPORTED = "SANDBOX_FILE_FORMAT_UNSUPPORTED"

_CODECS = {"utf-8": "utf-8-sig", "utf-16": "utf-16", "latin-1": "latin-1", "cp1252": "cp1252"}
_EXCEL_ENGINES = {".xlsx": "openpyxl", ".xlsm": "openpyxl", ".xls": "xlrd", ".ods": "odf"}


class LoadFileError(ValueError):
    """``load_file``'s refusal, as ``CODE: message Hint: hint`` (the tool reports the code)."""

    def __init__(self, code: str, message: str, hint: str) -> None:
        super().__init__(f"{code}: {message} Hint: {hint}")
        self.code = code


def _files() -> dict:
    path = os.path.join(WORKDIR, ".assay-runner", "files.json")
    try:
        return _meta_file(path)
    except FileNotFoundError:
        return {"root": "/data", "tables": []}


def list_files() -> list:
    """The registered files readable here (read-only): name, file, format, sheet, paths, columns."""
    manifest = _files()
    return [
        {
            "name": t["name"],
            "file": t["file"],
            "format": t["format"],
            "sheet": t.get("sheet"),
            "paths": [os.path.join(manifest["root"], p) for p in t["paths"]],
            "columns": t.get("columns") or [],
        }
        for t in manifest["tables"]
    ]


def _entry(name: str, sheet):
    tables = _files()["tables"]
    names = [t["name"] for t in tables]
    listing = ", ".join(repr(n) for n in names) or "none"
    if not tables:
        raise LoadFileError(
            SANDBOX_DATA_FILE_NOT_FOUND,
            "this run has no registered files",
            "Register files with the question (assay ask --file, or the service's uploads).",
        )
    found = [t for t in tables if t["name"] == name] or [t for t in tables if t["file"] == name]
    if not found:
        raise LoadFileError(
            SANDBOX_DATA_FILE_NOT_FOUND,
            f"no registered file {name!r}; available: {listing}",
            "Call load_file with one of those names (list_files() shows them).",
        )
    if sheet is not None:
        sheets = [t.get("sheet") for t in found]
        found = [t for t in found if t.get("sheet") == sheet]
        if not found:
            raise LoadFileError(
                SANDBOX_DATA_FILE_NOT_FOUND,
                f"{name!r} has no sheet {sheet!r}; its sheets: {', '.join(map(repr, sheets))}",
                "Pass one of those sheets.",
            )
    if len(found) > 1:
        raise LoadFileError(
            SANDBOX_DATA_FILE_AMBIGUOUS,
            f"{name!r} is a workbook of several sheets: "
            + ", ".join(f"{t.get('sheet')!r} (table {t['name']!r})" for t in found),
            "Pass sheet=..., or load the sheet's table name.",
        )
    return found[0]


def load_file(name: str, *, sheet=None):
    """A registered file as a pandas DataFrame, read the way the files datasource's SQL reads it (the
    sniffed delimiter, encoding and header, the same column names). ``sheet``: a workbook's sheet."""
    entry = _entry(name, sheet)
    if entry.get("problem"):
        raise LoadFileError(
            SANDBOX_DATA_FILE_UNREADABLE,
            entry["problem"],
            "Make the file readable (chmod o+r) and register it again, or query it with sql_query.",
        )
    fmt = entry["format"]
    if fmt == "parquet":
        raise LoadFileError(
            SANDBOX_FILE_FORMAT_UNSUPPORTED,
            f"{entry['name']!r} is a Parquet file, and the sandbox has no Parquet reader (no pyarrow)",
            f"Query it with sql_query (SELECT ... FROM {entry['name']}) and pass the result's artifact "
            "id in `inputs` to read it with load_artifact.",
        )
    import pandas as pd

    root = _files()["root"]
    paths = [os.path.join(root, p) for p in entry["paths"]]
    frames = []
    for path in paths:
        try:
            frames.append(_read(pd, path, entry))
        except FileNotFoundError:
            raise LoadFileError(
                SANDBOX_DATA_FILE_NOT_FOUND,
                f"{path} is not in this sandbox",
                "Pass reset=true to start a sandbox with the run's files.",
            ) from None
        except PermissionError:
            raise LoadFileError(
                SANDBOX_DATA_FILE_UNREADABLE,
                f"{path} cannot be read by the sandbox's user",
                "Make the file readable (chmod o+r) and register it again, or query it with sql_query.",
            ) from None
    frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    columns = entry.get("columns") or []
    if len(columns) == len(frame.columns) and fmt in ("csv", "excel"):
        frame.columns = columns  # the registered names (a duplicate header is a_1, as in SQL)
    elif fmt in ("json", "ndjson") and set(columns) == set(frame.columns):
        frame = frame[columns]
    return frame


def _read(pd, path: str, entry: dict):
    fmt = entry["format"]
    if fmt == "csv":
        return pd.read_csv(
            path,
            sep=entry.get("delimiter") or ",",
            encoding=_CODECS.get(entry.get("encoding") or "utf-8", "utf-8-sig"),
            header=0,
            quotechar='"',
            compression="infer",
            low_memory=False,
        )
    if fmt == "ndjson":
        with open(path, encoding="utf-8-sig") as fh:
            return pd.DataFrame([json.loads(line) for line in fh if line.strip()])
    if fmt == "json":
        with open(path, encoding="utf-8-sig") as fh:
            value = json.load(fh)
        return pd.DataFrame(value if isinstance(value, list) else [value])
    if fmt == "excel":
        ext = os.path.splitext(path)[1].lower()
        engine = _EXCEL_ENGINES.get(ext)
        try:
            __import__({"openpyxl": "openpyxl", "xlrd": "xlrd", "odf": "odf"}[engine or "openpyxl"])
        except ImportError:
            raise LoadFileError(
                SANDBOX_FILE_FORMAT_UNSUPPORTED,
                f"the sandbox image has no reader for {ext} workbooks ({engine})",
                "Rebuild the sandbox image (assay sandbox build-image), or query the sheet with "
                "sql_query and use load_artifact.",
            ) from None
        return pd.read_excel(path, sheet_name=entry.get("sheet") or 0, engine=engine)
    raise LoadFileError(
        SANDBOX_FILE_FORMAT_UNSUPPORTED,
        f"{entry['name']!r}: format {fmt!r} is not read here",
        "Query it with sql_query and use load_artifact.",
    )
