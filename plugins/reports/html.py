"""The ``html`` report renderer (plugin ``html_report``, registered lazily by :mod:`.plugins`): one
self-contained page.

The page is built from :func:`assay.plugins.reports.resolve.resolve_report`, the
same verified values the Markdown renderer shows, and holds everything it
needs: the stylesheet inline, chart artifacts and native charts as ``data:``
URIs, no script and no network (its Content-Security-Policy forbids both, so
even a value that slipped past escaping could not run or fetch anything).

- Status banner at the top (completed / partial / failed); a draft carries a
  DRAFT watermark on every page.
- Every cited number carries its provenance on hover (artifact id, selector,
  SHA-256 prefix) and a footnote; the provenance table at the end lists every
  rendered value.
- Values shown as ``--`` (NULL or unverifiable), omitted charts and charts
  shown as tables are marked where they are and listed in the warnings box;
  so is every figure written in the prose instead of cited (``<mark
  class="unbound">``, :mod:`.figures`), and the banner says how many.
- Every text from the document or the data is escaped by markupsafe: the page
  is built from ``Markup`` templates whose ``format`` escapes each value put
  into them (a value is inserted as markup only when it is itself ``Markup``,
  built here), never by a hand-written escape call at each place.
"""

from __future__ import annotations

import base64
import decimal
import json
from typing import Any

from markupsafe import Markup

from .charts import ChartUnavailable, chart_svg
from .figures import spans
from .html_style import CSS
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

IMAGE_TYPES = ("image/png", "image/svg+xml", "image/jpeg", "image/gif", "image/webp")
IMAGE_MAX_BYTES = 8 << 20  # a bigger chart artifact is listed as omitted, not inlined
CHART_TABLE_ROWS = 20  # a chart that cannot be drawn: its first points as a table
ORIGIN_INLINE_CHARS = 120  # SQL or code up to this long, on one line, stays on its source's line
UNBOUND_TITLE = (
    "not a bound citation: this figure was written in the text, not read from the evidence"
)
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
HEAD = Markup(
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
    f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
    '<meta name="generator" content="assay html report">'
)  # our own constants: markup as written


class HtmlRenderer:
    """Renders a report document as one self-contained HTML page (an ``assay.kernel.reports.ReportRenderer``)."""

    name = "html"
    media_type = "text/html"

    def render(self, document: Any, reader: Any) -> bytes:
        """``reader``: an artifact sink, catalog, run or kernel (what read_artifact_result takes)."""
        return self.render_cited(document, reader)[0]

    def render_cited(self, document: Any, reader: Any) -> tuple[bytes, list[dict[str, Any]]]:
        """The page, and one provenance entry per rendered value (as the Markdown renderer gives)."""
        report = resolve_report(document, reader)
        return _Page(report).build().encode("utf-8"), report.citations


def report_status(report: ResolvedReport) -> str:
    """The status the banner shows: the pipeline's, else ``completed`` (every citation was read, or the
    render would have failed)."""
    return report.document.status or "completed"


def _join(parts: Any, sep: str = "") -> Markup:
    """``parts`` joined: each one escaped unless it is markup already."""
    return Markup(sep).join(parts)


