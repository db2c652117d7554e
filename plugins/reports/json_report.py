"""The ``json`` report renderer (plugin ``json_report``, registered lazily by :mod:`.plugins`).

The document with every citation resolved, from the same verified reads as
every other format (:mod:`assay.plugins.reports.resolve`): each value carries
what it was read from (artifact id, selector, SHA-256), and the report carries
its status and warnings. Its JSON Schema is ``docs/report.schema.json``
(``SCHEMA_ID``); a test validates real output against it.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from typing import Any

from .resolve import (
    MISSING_MARK,
    plain_text,
    resolve_report,
)
from .resolved import (
    ResolvedChart,
    ResolvedHeading,
    ResolvedImage,
    ResolvedNumber,
    ResolvedReport,
    ResolvedTableBlock,
    ResolvedText,
    Source,
    Value,
)

SCHEMA_ID = (
    "https://assay.invalid/schemas/report/1"  # the $id of docs/report.schema.json (never fetched)
)


class JsonRenderer:
    """Renders a report document as JSON with every citation resolved."""

    name = "json"
    media_type = "application/json"

    def render(self, document: Any, reader: Any) -> bytes:
        return self.render_cited(document, reader)[0]

    def render_cited(self, document: Any, reader: Any) -> tuple[bytes, list[dict[str, Any]]]:
        report = resolve_report(document, reader)
        text = json.dumps(report_json(report), ensure_ascii=False, indent=2, allow_nan=False)
        return (text + "\n").encode("utf-8"), report.citations


def report_json(report: ResolvedReport) -> dict[str, Any]:
    """The resolved report as plain JSON data (what ``docs/report.schema.json`` describes)."""
    doc = report.document
    return {
        "$schema": SCHEMA_ID,
        "title": report.title,
        "status": doc.status or "completed",
        "draft": doc.draft,
        "missing_mark": MISSING_MARK,
        "warnings": [w.to_dict() for w in report.warnings],
        "unbound_figures": [
            {
                "block": f.block,
                "where": f.where,
                "text": f.text,
                "start": f.start,
                "end": f.end,
                **({"part": f.part} if f.part is not None else {}),
            }
            for f in report.unbound
        ],
        "blocks": [_block(block) for block in report.blocks],
        "sources": [_source(s) for s in report.sources.values()],
        "citations": [_data(c) for c in report.citations],
    }


def _block(block: Any) -> dict[str, Any]:
    if isinstance(block, ResolvedHeading):
        return {"type": "heading", "block": block.index, "text": block.text, "level": block.level}
    if isinstance(block, ResolvedText):
        return {
            "type": "text",
            "block": block.index,
            "parts": [p if isinstance(p, str) else _value(p) for p in block.parts],
        }
    if isinstance(block, ResolvedNumber):
        return {
            "type": "number",
            "block": block.index,
            "label": block.label,
            "value": _value(block.value),
        }
    if isinstance(block, ResolvedTableBlock):
        return {
            "type": "table",
            "block": block.index,
            "columns": block.columns,
            "rows": [[_data(v) for v in row] for row in block.rows],
            "texts": [[block.text(v, c) for v, c in zip(row, block.columns)] for row in block.rows],
            "rows_shown": block.shown,
            "total_rows": block.total,
            "complete": block.complete,
            "caption": block.caption,
            "citation": _citation(block.source, block.selector),
        }
    if isinstance(block, ResolvedImage):
        return {
            "type": "image",
            "block": block.index,
            "caption": block.caption,
            "media_type": block.media_type,
            "content_uri": block.content_uri,
            "citation": _citation(block.source, None),
        }
    if isinstance(block, ResolvedChart):
        return {
            "type": "chart",
            "block": block.index,
            "chart": block.chart,
            "x": block.x,
            "y": block.y,
            "points": [[_data(v) for v in row] for row in block.rows],
            "total_rows": block.total,
            "caption": block.caption,
            "user_caption": block.user_caption,
            "citation": _citation(block.source, block.selector),
        }
    raise TypeError(f"unknown resolved block {block!r}")


def _value(value: Value) -> dict[str, Any]:
    out: dict[str, Any] = {"text": value.text, "value": _data(value.value), "null": value.null}
    if value.degraded:
        out["unavailable"] = value.reason
        out["citation"] = None
    else:
        out["citation"] = _citation(value.source, value.selector)
    return out


def _citation(source: Source | None, selector: Any) -> dict[str, Any] | None:
    if source is None:
        return None
    return {
        "artifact_id": source.artifact_id,
        "selector": _data(selector),
        "sha256": source.sha256,
        "source": source.number,
    }


def _source(source: Source) -> dict[str, Any]:
    return {
        "number": source.number,
        "artifact_id": source.artifact_id,
        "run_id": source.record.run_id,
        "kind": source.kind,
        "sha256": source.sha256,
        "complete": source.complete,
        "origin": source.origin(200),
        "code": source.code(),
        "incomplete": source.record.incomplete_note() or None,
    }


def _data(value: Any) -> Any:
    """A decoded value as JSON: numbers stay numbers; what JSON has no type for is its text."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else plain_text(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return [_data(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _data(v) for k, v in value.items()}
    return plain_text(value)


RENDERER = JsonRenderer()  # what the plugin registers (lazily: assay.plugins.reports.plugins)
