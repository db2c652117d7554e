"""Which rows a table citation shows: filter, then sort, then the first ``max_rows``.

Shared by every report renderer, so a table shows what its citation says in
each output format: "the 10 highest refund rates" sorts the whole artifact by
that column, not the first 10 rows of whatever order the query returned.

A SQL artifact's rows are its result. A Python artifact's rows are the list at
``path`` in its REPORT_RESULT: a list of records (a DataFrame is captured as
one) or of scalars (one column, ``value``). Every read is hash-verified.
Sorting or filtering an incomplete artifact is refused: the kept rows are not
the whole result, so their order or filter would misstate it.
"""

from __future__ import annotations

import decimal
import json
from dataclasses import dataclass, field
from typing import Any

from assay import AssayError
from assay.kernel.evidence import (
    ArtifactIncomplete,
    decode,
    get_record,
    open_verified_content,
    read_artifact_result,
)

REPORT_CITATION_INVALID = "REPORT_CITATION_INVALID"

_OPS = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}


@dataclass
class ResolvedTable:
    """The rows a table block shows, and what was applied to get them."""

    record: Any
    columns: list[str]  # the shown columns, in order
    rows: list[list[Any]]  # the shown rows, projected onto ``columns``
    total_rows: int | None  # rows the artifact holds (kept rows when incomplete)
    matched_rows: (
        int | None
    )  # rows left after the filter (``None``: not counted, no filter applied)
    selector: dict[str, Any] = field(
        default_factory=dict
    )  # the citation's selector, for provenance

    def describe(self) -> str:
        """What is shown: "10 of 300 rows, sorted by rate descending" (no sort named: the artifact's order)."""
        sel = self.selector
        shown = len(self.rows)
        parts = []
        if sel.get("filter"):
            conds = " and ".join(_cond(f) for f in sel["filter"])
            parts.append(
                f"{shown} of the {self.matched_rows} rows where {conds} ({self.total_rows} in all)"
            )
        else:
            parts.append(f"{shown} of {self.total_rows} rows")
        if sel.get("sort"):
            parts.append(
                "sorted by "
                + ", ".join(
                    f"{k['column']} {'descending' if k.get('descending') else 'ascending'}"
                    for k in sel["sort"]
                )
            )
        return ", ".join(parts)


