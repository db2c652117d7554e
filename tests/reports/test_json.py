"""The json renderer: every citation resolved, checked against the published schema (docs/report.schema.json)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from tests.reports.conftest import analysis, chart, sales

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "docs" / "report.schema.json").read_text()
)


def full_document(run):
    record, result, png = sales(run), analysis(run, {"rate": 0.25, "when": None}), chart(run)
    return record, {
        "title": "Everything",
        "status": "partial",
        "blocks": [
            {"type": "heading", "text": "Numbers"},
            {
                "type": "text",
                "text": "Rate {rate:.1%}, missing {when}.",
                "cite": {
                    "rate": {"artifact_id": result.artifact_id, "path": "rate"},
                    "when": {"artifact_id": result.artifact_id, "path": "when"},
                },
            },
            {
                "type": "number",
                "label": "North",
                "artifact_id": record.artifact_id,
                "path": [0, "revenue"],
            },
            {
                "type": "number",
                "label": "Gone",
                "artifact_id": record.artifact_id,
                "path": [1, 1],
                "unavailable": "hash",
            },
            {
                "type": "table",
                "artifact_id": record.artifact_id,
                "sort": [{"column": "orders", "descending": True}],
            },
            {"type": "image", "artifact_id": png.artifact_id, "caption": "c"},
            {
                "type": "chart",
                "chart": "scatter",
                "artifact_id": record.artifact_id,
                "x": "orders",
                "y": "revenue",
            },
        ],
        "gaps": [
            {"block": 3, "kind": "value", "artifact_id": record.artifact_id, "reason": "hash"}
        ],
    }


def test_json_report_validates_against_the_published_schema(run):
    _, doc = full_document(run)
    out = json.loads(run.kernel.renderer("json").render(doc, run.artifacts))
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft202012Validator(SCHEMA).validate(out)
    assert out["status"] == "partial" and out["warnings"][0]["reason"] == "hash"


def test_every_json_value_carries_its_artifact_selector_and_sha256(run):
    record, doc = full_document(run)
    out = json.loads(run.kernel.renderer("json").render(doc, run.artifacts))
    north = out["blocks"][2]["value"]
    assert north["value"] == 1234.5 and north["text"] == "1,234.50"
    assert north["citation"] == {
        "artifact_id": record.artifact_id,
        "selector": {"path": [0, "revenue"]},
        "sha256": record.sha256,
        "source": 2,
    }
    assert out["blocks"][1]["parts"][3] == {
        "text": "--",
        "value": None,
        "null": True,
        "citation": out["blocks"][1]["parts"][3]["citation"],
    }
    gone = out["blocks"][3]["value"]
    assert gone["unavailable"] == "hash" and gone["citation"] is None and gone["text"] == "--"
    table = out["blocks"][4]
    assert (
        table["rows"][0] == ["north", 1234.5, 10] and table["citation"]["sha256"] == record.sha256
    )
    assert [s["number"] for s in out["sources"]] == [1, 2, 3]
