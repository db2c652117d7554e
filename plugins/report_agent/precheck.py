"""Checks before anything is rendered: is there a bindable result at all, and does the document hold up.

:func:`needs_result` runs before the sub-agent starts. :func:`check_document`
runs on every submitted document, block by block, so the repair loop can say
exactly which block is wrong and the fallback render can leave out only
that block. Among its checks: a table under a heading or caption that claims
an order ("highest refund rate", "top 10") must apply that order: a ``sort``
whose first key is a column the claim names, in the claimed direction, or
(without ``sort``) an artifact whose rows really are in that order.
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

from assay import AssayError
from assay.kernel.reports import (
    ChartBlock,
    HeadingBlock,
    ImageBlock,
    NumberBlock,
    ReportDocument,
    TableBlock,
    TextBlock,
)
from assay.plugins.reports.tables import all_rows

from .errors import (
    REPORT_CITATION_NOT_BINDABLE,
    REPORT_RESERVED_FIELD,
    REPORT_TABLE_ORDER_UNSUPPORTED,
)
from .handback import has_result, runs_of

_HIGH = {
    "highest",
    "top",
    "largest",
    "most",
    "biggest",
    "greatest",
    "maximum",
    "max",
    "leading",
    "best",
    "worst",
}
_LOW = {"lowest", "bottom", "smallest", "least", "fewest", "minimum", "min"}
_EITHER = {"best", "worst", "ranked", "ranking"}


def needs_result(catalog: Any, run_id: str | tuple[str, ...]) -> str | None:
    """Why the run has nothing a report can bind (``None`` when it has).

    Successful SQL artifacts are results (zero rows too). Python artifacts are
    results only with a non-``None`` ``REPORT_RESULT``; printed JSON is not one.
    """
    done = [
        r
        for rid in runs_of(run_id)
        for r in catalog.iter(rid)
        if r.kind in ("sql", "python") and r.status == "succeeded"
    ]
    if not done:
        return (
            "this run has no successful SQL or Python execution: there is nothing to report on yet. "
            "Run the analysis first (sql_query, or code_interpreter assigning REPORT_RESULT)."
        )
    if any(has_result(catalog, r) for r in done):
        return None
    ids = ", ".join(r.artifact_id for r in done[-5:])
    return (
        f"the run's executions ({ids}) hold no structured result: Python that only prints (or assigns "
        "REPORT_RESULT = None) cannot be cited. Re-run the calculation in code_interpreter assigning its "
        "figures to REPORT_RESULT (a dict, list or DataFrame), then call generate_report again."
    )


def check_reserved(doc: ReportDocument) -> None:
    fields = doc.reserved_fields_set()
    if fields:
        raise AssayError(
            REPORT_RESERVED_FIELD,
            f"the document sets fields only the pipeline may set: {fields}",
            "Remove gaps and unavailable: the report pipeline records what cannot be verified.",
        )


def check_document(
    doc: ReportDocument, catalog: Any, run_id: str | tuple[str, ...]
) -> list[tuple[int, AssayError]]:
    """Every block's problem, as ``(block index, error)``; empty when the document holds up."""
    problems: list[tuple[int, AssayError]] = []
    heading = ""
    for index, block in enumerate(doc.blocks):
        if isinstance(block, HeadingBlock):
            heading = block.text
            continue
        try:
            check_block(block, catalog, run_id, heading)
        except AssayError as exc:
            problems.append((index, exc))
    return problems


def _citations(block: Any) -> list[tuple[str, bool]]:
    """(artifact id, whether it must hold a value) for each citation of a block."""
    if isinstance(block, NumberBlock):
        return [(block.artifact_id, True)]
    if isinstance(block, TextBlock):
        return [(c.artifact_id, True) for c in block.cite.values()]
    if isinstance(block, (TableBlock, ImageBlock, ChartBlock)):
        return [(block.artifact_id, not isinstance(block, ImageBlock))]
    return []