def _cond(f: dict[str, Any]) -> str:
    if f["op"] in ("is_null", "not_null"):
        return f"{f['column']} {'is NULL' if f['op'] == 'is_null' else 'is not NULL'}"
    symbol = {"eq": "=", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[f["op"]]
    return f"{f['column']} {symbol} {f['value']!r}"


def _invalid(message: str, hint: str = "") -> AssayError:
    return AssayError(REPORT_CITATION_INVALID, message, hint or "Cite columns the artifact has.")


def resolve_table(
    reader: Any, block: Any, record: Any | None = None, *, max_chars: int = 20_000
) -> ResolvedTable:
    """The rows ``block`` (a :class:`assay.kernel.reports.TableBlock`) shows, read from ``reader``
    (``max_chars``: the budget of the rows read in the artifact's order)."""
    record = record if record is not None else get_record(reader, block.artifact_id)
    ordered = bool(block.sort or block.filter)
    if record.is_tabular:
        if block.path is not None:
            raise _invalid(
                "path applies to a Python artifact's result; a SQL artifact's rows are its result",
                "Drop path, or cite the Python artifact whose result holds the rows.",
            )
        if not ordered:
            return _head(reader, record, block, max_chars)
        if not record.complete:
            raise _invalid(
                f"artifact {record.artifact_id} is incomplete ({record.incomplete_note()}): sorting or "
                "filtering its kept rows would misstate the whole result",
                "Compute the ordered/filtered rows in the query or in code_interpreter, then cite that.",
            )
        columns, rows = list(record.columns), list(_tabular_rows(reader, record))
    elif record.kind == "python":
        columns, rows = _python_rows(reader, record, block.path)
    else:
        raise _invalid(
            f"artifact {record.artifact_id} is a {record.kind} file, not rows",
            "Cite a SQL artifact or a Python artifact whose result is a list of records.",
        )
    total = len(rows)
    shown_columns = _columns(block, columns)
    for f in block.filter:
        rows = _apply_filter(rows, columns, f)
    matched = len(rows)
    for key in reversed(block.sort):
        rows = _sort(rows, columns, key)
    index = [columns.index(c) for c in shown_columns]
    shown = [[row[i] for i in index] for row in rows[: block.max_rows]]
    selector = {
        "columns": shown_columns,
        "limit": block.max_rows,
        "filter": [f.model_dump(mode="json") for f in block.filter],
        "sort": [k.model_dump(mode="json") for k in block.sort],
    }
    if block.path is not None:
        selector["path"] = block.path
    return ResolvedTable(
        record, shown_columns, shown, total, matched if block.filter else total, selector
    )


def all_rows(reader: Any, record: Any, path: Any = None) -> tuple[list[str], list[list[Any]]]:
    """Every row (and the columns) of a SQL artifact, or of the list at ``path`` in a Python result."""
    if record.is_tabular:
        return list(record.columns), list(_tabular_rows(reader, record))
    return _python_rows(reader, record, path)


def _columns(block: Any, columns: list[str]) -> list[str]:
    wanted = block.columns or columns
    named = list(wanted) + [f.column for f in block.filter] + [k.column for k in block.sort]
    unknown = [c for c in dict.fromkeys(named) if c not in columns]
    if unknown:
        raise _invalid(f"no column(s) {unknown}; the artifact has {columns}")
    return list(wanted)


def _head(reader: Any, record: Any, block: Any, max_chars: int = 20_000) -> ResolvedTable:
    """The first rows in the artifact's order: one streaming, verified read (no full scan)."""
    stop = block.max_rows if record.complete else min(block.max_rows, record.row_count or 0)
    selected = read_artifact_result(
        reader,
        record.artifact_id,
        {"rows": [0, stop]},
        max_rows=block.max_rows,
        max_chars=max_chars,
    )
    columns = list(selected.columns)
    shown_columns = _columns(block, columns)
    index = [columns.index(c) for c in shown_columns]
    rows = [[row[i] for i in index] for row in selected.rows or []]
    total = selected.total_rows if selected.total_rows is not None else len(rows)
    return ResolvedTable(
        record,
        shown_columns,
        rows,
        total,
        total,
        {"rows": [0, stop], "columns": shown_columns, "limit": block.max_rows},
    )


def _tabular_rows(reader: Any, record: Any):
    """Every row of a tabular artifact, after its SHA-256 was checked (line 0 is the header)."""
    _, content = open_verified_content(reader, record.artifact_id)
    if isinstance(content, bytes):
        lines = content.split(b"\n")[1:]
        for line in lines:
            if line.strip():
                yield json.loads(line)
        return
    with open(content, "rb") as fh:
        fh.readline()
        for line in fh:
            if line.strip():
                yield json.loads(line)


def _python_rows(reader: Any, record: Any, path: Any) -> tuple[list[str], list[list[Any]]]:
    _, content = open_verified_content(reader, record.artifact_id)
    if isinstance(content, bytes):
        data = content
    else:
        with open(content, "rb") as fh:
            data = fh.read()
    doc = json.loads(data)
    if not doc.get("result_set"):
        raise _invalid(
            f"artifact {record.artifact_id} is a Python run that assigned no REPORT_RESULT",
            "Re-run the calculation assigning its rows to REPORT_RESULT, then cite that artifact.",
        )
    value = doc.get("result")
    if value is None and not record.complete:
        raise ArtifactIncomplete(
            record.artifact_id, "its result was not kept", record.incomplete_note()
        )
    steps = (
        path
        if isinstance(path, list)
        else ([p for p in str(path).split(".") if p] if path is not None else [])
    )
    for step in steps:
        if isinstance(value, dict) and str(step) in value:
            value = value[str(step)]
        elif (
            isinstance(value, list)
            and (isinstance(step, int) or str(step).lstrip("-").isdigit())
            and -len(value) <= int(step) < len(value)
        ):
            value = value[int(step)]
        else:
            raise _invalid(
                f"path {path!r} does not reach rows in artifact {record.artifact_id}'s result",
                'Give the key of the list of records in REPORT_RESULT, such as "by_store".',
            )
    if not isinstance(value, list):
        raise _invalid(
            f"artifact {record.artifact_id}'s result at {path!r} is a {type(value).__name__}, not rows",
            "A table cites a list of records (a DataFrame) or of values.",
        )
    if all(isinstance(v, dict) for v in value):
        columns: list[str] = []
        for v in value:
            columns.extend(k for k in v if k not in columns)
        return columns, [[v.get(c) for c in columns] for v in value]
    if any(isinstance(v, (dict, list)) for v in value):
        raise _invalid(
            f"artifact {record.artifact_id}'s result at {path!r} mixes records and other values"
        )
    return ["value"], [[v] for v in value]


def _apply_filter(rows: list[list[Any]], columns: list[str], f: Any) -> list[list[Any]]:
    i = columns.index(f.column)
    if f.op == "is_null":
        return [r for r in rows if r[i] is None]
    if f.op == "not_null":
        return [r for r in rows if r[i] is not None]
    if f.value is None:
        raise _invalid(
            f"filter {f.op} on {f.column} needs a value", "Use is_null / not_null to test for NULL."
        )
    test, wanted = _OPS[f.op], comparable(f.value)
    try:
        return [r for r in rows if r[i] is not None and _holds(test, comparable(r[i]), wanted)]
    except TypeError:
        raise _invalid(
            f"filter {f.column} {f.op} {f.value!r} compares values of different types",
            "Compare numbers with numbers and text with text.",
        ) from None


def _holds(test: Any, value: Any, wanted: Any) -> bool:
    if _is_nan(value) or _is_nan(wanted):  # NaN equals nothing and orders against nothing
        return test is _OPS["ne"]
    return test(value, wanted)


def _sort(rows: list[list[Any]], columns: list[str], key: Any) -> list[list[Any]]:
    i = columns.index(key.column)
    present = [r for r in rows if r[i] is not None and not _is_nan(comparable(r[i]))]
    nans = [r for r in rows if r[i] is not None and _is_nan(comparable(r[i]))]
    nulls = [r for r in rows if r[i] is None]
    try:
        present.sort(key=lambda r: comparable(r[i]), reverse=key.descending)  # stable either way
    except TypeError:
        kinds = sorted({_kind(r[i]) for r in present})
        raise _invalid(
            f"column {key.column} mixes values that do not sort together ({', '.join(kinds)})",
            "Sort a column whose values are all numbers, all text or all dates; convert the others "
            "in the query or in code_interpreter first.",
        ) from None
    return present + nans + nulls  # NaN after the numbers, NULL last, in either direction


def comparable(value: Any) -> Any:
    """A stored (canonical) value as one that compares by what it means: every number, an exact
    ``{"$decimal": ...}`` (PostgreSQL ``NUMERIC``), a whole decimal stored as an int, or a float,
    as a :class:`decimal.Decimal` (a float by its shortest repr, so ``0.1`` equals ``NUMERIC 0.1``);
    other tagged values decoded; text, dates (ISO text) and booleans as they are."""
    if isinstance(value, dict):
        value = decode(value)
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return decimal.Decimal(value)
    if isinstance(value, float):
        return (
            decimal.Decimal(repr(value))
            if value == value and abs(value) != float("inf")
            else decimal.Decimal(str(value).replace("inf", "Infinity"))
        )
    return value


def _is_nan(value: Any) -> bool:
    return isinstance(value, decimal.Decimal) and value.is_nan()


def _kind(value: Any) -> str:
    value = comparable(value)
    return "number" if isinstance(value, decimal.Decimal) else type(value).__name__
