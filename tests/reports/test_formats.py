"""Figures people read: one way to write a number in prose and tables, per column from the document,
with defaults by type and name; the provenance keeps the exact value; charts span their data; sources
show the whole SQL."""

from __future__ import annotations

import decimal
import json
import re
from types import SimpleNamespace

import pytest

from assay import AssayError
from assay.kernel.evidence import capture_sql_execution


def sql_artifact(run, columns, rows, sql="select ...", dialect="postgresql"):
    return capture_sql_execution(
        run.artifacts,
        columns=columns,
        rows=iter(rows),
        sql=sql,
        database="db",
        dialect=dialect,
        elapsed_ms=1.0,
    )


def render(run, fmt, doc) -> str:
    return run.kernel.renderer(fmt).render(doc, run.artifacts).decode()


@pytest.mark.parametrize(
    ("value", "fmt", "name", "text"),
    [
        (
            0.1111111111111111,
            None,
            "share",
            "0.1111",
        ),  # the README demo's table printed every digit
        (
            decimal.Decimal("2091112.7"),
            None,
            "revenue",
            "2,091,112.70",
        ),  # money: two decimals, separators
        (100012, None, "orders", "100,012"),
        (
            100012,
            None,
            "total_revenue",
            "100,012.00",
        ),  # a whole NUMERIC is stored as an int: still money
        (1234, None, "store_id", "1234"),
        (2024, None, "year", "2024"),  # ids and years are written plain
        (1234.5678, None, "avg_items", "1,234.57"),
        (0.0000123456, None, "p_value", "0.00001235"),
        (0.0716, "percent", "rate", "7.2%"),
        (decimal.Decimal("-1234.5"), "currency", "x", "-$1,234.50"),
        (decimal.Decimal("2091112.7"), "thousands", "x", "2,091,112.7"),
        (2091112.7, "integer", "x", "2,091,113"),
        (12345678901234567890, "€,.0f", "x", "€12,345,678,901,234,567,890"),
        (0.1, ".3f", "x", "0.100"),
        ("north", None, "revenue", "north"),
        (None, None, "revenue", "--"),
        (True, None, "flag", "True"),
    ],
)
def test_a_value_is_written_by_its_format_else_by_its_type_and_name(value, fmt, name, text):
    from assay.plugins.reports.formats import format_value

    assert format_value(value, fmt, name) == text


def test_the_demo_fraction_and_postgresql_money_read_as_people_read_them(run):
    record = sql_artifact(
        run,
        ["region", "share", "revenue"],
        [["north", 0.1111111111111111, {"$decimal": "2091112.7"}], ["south", 0.5, 100012]],
    )
    block = {"type": "table", "artifact_id": record.artifact_id}
    markdown = render(run, "markdown", {"title": "t", "blocks": [block]})
    assert "| north | 0.1111 | 2,091,112.70 |\n| south | 0.5 | 100,012.00 |" in markdown
    page = render(run, "html", {"title": "t", "blocks": [block]})
    assert '<td class="num" title="exact: 0.1111111111111111">0.1111</td>' in page
    assert '<td class="num" title="exact: 2091112.7">2,091,112.70</td>' in page


def test_prose_and_tables_write_a_value_the_same_way(run):
    record = sql_artifact(run, ["store", "orders", "refund_rate"], [["a", 100012, 0.0716]])
    doc = {
        "title": "t",
        "blocks": [
            {
                "type": "text",
                "text": "Store a took {n} orders, {r} refunded.",
                "cite": {
                    "n": {"artifact_id": record.artifact_id, "path": [0, "orders"]},
                    "r": {"artifact_id": record.artifact_id, "path": [0, 2]},
                },
            },  # by position: still refund_rate
            {"type": "table", "artifact_id": record.artifact_id},
        ],
    }
    markdown = render(run, "markdown", doc)
    assert "Store a took 100,012[^1] orders, 0.0716[^1] refunded." in markdown
    assert "| a | 100,012 | 0.0716 |" in markdown
    doc["formats"] = {"refund_rate": "percent"}
    markdown = render(run, "markdown", doc)
    assert (
        "100,012[^1] orders, 7.2%[^1] refunded." in markdown
        and "| a | 100,012 | 7.2% |" in markdown
    )


