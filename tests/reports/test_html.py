"""The html renderer: one self-contained page of verified values, escaped, with status and provenance."""

from __future__ import annotations

import re
import sys

from assay import Kernel
from assay.kernel.evidence import capture_file, capture_sql_execution
from tests.reports.conftest import INJECTED, analysis, chart, query, sales


def html(run, document) -> str:
    return run.kernel.renderer("html").render(document, run.artifacts).decode("utf-8")


def test_register_report_renderers_html_is_one_self_contained_page(run):
    record, png = sales(run), chart(run)
    page = html(
        run,
        {
            "title": "Sales",
            "blocks": [
                {"type": "table", "artifact_id": record.artifact_id},
                {"type": "image", "artifact_id": png.artifact_id, "caption": "Revenue"},
                {
                    "type": "chart",
                    "chart": "bar",
                    "artifact_id": record.artifact_id,
                    "x": "region",
                    "y": "orders",
                },
            ],
        },
    )
    assert "<style>" in page and "Content-Security-Policy" in page and "default-src 'none'" in page
    assert "<script" not in page and "<link" not in page
    sources = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert sources and all(s.startswith(("data:image/", "#src-")) for s in sources), sources
    assert 'src="data:image/png;base64,' in page and 'src="data:image/svg+xml;base64,' in page


def test_values_from_a_real_database_cannot_inject_markup(shop, run):
    artifact = query(run, "select id, name, revenue from stores order by id limit 8")
    page = html(
        run,
        {
            "title": INJECTED[0],
            "blocks": [
                {"type": "heading", "text": INJECTED[1]},
                {
                    "type": "text",
                    "text": "first store: {name}",
                    "cite": {"name": {"artifact_id": artifact, "path": [0, "name"]}},
                },
                {
                    "type": "number",
                    "label": INJECTED[2],
                    "artifact_id": artifact,
                    "path": [1, "name"],
                },
                {"type": "table", "artifact_id": artifact, "caption": INJECTED[3]},
                {
                    "type": "chart",
                    "chart": "bar",
                    "artifact_id": artifact,
                    "x": "name",
                    "y": "revenue",
                    "caption": INJECTED[0],
                },
            ],
        },
    )
    for raw in INJECTED[:3]:
        assert raw not in page
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in page
    assert "&lt;/table&gt;&lt;h1&gt;forged&lt;/h1&gt;" in page and "a &amp; b" in page
    assert page.count("<script") == 0 and page.count("<img ") == 1  # the chart only


def test_status_banner_and_draft_watermark(run):
    record = sales(run)
    doc = {
        "title": "t",
        "status": "partial",
        "draft": True,
        "blocks": [
            {
                "type": "number",
                "label": "n",
                "artifact_id": record.artifact_id,
                "path": [0, "orders"],
            }
        ],
    }
    page = html(run, doc)
    assert 'class="banner status-partial"' in page and "Status: partial" in page
    assert 'id="draft-mark"' in page and "DRAFT, not the formal report" in page
    plain = html(run, {"title": "t", "blocks": doc["blocks"]})
    assert "Status: completed" in plain and 'id="draft-mark"' not in plain


def test_tables_right_align_formatted_numbers_and_count_rows(shop, run):
    artifact = query(run, "select region, revenue, orders from stores order by id")
    page = html(
        run,
        {
            "title": "t",
            "blocks": [
                {"type": "table", "artifact_id": artifact, "max_rows": 10, "caption": "Stores"}
            ],
        },
    )
    assert "Stores (10 of 300 rows)" in page
    assert (
        '<th class=num scope="col">revenue</th>' in page
        and '<td class="num" title="exact: 1012.5">1,012.50</td>' in page
    )
    assert '<td class="num">90</td>' in page and "<td>north</td>" in page
    assert '<td class="missing num" title="NULL">--</td>' in page  # store 5 has no revenue


