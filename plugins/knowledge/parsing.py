"""Files -> passages: Markdown sections, text paragraphs, CSV rows, PDF pages.

A passage is the unit a search returns and a report cites: its text, the
heading it sits under (Markdown: the trail of headings, ``Refunds > Refund
rate``; CSV: the row's first value; PDF: ``page N``) and the 1-based,
inclusive line range it came from (for a PDF, the lines of that page's
extracted text). Sections longer than ``passage_chars`` are split at
paragraph ends, each piece keeping its own line range.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import (
    KNOWLEDGE_FILE_UNPARSABLE,
    KNOWLEDGE_FILE_UNREADABLE,
    KNOWLEDGE_PDF_UNSUPPORTED,
    KnowledgeError,
)

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
MARKDOWN = (".md", ".markdown")
CSV = (".csv",)
PDF = (".pdf",)


@dataclass(frozen=True)
class Passage:
    heading: str
    line_start: int
    line_end: int
    text: str
    page: int | None = None


def kind_of(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in MARKDOWN:
        return "markdown"
    if suffix in CSV:
        return "csv"
    if suffix in PDF:
        return "pdf"
    return "text"


def parse(path: Path, data: bytes, passage_chars: int) -> list[Passage]:
    """The passages of one file's bytes; raises :class:`KnowledgeError` for a file that cannot be read."""
    kind = kind_of(path)
    if kind == "pdf":
        return parse_pdf(data, passage_chars)
    text = decode(data)
    if kind == "markdown":
        return parse_markdown(text, passage_chars)
    if kind == "csv":
        return parse_csv(text)
    return _split("", list(enumerate(text.splitlines(), 1)), passage_chars)


def decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise KnowledgeError(
            KNOWLEDGE_FILE_UNREADABLE,
            f"not UTF-8 text (byte {exc.start})",
            "Save the file as UTF-8.",
        ) from None


def parse_markdown(text: str, passage_chars: int) -> list[Passage]:
    """One passage per section body (split further when long); the heading line itself is not in the text
    or the line range. A heading inside a code fence is not a heading; a section without body gives none."""
    trail: list[tuple[int, str]] = []
    heading = ""
    body: list[tuple[int, str]] = []
    out: list[Passage] = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        fenced = _FENCE.match(line)
        if fenced:
            fence = None if fence == fenced.group(1) else (fence or fenced.group(1))
        match = _HEADING.match(line) if fence is None and not fenced else None
        if match:
            out.extend(_split(heading, body, passage_chars))
            level, title = len(match.group(1)), match.group(2).strip()
            trail = [(lv, t) for lv, t in trail if lv < level] + [(level, title)]
            heading = " > ".join(t for _, t in trail)
            body = []  # the heading line is the passage's heading, not part of its text
        else:
            body.append((number, line))
    out.extend(_split(heading, body, passage_chars))
    return out


def _split(heading: str, lines: list[tuple[int, str]], limit: int) -> list[Passage]:
    """``lines`` (numbered) as passages of at most about ``limit`` characters, cut at blank lines."""
    while lines and not lines[0][1].strip():
        lines = lines[1:]
    while lines and not lines[-1][1].strip():
        lines = lines[:-1]
    if not lines:
        return []
    out: list[Passage] = []
    chunk: list[tuple[int, str]] = []
    size = 0
    cut = 0  # chunk[:cut] ends at a blank line: where it may be cut
    for number, line in lines:
        chunk.append((number, line))
        size += len(line) + 1
        if not line.strip():
            cut = len(chunk)
        if size > limit and (
            cut or size >= 2 * limit
        ):  # a paragraph longer than 2x the limit is cut anyway
            head, chunk = (chunk[:cut], chunk[cut:]) if cut else (chunk, [])
            out.extend(_passage(heading, head))
            size, cut = sum(len(text) + 1 for _, text in chunk), 0
    out.extend(_passage(heading, chunk))
    return out


def _passage(heading: str, chunk: list[tuple[int, str]]) -> list[Passage]:
    while chunk and not chunk[0][1].strip():
        chunk = chunk[1:]
    while chunk and not chunk[-1][1].strip():
        chunk = chunk[:-1]
    if not chunk:
        return []
    text = "\n".join(line for _, line in chunk)
    return [Passage(heading, chunk[0][0], chunk[-1][0], text)]


def parse_csv(text: str) -> list[Passage]:
    """A data dictionary: one passage per row, ``column: value`` lines, headed by the row's first value."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None:
            return []
        names = [h.strip() or f"column {i + 1}" for i, h in enumerate(header)]
        out: list[Passage] = []
        start = reader.line_num + 1
        for row in reader:
            end = reader.line_num
            if any(cell.strip() for cell in row):
                pairs = [
                    f"{names[i] if i < len(names) else f'column {i + 1}'}: {cell.strip()}"
                    for i, cell in enumerate(row)
                    if cell.strip()
                ]
                out.append(Passage(row[0].strip() if row else "", start, end, "\n".join(pairs)))
            start = end + 1
        return out
    except csv.Error as exc:
        raise KnowledgeError(
            KNOWLEDGE_FILE_UNPARSABLE,
            f"not a readable CSV file (line {reader.line_num}): {exc}",
            "Fix the CSV (quotes must be balanced).",
        ) from None


def parse_pdf(data: bytes, passage_chars: int) -> list[Passage]:
    """The text of each page (pypdf, the ``knowledge`` extra), split like plain text; ``page N`` headings."""
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError:
        raise KnowledgeError(
            KNOWLEDGE_PDF_UNSUPPORTED,
            "PDF files need a text extractor, and pypdf is not installed",
            "pip install 'assay[knowledge]'",
        ) from None
    out: list[Passage] = []
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            raise KnowledgeError(
                KNOWLEDGE_FILE_UNPARSABLE, "the PDF is encrypted", "Index a decrypted copy of it."
            )
        for number, page in enumerate(reader.pages, 1):
            text = page.extract_text() or ""
            for p in _split(f"page {number}", list(enumerate(text.splitlines(), 1)), passage_chars):
                out.append(Passage(p.heading, p.line_start, p.line_end, p.text, page=number))
    except KnowledgeError:
        raise
    except (
        PyPdfError,
        ValueError,
        KeyError,
        TypeError,
        IndexError,
        AttributeError,
        RecursionError,
        UnicodeError,
        OSError,
        AssertionError,
    ) as exc:
        raise KnowledgeError(
            KNOWLEDGE_FILE_UNPARSABLE,
            f"the PDF cannot be parsed: {type(exc).__name__}: {str(exc)[:200]}",
            "Check the file opens in a PDF reader, or remove it.",
        ) from None
    return out
