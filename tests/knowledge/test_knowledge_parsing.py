"""Files become passages with their heading and line range: Markdown, text, CSV and PDF."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.plugins.knowledge.errors import KnowledgeError
from assay.plugins.knowledge.parsing import parse, parse_csv, parse_markdown
from tests.knowledge.files import DICTIONARY, GLOSSARY, POLICY_PAGES, pdf_bytes


def test_markdown_sections_carry_their_heading_trail_and_line_range():
    passages = parse_markdown(GLOSSARY, 1200)
    by_heading = {p.heading: p for p in passages}
    assert list(by_heading) == [
        "Metrics",
        "Metrics > Promoted order",
        "Metrics > Refund rate",
        "Metrics > Refund rate > Edge cases",
    ]
    rate = by_heading["Metrics > Refund rate"]
    lines = GLOSSARY.splitlines()
    assert lines[rate.line_start - 3 : rate.line_start - 1] == [
        "## Refund rate",
        "",
    ]  # the body follows the heading
    assert "\n".join(lines[rate.line_start - 1 : rate.line_end]) == rate.text
    assert rate.text.startswith("Refunded orders divided by")


def test_a_hash_line_inside_a_code_fence_is_not_a_heading():
    rate = next(p for p in parse_markdown(GLOSSARY, 1200) if p.heading == "Metrics > Refund rate")
    assert "# Not a heading" in rate.text


def test_a_long_section_is_split_at_paragraph_ends_and_each_piece_keeps_its_lines():
    paragraphs = [f"Paragraph {i} " + "word " * 60 for i in range(10)]
    text = "# Long\n\n" + "\n\n".join(paragraphs) + "\n"
    passages = parse_markdown(text, 400)
    assert len(passages) > 3
    assert all(p.heading == "Long" for p in passages)
    lines = text.splitlines()
    for p in passages:
        assert "\n".join(lines[p.line_start - 1 : p.line_end]) == p.text
    assert [p.line_start for p in passages] == sorted(p.line_start for p in passages)


def test_csv_rows_become_column_value_passages_with_their_lines_even_across_quoted_newlines():
    passages = parse_csv(DICTIONARY)
    assert [p.heading for p in passages] == ["order_id", "promotion_id", "amount"]
    promo = passages[1]
    assert (promo.line_start, promo.line_end) == (3, 4)
    assert (
        promo.text
        == "column: promotion_id\ntable: orders\nmeaning: The promotion used;\nNULL when the order is not promoted"
    )
    assert (passages[2].line_start, passages[2].line_end) == (5, 5)


def test_pdf_pages_are_extracted_with_page_headings():
    passages = parse(Path("policy.pdf"), pdf_bytes(POLICY_PAGES), 1200)
    assert [(p.heading, p.page) for p in passages] == [("page 1", 1), ("page 2", 2)]
    assert "30 days of delivery" in passages[0].text
    assert "chargeback is not a refund" in passages[1].text


def test_a_pdf_that_cannot_be_parsed_is_a_clear_error():
    with pytest.raises(KnowledgeError) as info:
        parse(Path("broken.pdf"), b"%PDF-1.4\nthis is not a PDF body at all", 1200)
    assert info.value.code == "KNOWLEDGE_FILE_UNPARSABLE"
    assert "PDF" in info.value.message


def test_text_that_is_not_utf8_is_refused_not_guessed():
    with pytest.raises(KnowledgeError) as info:
        parse(Path("latin1.txt"), "café crème".encode("latin-1"), 1200)
    assert info.value.code == "KNOWLEDGE_FILE_UNREADABLE"


def test_plain_text_is_split_into_paragraph_passages_without_heading():
    text = "\n\n".join(f"Line {i} " + "x" * 300 for i in range(6))
    passages = parse(Path("notes.txt"), text.encode(), 700)
    assert len(passages) >= 3 and all(p.heading == "" for p in passages)
    assert passages[0].line_start == 1


def test_a_pdf_without_an_extractor_installed_says_which_extra_to_install(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pypdf", None)  # as if assay[knowledge] were not installed
    with pytest.raises(KnowledgeError) as info:
        parse(Path("policy.pdf"), pdf_bytes(POLICY_PAGES), 1200)
    assert info.value.code == "KNOWLEDGE_PDF_UNSUPPORTED" and "assay[knowledge]" in info.value.hint
