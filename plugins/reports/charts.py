"""Native chart blocks drawn as SVG: a Vega-Lite spec from the resolved points, rendered offline by
``vl-convert-python`` (the ``reports`` extra). See docs/reports.md, "Charts", for why this library.

Bars start at zero (a bar's length is its value); the axes of a scatter or line chart span its data, so
points far from zero are not squashed into a corner.

Only points read from verified evidence are drawn (:class:`.resolve.ResolvedChart`). A chart that
cannot be drawn (the library is missing, no point has a number) raises :class:`ChartUnavailable`
with the reason; the renderer then shows the points as a table and lists the reason as a warning.
"""

from __future__ import annotations

import math
from typing import Any

from .formats import NAMED

WIDTH, HEIGHT = 620, 260
MARKS = {
    "bar": "bar",
    "line": {"type": "line", "point": True},
    "scatter": {"type": "point", "filled": True},
}


class ChartUnavailable(Exception):
    """Why a chart block could not be drawn (the renderer falls back to a table)."""


def chart_spec(chart: Any) -> dict[str, Any]:
    """The Vega-Lite spec of a resolved chart: its points inline, nothing fetched."""
    points = [{"x": _plain(x), "y": _number(y)} for x, y in chart.rows]
    drawable = [p for p in points if p["y"] is not None]
    if not drawable:
        raise ChartUnavailable(f"no plotted row has a number in {chart.y!r}")
    numeric_x = all(
        isinstance(p["x"], (int, float)) and not isinstance(p["x"], bool) for p in drawable
    )
    x_type = (
        "quantitative"
        if numeric_x and chart.chart != "bar"
        else "ordinal"
        if numeric_x
        else "nominal"
    )
    x: dict[str, Any] = {"field": "x", "type": x_type, "title": chart.x}
    y: dict[str, Any] = {"field": "y", "type": "quantitative", "title": chart.y}
    if x_type != "quantitative":
        x["sort"] = None  # the order of the rows (the citation's sort), not alphabetical
    else:
        x["scale"] = {
            "zero": False
        }  # the axis spans the data, not 0..max (points were squashed in a corner)
    if chart.chart != "bar":
        y["scale"] = {
            "zero": False
        }  # a bar's length is its value, so bars start at zero; points and lines need not
    formats = getattr(chart, "formats", None) or {}
    for axis, column in ((x, chart.x), (y, chart.y)):
        spec = axis_format(formats.get(column))
        if spec and axis["type"] == "quantitative":
            axis["axis"] = {"format": spec}  # the axis reads like the table: 11.11%, not 0.1111
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",  # an identifier; never fetched
        "width": WIDTH,
        "height": HEIGHT,
        "data": {"values": drawable},
        "mark": MARKS[chart.chart],
        "encoding": {"x": x, "y": y},
        "config": {"font": "DejaVu Sans", "view": {"stroke": None}},
    }


def axis_format(fmt: str | None) -> str | None:
    """The document's format of a column as the chart library's number format (d3's, which reads a Python
    spec such as ``.2%`` or ``$,.0f`` the same way); ``None`` when it has none (``plain``, another currency)."""
    spec = NAMED.get(fmt, fmt) if fmt else None
    if not spec or spec[0] in "€£¥":
        return None
    return spec


def chart_svg(chart: Any) -> bytes:
    """The chart as SVG bytes (deterministic: the same points give the same bytes)."""
    spec = chart_spec(chart)
    try:
        import vl_convert
    except ImportError:
        raise ChartUnavailable(
            "the chart library is not installed (pip install 'assay[reports]' "
            "for vl-convert-python)"
        ) from None
    try:
        return vl_convert.vegalite_to_svg(spec).encode("utf-8")
    except Exception as exc:  # noqa: BLE001 - the library's own error types vary by version
        raise ChartUnavailable(f"the chart library failed: {str(exc)[:200]}") from None


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return value if not isinstance(value, float) or math.isfinite(value) else None
    try:
        number = float(str(value))  # a Decimal read back as text
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