def check_block(block: Any, catalog: Any, run_id: str | tuple[str, ...], heading: str = "") -> None:
    for artifact_id, needs_value in _citations(block):
        record = catalog.get(artifact_id)
        if record is None:
            raise AssayError(
                "ARTIFACT_NOT_FOUND",
                f"no artifact {artifact_id!r}",
                "Cite ids report_evidence_manifest lists.",
            )
        if record.run_id not in runs_of(run_id):
            raise AssayError(
                "REPORT_CITATION_OTHER_RUN",
                f"artifact {artifact_id} belongs to another run",
                "Cite this run's evidence (or its thread's) only.",
            )
        if record.status != "succeeded":
            raise AssayError(
                REPORT_CITATION_NOT_BINDABLE,
                f"artifact {artifact_id} records a {record.status} {record.kind} execution",
                "Cite a successful execution's artifact.",
            )
        if needs_value and record.kind == "python" and not has_result(catalog, record):
            raise AssayError(
                REPORT_CITATION_NOT_BINDABLE,
                f"artifact {artifact_id} is a Python run without a REPORT_RESULT (printed output "
                "is not a result)",
                "Ask for the figure with request_report_calculation, or cite another artifact.",
            )
    if isinstance(block, (TableBlock, ChartBlock)):
        check_order_claim(block, catalog, heading)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def _claim(text: str) -> tuple[bool, bool | None]:
    """Whether ``text`` claims an order, and its direction (True: descending; None: either)."""
    words = _words(text)
    high, low = bool(words & (_HIGH - _EITHER)), bool(words & _LOW)
    if high and not low:
        return True, True
    if low and not high:
        return True, False
    return bool(words & (_HIGH | _LOW | _EITHER)), None


def _column_named(column: str, claim_words: set[str]) -> bool:
    parts = [
        p
        for p in re.split(r"[^a-z0-9]+", column.lower())
        if p and p not in {"of", "the", "per", "pct"}
    ]
    return bool(parts) and any(p in claim_words or p.rstrip("s") in claim_words for p in parts)


def check_order_claim(block: TableBlock | ChartBlock, catalog: Any, heading: str) -> None:
    text = f"{heading} {block.caption or ''}"
    claims, descending = _claim(text)
    if not claims:
        return
    words = _words(text)
    if block.sort:
        key = block.sort[0]
        if not _column_named(key.column, words):
            raise AssayError(
                REPORT_TABLE_ORDER_UNSUPPORTED,
                f"{text.strip()!r} claims an order, but the table sorts by {key.column!r}, "
                "which the claim does not name",
                "Sort by the column the heading ranks (first sort key), or change the heading.",
            )
        if descending is not None and key.descending != descending:
            raise AssayError(
                REPORT_TABLE_ORDER_UNSUPPORTED,
                f"{text.strip()!r} claims the {'highest' if descending else 'lowest'} rows, but the "
                f"table sorts {key.column} {'descending' if key.descending else 'ascending'}",
                f"Set descending: {str(descending).lower()} on the first sort key.",
            )
        return
    if _already_ordered(block, catalog, words, descending):
        return
    raise AssayError(
        REPORT_TABLE_ORDER_UNSUPPORTED,
        f"{text.strip()!r} claims an order, but the table shows artifact {block.artifact_id} in its "
        "stored order, which is not ordered by any column the claim names",
        'Add sort: [{"column": <ranked column>, "descending": true}] to the table, or cite the '
        "computed, ordered result.",
    )


def _already_ordered(
    block: TableBlock | ChartBlock, catalog: Any, words: set[str], descending: bool | None
) -> bool:
    """Whether the whole artifact's rows are already in the claimed order on a column the claim names."""
    record = catalog.get(block.artifact_id)
    if record is None or (record.is_tabular and not record.complete):
        return False  # the kept rows of an incomplete artifact say nothing about the whole order
    columns, rows = all_rows(catalog, record, block.path)
    for i, column in enumerate(columns):
        shown = getattr(block, "columns", None) or [
            c for c in (getattr(block, "x", None), getattr(block, "y", None)) if c
        ]
        if shown and column not in shown or not _column_named(column, words):
            continue
        values = [r[i] for r in rows if r[i] is not None]
        try:
            down = all(a >= b for a, b in pairwise(values))
            up = all(a <= b for a, b in pairwise(values))
        except TypeError:
            continue
        if len(values) > 1 and (down if descending else up if descending is False else down or up):
            return True
    return False