def test_an_incomplete_artifact_is_noted_under_its_table(monkeypatch):
    monkeypatch.setenv("ASSAY_ARTIFACT_MAX_BYTES", "4000")
    monkeypatch.setenv("ASSAY_LOAD_PLUGINS", "local_store,html_report")
    with Kernel().new_run() as run:
        record = capture_sql_execution(
            run.artifacts,
            columns=["id", "name"],
            rows=([i, f"store number {i}"] for i in range(300)),
            sql="select id, name",
            database="w",
            dialect="sqlite",
            elapsed_ms=1,
            count_rest=True,
        )
        assert not record.complete
        page = html(
            run,
            {
                "title": "t",
                "blocks": [{"type": "table", "artifact_id": record.artifact_id, "max_rows": 5}],
            },
        )
    assert f"5 of the {record.row_count} rows kept; the query returned 300" in page
    assert '<p class="note incomplete">INCOMPLETE artifact: ' in page


def test_provenance_on_hover_and_in_the_table_at_the_end(run):
    record = sales(run)
    page = html(
        run,
        {
            "title": "t",
            "blocks": [
                {
                    "type": "number",
                    "label": "North",
                    "artifact_id": record.artifact_id,
                    "path": [0, "revenue"],
                    "format": ",.2f",
                }
            ],
        },
    )
    hover = (
        f'title="artifact {record.artifact_id} · selector {{&#34;path&#34;: [0, &#34;revenue&#34;]}} · '
        f'sha256 {record.sha256[:12]} · exact: 1234.5">1,234.50</span>'
    )
    assert hover in page
    provenance = page.split('id="provenance"')[1]
    assert (
        f"<code>{record.artifact_id}</code>" in provenance
        and f"<code>{record.sha256[:12]}</code>" in provenance
    )
    assert "<td>1,234.50</td><td>1234.5</td>" in provenance  # shown, and the exact value


def test_unavailable_values_and_gaps_are_marked_and_listed_in_the_warnings_box(run):
    record = sales(run)
    page = html(
        run,
        {
            "title": "t",
            "blocks": [
                {
                    "type": "number",
                    "label": "Rate",
                    "artifact_id": record.artifact_id,
                    "path": [0, 1],
                    "unavailable": "ARTIFACT_INTEGRITY_FAILED: hash mismatch",
                }
            ],
            "gaps": [
                {
                    "block": 0,
                    "kind": "value",
                    "artifact_id": record.artifact_id,
                    "reason": "hash mismatch",
                },
                {
                    "block": 1,
                    "kind": "chart",
                    "artifact_id": "art_gone",
                    "reason": "chart omitted: file missing",
                },
            ],
        },
    )
    assert (
        'class="missing degraded" title="not shown: ARTIFACT_INTEGRITY_FAILED: hash mismatch">--</span>'
        in page
    )
    box = page.split('id="warnings"')[1]
    assert "hash mismatch" in box and "chart omitted: file missing" in box and "art_gone" in box
    assert "2 warnings: see the warnings box" in page


def test_a_chart_falls_back_to_a_table_when_it_cannot_be_drawn(run, monkeypatch):
    record = sales(run)
    monkeypatch.setitem(sys.modules, "vl_convert", None)  # the library is not installed
    page = html(
        run,
        {
            "title": "t",
            "blocks": [
                {
                    "type": "chart",
                    "chart": "line",
                    "artifact_id": record.artifact_id,
                    "x": "region",
                    "y": "revenue",
                }
            ],
        },
    )
    assert "Chart shown as a table: the chart library is not installed" in page
    assert "<td>north</td>" in page and "line chart of revenue by region shown as a table" in page
    assert "<img" not in page


def test_a_non_image_artifact_is_omitted_and_listed(run):
    csv = capture_file(
        run.artifacts, data=b"a,b\n1,2\n", name="data.csv", media_type="text/csv", kind="chart"
    )
    page = html(run, {"title": "t", "blocks": [{"type": "image", "artifact_id": csv.artifact_id}]})
    assert "Chart omitted: text/csv is not an image type this report embeds" in page
    assert (
        "<img" not in page and f"chart {csv.artifact_id} omitted" in page.split('id="warnings"')[1]
    )


def test_the_same_document_renders_the_same_bytes(run):
    record, result = sales(run), analysis(run, {"rate": 0.25})
    doc = {
        "title": "t",
        "blocks": [
            {
                "type": "text",
                "text": "{r}",
                "cite": {"r": {"artifact_id": result.artifact_id, "path": "rate"}},
            },
            {
                "type": "chart",
                "chart": "scatter",
                "artifact_id": record.artifact_id,
                "x": "orders",
                "y": "revenue",
            },
        ],
    }
    assert html(run, doc) == html(run, doc)
