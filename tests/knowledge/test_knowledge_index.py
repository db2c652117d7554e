"""The index follows the files by hash: only changed files are parsed again; bad files are named, not fatal."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assay.plugins.knowledge.errors import KnowledgeError
from assay.plugins.knowledge.resource import KnowledgeBase
from assay.plugins.knowledge.settings import KnowledgeBaseConfig


def make_base(home: Path, *paths: Path, name: str = "kb") -> KnowledgeBase:
    return KnowledgeBase(name, KnowledgeBaseConfig(paths=[str(p) for p in paths]), home=home)


def test_a_directory_is_indexed_by_extension_skipping_hidden_files(docs, tmp_path):
    base = make_base(tmp_path / "home", docs)
    report = base.refresh()
    assert (report.files, report.added, report.failed) == (3, 3, [])
    assert {f.display for f in base.index.files()} == {
        "glossary.md",
        "columns.csv",
        "sub/policy.pdf",
    }
    assert base.index.path == tmp_path / "home" / "knowledge" / "kb.sqlite"


def test_reindexing_an_unchanged_base_parses_nothing(docs, tmp_path):
    make_base(tmp_path / "home", docs).refresh()
    again = make_base(tmp_path / "home", docs).refresh()  # a new process's view: same index file
    assert (again.unchanged, again.added, again.changed, again.removed) == (3, 0, 0, 0)


def test_a_changed_file_is_reparsed_and_a_removed_one_dropped(docs, tmp_path):
    base = make_base(tmp_path / "home", docs)
    base.refresh()
    (docs / "glossary.md").write_text("# Metrics\n\n## Churn\n\nCustomers who left.\n")
    (docs / "columns.csv").unlink()
    report = base.refresh(force=True)
    assert (report.changed, report.removed, report.unchanged) == (1, 1, 1)
    assert [h.heading for h in base.search("churn").hits] == ["Metrics > Churn"]
    assert base.search("denominator").hits == []
    assert base.search("promotion_id").hits == []  # the CSV's passages left with it


def test_touching_a_file_without_changing_its_bytes_is_unchanged(docs, tmp_path):
    base = make_base(tmp_path / "home", docs)
    base.refresh()
    os.utime(docs / "glossary.md", (1, 1))
    assert base.refresh(force=True).unchanged == 3


def test_an_unreadable_file_is_reported_and_the_rest_indexed(docs, tmp_path):
    (docs / "gone.md").symlink_to(tmp_path / "nowhere.md")  # listed, but reading it fails
    base = make_base(tmp_path / "home", docs)
    report = base.refresh()
    assert [(f, c) for f, c, _ in report.failed] == [("gone.md", "KNOWLEDGE_FILE_UNREADABLE")]
    assert report.files == 4 and base.search("denominator").hits
    state = {f.display: f for f in base.index.files()}["gone.md"]
    assert (state.status, state.passages) == ("failed", 0)


def test_a_broken_pdf_is_reported_and_retried_once_fixed(docs, tmp_path):
    from tests.knowledge.files import POLICY_PAGES, pdf_bytes

    (docs / "sub" / "policy.pdf").write_bytes(b"%PDF-1.7\n1 0 obj garbage")
    base = make_base(tmp_path / "home", docs)
    assert [(f, c) for f, c, _ in base.refresh().failed] == [
        ("sub/policy.pdf", "KNOWLEDGE_FILE_UNPARSABLE")
    ]
    (docs / "sub" / "policy.pdf").write_bytes(pdf_bytes(POLICY_PAGES))
    report = base.refresh(force=True)
    assert report.failed == [] and report.changed == 1
    hit = base.search("chargeback").hits[0]
    assert (hit.file, hit.heading, hit.page) == ("sub/policy.pdf", "page 2", 2)


def test_a_file_over_the_size_limit_is_skipped_and_said_so(docs, tmp_path):
    from assay.plugins.knowledge.settings import KnowledgeSettings

    base = KnowledgeBase(
        "kb",
        KnowledgeBaseConfig(paths=[str(docs)]),
        home=tmp_path / "home",
        settings=KnowledgeSettings(max_file_bytes=200),
    )
    failed = {f: m for f, _, m in base.refresh().failed}
    assert "over the 200-byte limit" in failed["glossary.md"]


def test_an_empty_base_searches_to_an_empty_result(tmp_path):
    (tmp_path / "empty").mkdir()
    base = make_base(tmp_path / "home", tmp_path / "empty")
    assert base.refresh().files == 0
    assert base.search("refund").hits == []


def test_a_missing_path_is_a_clear_error(tmp_path):
    base = make_base(tmp_path / "home", tmp_path / "no-such-dir")
    with pytest.raises(KnowledgeError) as info:
        base.search("refund")
    assert info.value.code == "KNOWLEDGE_BASE_NOT_FOUND" and "no-such-dir" in info.value.message


def test_several_paths_name_files_after_their_root(docs, tmp_path):
    extra = tmp_path / "extra.md"
    extra.write_text("# Extra\n\nGross margin is revenue minus cost.\n")
    base = make_base(tmp_path / "home", docs, extra)
    displays = {f.display for f in base.index.files()} if base.refresh() else set()
    assert {"metrics/glossary.md", "extra.md"} <= displays


def test_search_ranks_the_defining_section_first(docs, tmp_path):
    base = make_base(tmp_path / "home", docs)
    hits = base.search("what is the refund rate denominator", 3).hits
    assert [h.heading for h in hits[:2]] == [
        "Metrics > Refund rate > Edge cases",
        "Metrics > Refund rate",
    ]
    rate = hits[1]
    assert rate.file == "glossary.md" and (rate.line_start, rate.line_end) == (11, 17)
    assert rate.bm25 > 0 and len(rate.passage_sha256) == 64


def test_a_large_base_drops_words_most_passages_hold_without_changing_the_top_hit(
    tmp_path, monkeypatch
):
    from assay.plugins.knowledge import index as index_module

    root = tmp_path / "big"
    root.mkdir()
    sections = [
        f"## Order note {i}\n\nEvery order is an order of the shop, note {i}.\n" for i in range(60)
    ]
    sections.append("## Refund rate\n\nRefunded orders divided by all orders: the denominator.\n")
    (root / "notes.md").write_text("# Notes\n\n" + "\n".join(sections))
    base = make_base(tmp_path / "home", root)
    full = base.search("order denominator", 3)
    monkeypatch.setattr(index_module, "PRUNE_MIN_PASSAGES", 10)
    pruned = base.search("order denominator", 3)
    assert full.hits[0].heading == pruned.hits[0].heading == "Notes > Refund rate"
    assert (
        len(full.hits) == 3 and len(pruned.hits) == 1
    )  # "order" is in every passage: it adds no weight


def test_a_search_after_refresh_s_sees_an_edited_file_without_reindexing_by_hand(docs, tmp_path):
    from assay.plugins.knowledge.settings import KnowledgeSettings

    def base_with(refresh_s: float) -> KnowledgeBase:
        return KnowledgeBase(
            "kb",
            KnowledgeBaseConfig(paths=[str(docs)]),
            home=tmp_path / "home",
            settings=KnowledgeSettings(refresh_s=refresh_s),
        )

    eager, lazy = base_with(0), base_with(3600)
    assert eager.search("churn").hits == [] and lazy.search("churn").hits == []
    (docs / "churn.md").write_text("# Churn\n\nCustomers who stopped buying for 90 days.\n")
    assert [h.file for h in eager.search("churn").hits] == ["churn.md"]
    assert lazy.refresh().files == 3  # checked less than refresh_s ago: the last report stands


def test_small_updates_and_a_full_rebuild_leave_the_same_searchable_index(docs, tmp_path):
    from assay.plugins.knowledge import index as index_module

    base = make_base(tmp_path / "home", docs)
    base.refresh()  # from scratch: one FTS rebuild
    for i in range(12):  # then small updates: rows given to the FTS index one file at a time
        (docs / f"note{i}.md").write_text(f"# Note {i}\n\nThe churn figure number{i} is monthly.\n")
        base.refresh(force=True)
    (docs / "note3.md").write_text("# Note 3\n\nReplaced text about margins.\n")
    (docs / "note4.md").unlink()
    base.refresh(force=True)
    db = base.index._db()
    db.execute(
        "INSERT INTO passages_fts (passages_fts, rank) VALUES ('integrity-check', 1)"
    )  # raises if out of step
    query = "churn monthly margins number3 number4"
    incremental = {(h.file, h.heading): round(h.bm25, 6) for h in base.search(query, 20).hits}
    assert ("note3.md", "Note 3") in incremental and not any(
        f == "note4.md" for f, _ in incremental
    )
    rebuilt = make_base(tmp_path / "other-home", docs)  # the same files indexed from scratch
    assert {
        (h.file, h.heading): round(h.bm25, 6) for h in rebuilt.search(query, 20).hits
    } == incremental
    assert index_module.REBUILD_SHARE < 1