def test_the_provenance_keeps_the_exact_value_beside_what_was_shown(run):
    record = sql_artifact(run, ["store", "refund_rate"], [["a", 0.07161234]])
    doc = {
        "title": "t",
        "formats": {"refund_rate": "percent"},
        "blocks": [
            {
                "type": "number",
                "label": "Rate",
                "artifact_id": record.artifact_id,
                "path": [0, "refund_rate"],
            },
            {"type": "table", "artifact_id": record.artifact_id},
        ],
    }
    _, citations = run.kernel.renderer("markdown").render_cited(doc, run.artifacts)
    assert citations[0]["rendered"] == "7.2%" and citations[0]["exact"] == "0.07161234"
    assert citations[0]["format"] == "percent" and citations[1]["formats"] == {
        "refund_rate": "percent"
    }
    out = json.loads(render(run, "json", doc))
    assert out["blocks"][1]["rows"] == [["a", 0.07161234]]  # the data stays exact
    assert out["blocks"][1]["texts"] == [["a", "7.2%"]]


def test_a_format_that_writes_no_number_is_refused(run):
    record = sql_artifact(run, ["v"], [[1]])
    with pytest.raises(AssayError, match=r"formats\['v'\] = 'dollars'"):
        render(
            run,
            "markdown",
            {
                "title": "t",
                "formats": {"v": "dollars"},
                "blocks": [{"type": "table", "artifact_id": record.artifact_id}],
            },
        )


def _points(svg: str) -> list[tuple[float, float]]:
    marks = svg.split("role-mark", 1)[1]
    return [
        (float(x), float(y))
        for x, y in re.findall(
            r'role="graphics-symbol"[^>]*transform="translate\(([-\d.]+),([-\d.]+)\)"', marks
        )
    ]


def test_a_scatter_plot_spans_its_data_not_zero_to_max():
    pytest.importorskip("vl_convert", reason="the reports extra (vl-convert-python)")
    from assay.plugins.reports.charts import HEIGHT, WIDTH, chart_svg

    chart = SimpleNamespace(
        rows=[[1000 + i, 50000 + (i * 7) % 40] for i in range(30)],
        chart="scatter",
        x="visits",
        y="revenue",
    )
    points = _points(chart_svg(chart).decode())
    assert len(points) == 30
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    assert (
        max(xs) - min(xs) > WIDTH * 0.8 and max(ys) - min(ys) > HEIGHT * 0.8
    )  # was a dot in one corner


def test_sources_show_the_whole_sql_collapsed_under_its_first_line(run):
    sql = (
        "SELECT s.store_name, sum(o.amount) AS revenue\nFROM orders o JOIN stores s ON s.id = o.store_id\n"
        + "".join(f"  AND o.channel <> 'test_{i}'\n" for i in range(12))
        + "GROUP BY s.store_name -- the end"
    )
    record = sql_artifact(run, ["store_name", "revenue"], [["a", 1]], sql=sql)
    doc = {"title": "t", "blocks": [{"type": "table", "artifact_id": record.artifact_id}]}
    page = render(run, "html", doc)
    assert (
        '<details class="origin"><summary>' in page
        and "GROUP BY s.store_name -- the end</code></pre></details>" in page
    )
    markdown = render(run, "markdown", doc)
    assert "    ```sql\n    SELECT s.store_name, sum(o.amount) AS revenue\n" in markdown
    assert "    GROUP BY s.store_name -- the end\n    ```" in markdown


def test_a_charts_axis_reads_like_the_table():
    pytest.importorskip("vl_convert", reason="the reports extra (vl-convert-python)")
    from assay.plugins.reports.charts import chart_svg

    chart = SimpleNamespace(
        rows=[["a", 0.1111], ["b", 0.0975]],
        chart="bar",
        x="store",
        y="refund_rate",
        formats={"refund_rate": ".2%"},
    )
    svg = chart_svg(chart).decode()
    assert "10.00%" in svg and "0.10<" not in svg
