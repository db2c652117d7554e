"""Figures written in a report's prose instead of cited: found, marked in every format, flagged by render_report."""

from __future__ import annotations

import json

from assay.plugins.reports.html import HtmlRenderer
from assay.plugins.reports.json_report import JsonRenderer
from assay.plugins.reports.markdown import MarkdownRenderer, render_report
from assay.plugins.reports.resolve import resolve_report
from tests.reports.conftest import sales


def document(aid: str) -> dict:
    return {
        "title": "Sales in 2024",
        "blocks": [
            {"type": "heading", "text": "The 3 regions, up 12%"},
            {
                "type": "text",
                "text": "North sold {north}, about $1.2K, and grew 37% since 2023-01-05.",
                "cite": {"north": {"artifact_id": aid, "path": [0, "revenue"]}},
            },
            {
                "type": "number",
                "label": "North's revenue (1 of 4 figures)",
                "artifact_id": aid,
                "path": [0, "revenue"],
            },
            {
                "type": "table",
                "artifact_id": aid,
                "columns": ["region", "revenue"],
                "caption": "All 3 regions, $99 min",
            },
        ],
    }


def test_every_figure_written_in_the_prose_is_found_with_its_place(run):
    aid = sales(run).artifact_id
    found = [(f.block, f.where, f.text) for f in resolve_report(document(aid), run).unbound]
    # the year of the title and the date are not figures; "3 regions" is the count the table shows
    assert found == [
        (0, "heading", "12%"),
        (1, "text", "$1.2K"),
        (1, "text", "37%"),
        (2, "label", "1"),
        (2, "label", "4"),
        (3, "caption", "$99"),
    ]


def test_a_document_whose_numbers_are_all_citations_has_none(run):
    aid = sales(run).artifact_id
    clean = {
        "title": "Sales",
        "blocks": [
            {
                "type": "text",
                "text": "North sold {north} in 2024.",
                "cite": {"north": {"artifact_id": aid, "path": [0, "revenue"]}},
            }
        ],
    }
    assert resolve_report(clean, run).unbound == []
    page = HtmlRenderer().render(clean, run).decode()
    assert "unbound" not in page.split("<main>", 1)[1] and "no warnings" in page


def test_the_html_marks_each_figure_and_its_banner_is_not_green(run):
    page = HtmlRenderer().render(document(sales(run).artifact_id), run).decode()
    assert '<mark class="unbound"' in page and ">37%</mark>" in page and ">12%</mark></h2>" in page
    assert (
        'class="banner status-completed unverified"' in page
        and "6 figures not read from the evidence" in page
    )
    assert "figure 37% in block 1 (text) is not a bound citation" in page


def test_markdown_and_json_list_them(run):
    doc = document(sales(run).artifact_id)
    markdown = MarkdownRenderer().render(doc, run).decode()
    assert "## Figures not bound to evidence" in markdown and "- 37% in block 1 (text)" in markdown
    data = json.loads(JsonRenderer().render(doc, run))
    assert [f["text"] for f in data["unbound_figures"]] == ["12%", "$1.2K", "37%", "1", "4", "$99"]


def test_render_report_flags_them_in_its_result(run):
    result = render_report.invoke(
        render_report.validate_arguments({"document": document(sales(run).artifact_id)}), run
    )
    assert result.success and result.metadata["unbound_figures"][:2] == [
        "12% in block 0 (heading)",
        "$1.2K in block 1 (text)",
    ]
    assert result.content.startswith("warning: figures not bound to evidence")