class _Page:
    def __init__(self, report: ResolvedReport) -> None:
        self.report = report
        self.notes: list[
            tuple[int, str, str]
        ] = []  # (block, what, reason): shown in the warnings box

    def build(self) -> str:
        body = [self.block(block) for block in self.report.blocks]
        doc = self.report.document
        status = report_status(self.report)
        unbound = self.report.unbound
        gaps = len(self.report.warnings) + len(self.notes) + len(unbound)
        detail = (
            f"{gaps} warning{'s' if gaps != 1 else ''}: see the warnings box"
            if gaps
            else "no warnings"
        )
        if unbound:
            detail = (
                f"{len(unbound)} figure{'s' if len(unbound) != 1 else ''} not read from the evidence "
                f"({'; '.join(dict.fromkeys(f.text for f in unbound))}); " + detail
            )
        if doc.draft:
            detail = "DRAFT, not the formal report; " + detail
        banner = Markup(
            '<div class="banner status-{status}{flagged}" id="status" role="status" data-status="{status}"{count}>'
            'Status: {status}<span class="detail">{detail}</span></div>'
        ).format(
            status=status,
            flagged=" unverified" if unbound else "",
            detail=detail,
            count=Markup(' data-unbound-figures="{}"').format(len(unbound)) if unbound else "",
        )
        parts = [
            HEAD,
            Markup("<title>{}</title>").format(self.report.title),
            Markup("<style>{}</style></head><body>").format(Markup(CSS)),
            banner,
            Markup('<div class="draft-mark" id="draft-mark" aria-hidden="true">DRAFT</div>')
            if doc.draft
            else "",
            Markup("<main><h1>{}</h1>").format(self.report.title),
            *body,
            self.warnings(),
            self.provenance(),
            self.sources(),
            Markup("</main></body></html>"),
        ]
        return str(_join((p for p in parts if p), "\n")) + "\n"

    # --- blocks ------------------------------------------------------------------------

    def block(self, block: Any) -> Markup:
        if isinstance(block, ResolvedHeading):
            level = min(block.level + 1, 6) if block.level == 1 else block.level
            return Markup("<h{0}>{1}</h{0}>").format(
                level, self.prose(block.text, block.index, "heading")
            )
        if isinstance(block, ResolvedText):
            inner = _join(
                self.prose(p, block.index, "text", n) if isinstance(p, str) else self.value(p)
                for n, p in enumerate(block.parts)
            )
            return Markup('<p class="text">{}</p>').format(inner)
        if isinstance(block, ResolvedNumber):
            return Markup(
                '<p class="number" data-block="{}"><span class="label">{}:</span>{}</p>'
            ).format(block.index, block.label, self.value(block.value))
        if isinstance(block, ResolvedTableBlock):
            return self.table(block)
        if isinstance(block, ResolvedImage):
            return self.image(block)
        if isinstance(block, ResolvedChart):
            return self.chart(block)
        raise TypeError(f"unknown resolved block {block!r}")

    def prose(self, text: str, block: int, where: str, part: int | None = None) -> Markup:
        """The prose, each figure written in it (not a bound citation) marked."""
        out: list[Any] = []
        at = 0
        for start, end in spans(self.report.unbound, block, where, part):
            out += [
                text[at:start],
                Markup('<mark class="unbound" title="{}">{}</mark>').format(
                    UNBOUND_TITLE, text[start:end]
                ),
            ]
            at = end
        return _join(out + [text[at:]])

    def value(self, value: Value) -> Markup:
        if value.degraded:
            return Markup('<span class="missing degraded" title="{}">{}</span>').format(
                "not shown: " + value.reason, MISSING_MARK
            )
        css = "cited missing" if value.null else "cited"
        title = _provenance_title(value.source, value.selector) + (
            " (NULL in the artifact)" if value.null else ""
        )
        title += f" · exact: {value.exact}" if not value.null and value.exact != value.text else ""
        return Markup('<span class="{}" title="{}">{}</span>{}').format(
            css, title, value.text, _ref(value.source)
        )

    def table(self, table: ResolvedTableBlock) -> Markup:
        caption = Markup("<caption>{}{}</caption>").format(table.caption, _ref(table.source))
        note = Markup()
        if not table.complete:
            note = Markup('<p class="note incomplete">{}</p>').format(
                table.source.record.incomplete_note()
            )
        if table.empty:
            return Markup('<p class="empty-result">{}{}</p>{}').format(
                table.caption, _ref(table.source), note
            )
        numeric = [_numeric_column(table.rows, i) for i in range(len(table.columns))]
        head = _join(
            Markup('<th{} scope="col">{}</th>').format(Markup(" class=num") if n else "", c)
            for c, n in zip(table.columns, numeric)
        )
        body = []
        for row in table.rows:
            cells = []
            for v, n, column in zip(row, numeric, table.columns):
                if v is None:
                    cells.append(
                        Markup('<td class="missing{}" title="NULL">{}</td>').format(
                            " num" if n else "", MISSING_MARK
                        )
                    )
                    continue
                text, exact = table.text(v, column), plain_text(v)
                title = Markup(' title="{}"').format("exact: " + exact) if text != exact else ""
                cell = Markup('<td class="num"{}>{}</td>') if n else Markup("<td{}>{}</td>")
                cells.append(cell.format(title, text))
            body.append(Markup("<tr>{}</tr>").format(_join(cells)))
        return Markup(
            '<table class="data" data-block="{}">{}<thead><tr>{}</tr></thead>'
            "<tbody>{}</tbody></table>{}"
        ).format(table.index, caption, head, _join(body), note)

    def image(self, image: ResolvedImage) -> Markup:
        reason = ""
        if image.media_type not in IMAGE_TYPES:
            reason = f"{image.media_type or 'unknown type'} is not an image type this report embeds"
        elif image.source.record.byte_size > IMAGE_MAX_BYTES:
            reason = (
                f"the image is {image.source.record.byte_size:,} bytes (over {IMAGE_MAX_BYTES:,})"
            )
        if reason:
            self.notes.append((image.index, f"chart {image.source.artifact_id} omitted", reason))
            return Markup('<p class="omitted note" data-block="{}">Chart omitted: {}{}</p>').format(
                image.index, reason, _ref(image.source)
            )
        data = self.report.image_bytes(image)
        return Markup(
            '<figure class="chart" data-block="{}"><img alt="{}" title="{}" src="{}">'
            "<figcaption>{}{}</figcaption></figure>"
        ).format(
            image.index,
            image.caption or "chart",
            _provenance_title(image.source, None),
            _data_uri(image.media_type, data),
            image.caption,
            _ref(image.source),
        )

    def chart(self, chart: ResolvedChart) -> Markup:
        try:
            svg = chart_svg(chart)
        except ChartUnavailable as exc:
            self.notes.append(
                (
                    chart.index,
                    f"{chart.chart} chart of {chart.y} by {chart.x} shown as a table",
                    str(exc),
                )
            )
            return Markup('<p class="note fallback">Chart shown as a table: {}</p>').format(
                str(exc)
            ) + self.table(chart.table(CHART_TABLE_ROWS))
        caption = (chart.user_caption + " " if chart.user_caption else "") + chart.caption
        return Markup(
            '<figure class="chart native" data-block="{}"><img alt="{}" title="{}" src="{}">'
            "<figcaption>{}{}</figcaption></figure>"
        ).format(
            chart.index,
            chart.user_caption or "chart",
            _provenance_title(chart.source, chart.selector),
            _data_uri("image/svg+xml", svg),
            caption,
            _ref(chart.source),
        )

    # --- the end of the page -------------------------------------------------------------

    def warnings(self) -> Markup:
        items = [
            Markup("<li>block {} ({}{}{}): {}</li>").format(
                w.block,
                w.kind,
                ", " + w.field if w.field else "",
                Markup(", artifact {}").format(_code(w.artifact_id)) if w.artifact_id else "",
                w.reason,
            )
            for w in self.report.warnings
        ]
        items += [
            Markup("<li>block {}: {}: {}</li>").format(block, what, reason)
            for block, what, reason in self.notes
        ]
        items += [
            Markup('<li class="unbound">{}</li>').format(f.warning()) for f in self.report.unbound
        ]
        if not items:
            return Markup()
        return Markup(
            '<section class="warnings" id="warnings" role="note"><h2>Warnings</h2>'
            "<p>These parts could not be shown from verified evidence as written "
            "(a value shows <span class=missing>{}</span>):</p>"
            "<ul>{}</ul></section>"
        ).format(MISSING_MARK, _join(items))

    def provenance(self) -> Markup:
        rows = []
        for n, c in enumerate(self.report.citations, 1):
            shown = c.get("rendered")
            if shown is None:
                shown = f"{c['rows_shown']} rows" if "rows_shown" in c else "image"
            sha = c.get("sha256") or ""
            exact = c.get("exact")
            rows.append(
                Markup(
                    "<tr><td class=num>{}</td><td class=num>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                    "<td>{}</td><td>{}</td><td>{}</td></tr>"
                ).format(
                    n,
                    c["block"],
                    c.get("field") or "",
                    shown,
                    exact if exact is not None else "",
                    _code(c["artifact_id"]),
                    _code(json.dumps(c.get("selector"), default=str)),
                    _code(sha[:12]) if sha else "not read: " + str(c.get("unavailable") or ""),
                )
            )
        if not rows:
            return Markup()
        return Markup(
            '<section class="provenance" id="provenance"><h2>Provenance</h2><table>'
            "<thead><tr><th class=num>#</th><th class=num>block</th><th>field</th><th>shown</th>"
            "<th>exact value</th><th>artifact</th><th>selector</th><th>SHA-256</th></tr></thead>"
            "<tbody>{}</tbody></table></section>"
        ).format(_join(rows))

    def sources(self) -> Markup:
        if not self.report.sources:
            return Markup()
        items = []
        for source in self.report.sources.values():
            incomplete = " - " + source.record.incomplete_note() if not source.complete else ""
            items.append(
                Markup('<li id="src-{}">artifact {} ({}, sha256 {}){}{}</li>').format(
                    source.number,
                    _code(source.artifact_id),
                    source.kind,
                    _code(source.sha256[:12]),
                    _origin(source),
                    incomplete,
                )
            )
        note = Markup()
        if self.report.missing_used:
            note = Markup(
                "<p><span class=missing>{}</span> marks a missing value: the cited artifact holds "
                "NULL there (no value; not zero, not empty text).</p>"
            ).format(MISSING_MARK)
        return Markup(
            '<section class="sources" id="sources"><h2>Sources</h2><ol>{}</ol>{}</section>'
        ).format(_join(items), note)


