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
- Every text from the document or the data is escaped.
"""

from __future__ import annotations

import base64
import decimal
import html
import json
from typing import Any

from .resolve import (
    MISSING_MARK,
    ResolvedChart,
    ResolvedHeading,
    ResolvedImage,
    ResolvedNumber,
    ResolvedReport,
    ResolvedTableBlock,
    ResolvedText,
    Source,
    Value,
    plain_text,
    resolve_report,
)

IMAGE_TYPES = ("image/png", "image/svg+xml", "image/jpeg", "image/gif", "image/webp")
IMAGE_MAX_BYTES = 8 << 20  # a bigger chart artifact is listed as omitted, not inlined
CHART_TABLE_ROWS = 20  # a chart that cannot be drawn: its first points as a table
ORIGIN_INLINE_CHARS = 120  # SQL or code up to this long, on one line, stays on its source's line
UNBOUND_TITLE = "not a bound citation: this figure was written in the text, not read from the evidence"
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"


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


def e(text: Any) -> str:
    """Escape text for HTML content and attribute values (quotes included)."""
    return html.escape(str(text), quote=True)


class _Page:
    def __init__(self, report: ResolvedReport) -> None:
        self.report = report
        self.notes: list[tuple[int, str, str]] = []  # (block, what, reason): shown in the warnings box

    def build(self) -> str:
        body = [self.block(block) for block in self.report.blocks]
        doc = self.report.document
        status = report_status(self.report)
        unbound = self.report.unbound
        gaps = len(self.report.warnings) + len(self.notes) + len(unbound)
        detail = f"{gaps} warning{'s' if gaps != 1 else ''}: see the warnings box" if gaps else "no warnings"
        if unbound:
            detail = (f"{len(unbound)} figure{'s' if len(unbound) != 1 else ''} not read from the evidence "
                      f"({'; '.join(dict.fromkeys(f.text for f in unbound))}); " + detail)
        if doc.draft:
            detail = "DRAFT, not the formal report; " + detail
        flagged = " unverified" if unbound else ""
        banner = (f'<div class="banner status-{e(status)}{flagged}" id="status" role="status" data-status="{e(status)}"'
                  f'{" data-unbound-figures=" + chr(34) + str(len(unbound)) + chr(34) if unbound else ""}>'
                  f'Status: {e(status)}<span class="detail">{e(detail)}</span></div>')
        parts = [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<meta name="generator" content="assay html report">',
            f"<title>{e(self.report.title)}</title>",
            f"<style>{_css()}</style></head><body>",
            banner,
            '<div class="draft-mark" id="draft-mark" aria-hidden="true">DRAFT</div>' if doc.draft else "",
            f"<main><h1>{e(self.report.title)}</h1>",
            *body,
            self.warnings(),
            self.provenance(),
            self.sources(),
            "</main></body></html>",
        ]
        return "\n".join(p for p in parts if p) + "\n"

    # --- blocks ------------------------------------------------------------------------

    def block(self, block: Any) -> str:
        if isinstance(block, ResolvedHeading):
            level = min(block.level + 1, 6) if block.level == 1 else block.level
            return f"<h{level}>{self.prose(block.text, block.index, 'heading')}</h{level}>"
        if isinstance(block, ResolvedText):
            inner = "".join(self.prose(p, block.index, "text", n) if isinstance(p, str) else self.value(p)
                            for n, p in enumerate(block.parts))
            return f'<p class="text">{inner}</p>'
        if isinstance(block, ResolvedNumber):
            return (f'<p class="number" data-block="{block.index}"><span class="label">{e(block.label)}:</span>'
                    f"{self.value(block.value)}</p>")
        if isinstance(block, ResolvedTableBlock):
            return self.table(block)
        if isinstance(block, ResolvedImage):
            return self.image(block)
        if isinstance(block, ResolvedChart):
            return self.chart(block)
        raise TypeError(f"unknown resolved block {block!r}")

    def prose(self, text: str, block: int, where: str, part: int | None = None) -> str:
        """Escaped prose, each figure written in it (not a bound citation) marked."""
        from .figures import spans

        out, at = [], 0
        for start, end in spans(self.report.unbound, block, where, part):
            out += [e(text[at:start]), f'<mark class="unbound" title="{e(UNBOUND_TITLE)}">{e(text[start:end])}</mark>']
            at = end
        return "".join(out) + e(text[at:])

    def value(self, value: Value) -> str:
        if value.degraded:
            return (f'<span class="missing degraded" title="{e("not shown: " + value.reason)}">'
                    f"{e(MISSING_MARK)}</span>")
        css = "cited missing" if value.null else "cited"
        title = _provenance_title(value.source, value.selector) + (" (NULL in the artifact)" if value.null else "")
        title += f" · exact: {value.exact}" if not value.null and value.exact != value.text else ""
        return f'<span class="{css}" title="{e(title)}">{e(value.text)}</span>{_ref(value.source)}'

    def table(self, table: ResolvedTableBlock) -> str:
        caption = f"<caption>{e(table.caption)}{_ref(table.source)}</caption>"
        note = ""
        if not table.complete:
            note = f'<p class="note incomplete">{e(table.source.record.incomplete_note())}</p>'
        if table.empty:
            return f'<p class="empty-result">{e(table.caption)}{_ref(table.source)}</p>{note}'
        numeric = [_numeric_column(table.rows, i) for i in range(len(table.columns))]
        head = "".join(f'<th{" class=num" if n else ""} scope="col">{e(c)}</th>'
                       for c, n in zip(table.columns, numeric))
        body = []
        for row in table.rows:
            cells = []
            for v, n, column in zip(row, numeric, table.columns):
                if v is None:
                    cells.append(f'<td class="missing{" num" if n else ""}" title="NULL">{e(MISSING_MARK)}</td>')
                    continue
                text, exact = table.text(v, column), plain_text(v)
                title = f' title="{e("exact: " + exact)}"' if text != exact else ""
                cells.append(f'<td class="num"{title}>{e(text)}</td>' if n else f"<td{title}>{e(text)}</td>")
            body.append("<tr>" + "".join(cells) + "</tr>")
        return (f'<table class="data" data-block="{table.index}">{caption}<thead><tr>{head}</tr></thead>'
                f"<tbody>{''.join(body)}</tbody></table>{note}")

    def image(self, image: ResolvedImage) -> str:
        reason = ""
        if image.media_type not in IMAGE_TYPES:
            reason = f"{image.media_type or 'unknown type'} is not an image type this report embeds"
        elif image.source.record.byte_size > IMAGE_MAX_BYTES:
            reason = f"the image is {image.source.record.byte_size:,} bytes (over {IMAGE_MAX_BYTES:,})"
        if reason:
            self.notes.append((image.index, f"chart {image.source.artifact_id} omitted", reason))
            return (f'<p class="omitted note" data-block="{image.index}">Chart omitted: {e(reason)}'
                    f"{_ref(image.source)}</p>")
        data = self.report.image_bytes(image)
        title = _provenance_title(image.source, None)
        return (f'<figure class="chart" data-block="{image.index}"><img alt="{e(image.caption or "chart")}" '
                f'title="{e(title)}" src="{_data_uri(image.media_type, data)}">'
                f"<figcaption>{e(image.caption)}{_ref(image.source)}</figcaption></figure>")

    def chart(self, chart: ResolvedChart) -> str:
        from .charts import ChartUnavailable, chart_svg

        try:
            svg = chart_svg(chart)
        except ChartUnavailable as exc:
            self.notes.append((chart.index, f"{chart.chart} chart of {chart.y} by {chart.x} shown as a table",
                               str(exc)))
            return (f'<p class="note fallback">Chart shown as a table: {e(str(exc))}</p>'
                    + self.table(chart.table(CHART_TABLE_ROWS)))
        caption = (chart.user_caption + " " if chart.user_caption else "") + chart.caption
        title = _provenance_title(chart.source, chart.selector)
        return (f'<figure class="chart native" data-block="{chart.index}"><img alt="{e(chart.user_caption or "chart")}"'
                f' title="{e(title)}" src="{_data_uri("image/svg+xml", svg)}">'
                f"<figcaption>{e(caption)}{_ref(chart.source)}</figcaption></figure>")

    # --- the end of the page -------------------------------------------------------------

    def warnings(self) -> str:
        items = [f"<li>block {w.block} ({e(w.kind)}{', ' + e(w.field) if w.field else ''}"
                 f"{', artifact ' + _code(w.artifact_id) if w.artifact_id else ''}): {e(w.reason)}</li>"
                 for w in self.report.warnings]
        items += [f"<li>block {block}: {e(what)}: {e(reason)}</li>" for block, what, reason in self.notes]
        items += [f'<li class="unbound">{e(f.warning())}</li>' for f in self.report.unbound]
        if not items:
            return ""
        return (f'<section class="warnings" id="warnings" role="note"><h2>Warnings</h2>'
                f"<p>These parts could not be shown from verified evidence as written "
                f"(a value shows <span class=missing>{e(MISSING_MARK)}</span>):</p>"
                f"<ul>{''.join(items)}</ul></section>")

    def provenance(self) -> str:
        rows = []
        for n, c in enumerate(self.report.citations, 1):
            shown = c.get("rendered")
            if shown is None:
                shown = f"{c['rows_shown']} rows" if "rows_shown" in c else "image"
            sha = c.get("sha256") or ""
            exact = c.get("exact")
            rows.append(f"<tr><td class=num>{n}</td><td class=num>{c['block']}</td><td>{e(c.get('field') or '')}</td>"
                        f"<td>{e(shown)}</td><td>{e(exact) if exact is not None else ''}</td>"
                        f"<td>{_code(c['artifact_id'])}</td>"
                        f"<td>{_code(json.dumps(c.get('selector'), default=str))}</td>"
                        f"<td>{_code(sha[:12]) if sha else e('not read: ' + str(c.get('unavailable') or ''))}</td></tr>")
        if not rows:
            return ""
        return ('<section class="provenance" id="provenance"><h2>Provenance</h2><table>'
                "<thead><tr><th class=num>#</th><th class=num>block</th><th>field</th><th>shown</th><th>exact value</th>"
                "<th>artifact</th><th>selector</th><th>SHA-256</th></tr></thead>"
                f"<tbody>{''.join(rows)}</tbody></table></section>")

    def sources(self) -> str:
        if not self.report.sources:
            return ""
        items = []
        for source in self.report.sources.values():
            incomplete = f" - {e(source.record.incomplete_note())}" if not source.complete else ""
            items.append(f'<li id="src-{source.number}">artifact {_code(source.artifact_id)} ({e(source.kind)}, '
                         f"sha256 {_code(source.sha256[:12])}){_origin(source)}{incomplete}</li>")
        note = (f"<p><span class=missing>{e(MISSING_MARK)}</span> marks a missing value: the cited artifact holds "
                "NULL there (no value; not zero, not empty text).</p>") if self.report.missing_used else ""
        return f'<section class="sources" id="sources"><h2>Sources</h2><ol>{"".join(items)}</ol>{note}</section>'


def _origin(source: Source) -> str:
    """The SQL or code that produced the artifact, whole: on the line when it is one short line, else
    collapsed under its first line (``<details>``: opens without a script)."""
    code, origin = source.code(), source.origin(ORIGIN_INLINE_CHARS)
    if not code or ("\n" not in code and len(code) <= ORIGIN_INLINE_CHARS):
        return f": <span class=origin>{_code(origin)}</span>" if origin else ""
    return (f'<details class="origin"><summary>{_code(origin)}</summary>'
            f'<pre><code>{e(code)}</code></pre></details>')


def _numeric_column(rows: list[list[Any]], i: int) -> bool:
    values = [row[i] for row in rows if row[i] is not None]
    return bool(values) and all(isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool)
                                for v in values)


def _provenance_title(source: Source | None, selector: Any) -> str:
    if source is None:
        return ""
    where = f" · selector {json.dumps(selector, default=str)}" if selector else ""
    return f"artifact {source.artifact_id}{where} · sha256 {source.sha256[:12]}"


def _ref(source: Source | None) -> str:
    if source is None:
        return ""
    return f'<sup class="ref"><a href="#src-{source.number}">[{source.number}]</a></sup>'


def _code(text: Any) -> str:
    return f"<code>{e(text)}</code>"


def _data_uri(media_type: str, data: bytes) -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"


def _css() -> str:
    from .html_style import CSS

    return CSS


RENDERER = HtmlRenderer()  # what the plugin registers (lazily: assay.plugins.reports.plugins)
