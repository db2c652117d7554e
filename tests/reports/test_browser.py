"""HTML reports checked as a person sees them: the system's headless Chromium opens the page."""

from __future__ import annotations

import sqlite3

from tests.reports.conftest import INJECTED, chart, query


def open_report(browser, path):
    page = browser.new_page()
    problems = []
    page.on(
        "console",
        lambda m: (
            problems.append(f"console {m.type}: {m.text}")
            if m.type in ("error", "warning")
            else None
        ),
    )
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.on(
        "request",
        lambda r: (
            problems.append(f"request: {r.url}")
            if not r.url.startswith(("file:", "data:"))
            else None
        ),
    )
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return page, problems


def test_a_report_in_chromium_shows_its_status_numbers_and_charts_and_no_injection(
    shop, run, browser, tmp_path
):
    stores = query(run, "select id, name, region, revenue, orders from stores order by id")
    regions = query(
        run,
        "select region, sum(orders) as orders, round(avg(revenue), 2) as revenue "
        "from stores group by region order by region",
    )
    svg = chart(
        run,
        b'<svg xmlns="http://www.w3.org/2000/svg" width="320" height="120"><rect width="320" '
        b'height="120" fill="#36c"/><script>alert(1)</script></svg>',
        "image/svg+xml",
    )
    doc = {
        "title": "Stores " + INJECTED[0],
        "status": "partial",
        "draft": True,
        "blocks": [
            {
                "type": "text",
                "text": "The first store is called {name}; north sold {north} orders.",
                "cite": {
                    "name": {"artifact_id": stores, "path": [1, "name"]},
                    "north": {"artifact_id": regions, "path": [1, "orders"], "format": ","},
                },
            },
            {
                "type": "number",
                "label": "Revenue of store 2",
                "artifact_id": stores,
                "path": [2, "revenue"],
                "format": ",.2f",
            },
            {"type": "table", "artifact_id": stores, "max_rows": 8, "caption": "Stores"},
            {"type": "chart", "chart": "bar", "artifact_id": regions, "x": "region", "y": "orders"},
            {"type": "chart", "chart": "line", "artifact_id": stores, "x": "id", "y": "revenue"},
            {
                "type": "chart",
                "chart": "scatter",
                "artifact_id": stores,
                "x": "orders",
                "y": "revenue",
            },
            {"type": "image", "artifact_id": svg.artifact_id, "caption": "An SVG chart artifact"},
        ],
        "gaps": [
            {"block": 9, "kind": "chart", "artifact_id": None, "reason": "a chart was left out"}
        ],
    }
    path = tmp_path / "report.html"
    html, citations = run.kernel.renderer("html").render_cited(doc, run.artifacts)
    path.write_bytes(html)
    page, problems = open_report(browser, path)
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert (tmp_path / "report.png").stat().st_size > 10_000

    assert problems == []
    banner = page.locator("#status")
    assert banner.is_visible() and banner.inner_text().startswith("Status: partial")
    assert page.locator("#draft-mark").is_visible()

    charts = page.locator("figure img")
    assert charts.count() == 4
    for i in range(4):
        img = charts.nth(i)
        natural = img.evaluate("e => [e.complete, e.naturalWidth, e.naturalHeight]")
        box = img.bounding_box()
        assert natural[0] and natural[1] > 0 and natural[2] > 0, natural
        assert box and box["width"] > 50 and box["height"] > 50, box

    cited = page.locator(".cited")
    shown = [cited.nth(i).inner_text() for i in range(cited.count())]
    with sqlite3.connect(shop) as db:  # the same figures, asked of the database directly
        north = db.execute("select sum(orders) from stores where region = 'north'").fetchone()[0]
        revenue = db.execute("select revenue from stores where id = 2").fetchone()[0]
    assert (
        shown
        == [INJECTED[1], f"{north:,}", f"{revenue:,.2f}"]
        == [c["rendered"] for c in citations[:3]]
    )
    for i in range(cited.count()):
        assert cited.nth(i).is_visible()
    cells = page.locator("table.data tbody tr")
    assert cells.count() == 8 and "Stores (8 of 300 rows)" in page.inner_text("table.data caption")
    body = page.inner_text("body")
    for raw in INJECTED:
        assert raw in body  # shown as text, never as markup
    assert page.locator("img[src=x]").count() == 0 and page.locator("main h1").count() == 1
    assert "a chart was left out" in page.inner_text("#warnings")