def _origin(source: Source) -> Markup:
    """The SQL or code that produced the artifact, whole: on the line when it is one short line, else
    collapsed under its first line (``<details>``: opens without a script)."""
    code, origin = source.code(), source.origin(ORIGIN_INLINE_CHARS)
    if not code or ("\n" not in code and len(code) <= ORIGIN_INLINE_CHARS):
        return (
            Markup(": <span class=origin>{}</span>").format(_code(origin)) if origin else Markup()
        )
    return Markup(
        '<details class="origin"><summary>{}</summary><pre><code>{}</code></pre></details>'
    ).format(_code(origin), code)


def _numeric_column(rows: list[list[Any]], i: int) -> bool:
    values = [row[i] for row in rows if row[i] is not None]
    return bool(values) and all(
        isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool) for v in values
    )


def _provenance_title(source: Source | None, selector: Any) -> str:
    if source is None:
        return ""
    where = f" · selector {json.dumps(selector, default=str)}" if selector else ""
    return f"artifact {source.artifact_id}{where} · sha256 {source.sha256[:12]}"


def _ref(source: Source | None) -> Markup:
    if source is None:
        return Markup()
    return Markup('<sup class="ref"><a href="#src-{0}">[{0}]</a></sup>').format(source.number)


def _code(text: Any) -> Markup:
    return Markup("<code>{}</code>").format(text)


def _data_uri(media_type: str, data: bytes) -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"


RENDERER = HtmlRenderer()  # what the plugin registers (lazily: assay.plugins.reports.plugins)
