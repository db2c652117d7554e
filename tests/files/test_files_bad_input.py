"""Bad input: each gets its own code, and nothing is half-registered (no table, no directory left)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from assay.plugins.files import attach_files
from tests.files.conftest import write_csv, write_parquet, write_xlsx


def refused(kernel, assay_home: Path, *patterns: str) -> str:
    before = set(kernel.resources)
    with pytest.raises(Exception) as info:
        attach_files(kernel, list(patterns))
    assert set(kernel.resources) == before  # nothing registered
    leftovers = list((assay_home / "files").glob("*")) if (assay_home / "files").exists() else []
    assert leftovers == []  # no directory, no staging, no copies
    return info.value.code


def test_binary_junk_named_csv_is_not_text(kernel, files_dir, assay_home):
    (files_dir / "junk.csv").write_bytes(bytes(range(256)) * 64)
    assert refused(kernel, assay_home, str(files_dir / "junk.csv")) == "FILE_NOT_TEXT"


def test_an_empty_file_is_file_empty(kernel, files_dir, assay_home):
    (files_dir / "empty.csv").write_bytes(b"")
    assert refused(kernel, assay_home, str(files_dir / "empty.csv")) == "FILE_EMPTY"


def test_a_header_only_csv_has_no_rows(kernel, files_dir, assay_home):
    (files_dir / "header.csv").write_text("region,amount\n")
    assert refused(kernel, assay_home, str(files_dir / "header.csv")) == "FILE_NO_ROWS"


def test_ragged_rows_are_malformed(kernel, files_dir, assay_home):
    (files_dir / "ragged.csv").write_text("a,b\n1,2\n3,4,5\n6,7\n")
    assert refused(kernel, assay_home, str(files_dir / "ragged.csv")) == "FILE_MALFORMED"


def test_unbalanced_quotes_are_malformed(kernel, files_dir, assay_home):
    (files_dir / "quotes.csv").write_text('a,b\n1,"2\n3,4\n')
    assert refused(kernel, assay_home, str(files_dir / "quotes.csv")) == "FILE_MALFORMED"


def test_duplicate_and_empty_column_names_are_renamed_and_said(kernel, files_dir):
    (files_dir / "dups.csv").write_text("a,a,,b\n1,2,3,4\n")
    resource = attach_files(kernel, [str(files_dir / "dups.csv")])
    table = resource.manifest.tables[0]
    assert [c["name"] for c in table.columns] == ["a", "a_1", "column2", "b"]
    assert table.renamed == {"a": "a_1", "(empty #3)": "column2"}


def test_a_10000_column_csv_is_too_wide(kernel, files_dir, assay_home):
    header = ",".join(f"c{i}" for i in range(10_000))
    (files_dir / "wide.csv").write_text(header + "\n" + ",".join("1" for _ in range(10_000)) + "\n")
    assert refused(kernel, assay_home, str(files_dir / "wide.csv")) == "FILE_TOO_WIDE"


def test_a_line_of_100_mb_is_refused_without_reading_it_whole(kernel, files_dir, assay_home):
    path = files_dir / "long.csv"
    with open(path, "wb") as fh:
        fh.write(b"a,b\n1,")
        for _ in range(100):
            fh.write(b"x" * (1 << 20))
        fh.write(b"\n")
    assert refused(kernel, assay_home, str(path)) == "FILE_LINE_TOO_LONG"


def test_parquet_named_csv_is_a_format_mismatch(kernel, files_dir, assay_home):
    write_parquet(files_dir / "real.parquet").rename(files_dir / "fake.csv")
    assert refused(kernel, assay_home, str(files_dir / "fake.csv")) == "FILE_FORMAT_MISMATCH"


def test_an_unknown_extension_is_refused(kernel, files_dir, assay_home):
    (files_dir / "notes.docx").write_bytes(b"PK\x03\x04")
    assert refused(kernel, assay_home, str(files_dir / "notes.docx")) == "FILE_FORMAT_UNKNOWN"


def test_a_password_protected_xlsx_is_encrypted(kernel, files_dir, assay_home):
    # An encrypted OOXML workbook is an OLE compound file holding EncryptedPackage, not a zip.
    (files_dir / "secret.xlsx").write_bytes(
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
        + b"\x00" * 504
        + "EncryptedPackage".encode("utf-16-le")
        + b"\x00" * 1024
    )
    assert refused(kernel, assay_home, str(files_dir / "secret.xlsx")) == "FILE_ENCRYPTED"


def test_a_corrupt_xlsx_is_corrupt(kernel, files_dir, assay_home):
    good = write_xlsx(files_dir / "good.xlsx").read_bytes()
    (files_dir / "broken.xlsx").write_bytes(good[: len(good) // 2])
    assert refused(kernel, assay_home, str(files_dir / "broken.xlsx")) == "FILE_CORRUPT"


def test_an_xlsx_zip_bomb_is_refused_by_its_declared_size_before_reading(
    kernel, files_dir, assay_home
):
    bomb = files_dir / "bomb.xlsx"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("xl/worksheets/sheet1.xml", b"\x00" * 4096)
    data = bytearray(bomb.read_bytes())
    central = data.index(b"PK\x01\x02")
    data[central + 24 : central + 28] = (0xF0000000).to_bytes(
        4, "little"
    )  # declares ~4 GB uncompressed
    bomb.write_bytes(bytes(data))
    assert bomb.stat().st_size < 4096
    assert refused(kernel, assay_home, str(bomb)) == "FILE_TOO_LARGE"


def test_a_symlink_outside_the_allowed_roots_is_refused(
    make_assay_kernel, files_dir, assay_home, monkeypatch
):
    monkeypatch.setenv("ASSAY_FILES_ROOTS", f'["{files_dir}"]')
    kernel = make_assay_kernel(load_entrypoints=True).start()
    (files_dir / "shadow.csv").symlink_to("/etc/shadow")
    assert refused(kernel, assay_home, str(files_dir / "shadow.csv")) == "FILE_OUTSIDE_ROOTS"
    assert refused(kernel, assay_home, str(files_dir / ".." / ".." / "x.csv")) in (
        "FILE_OUTSIDE_ROOTS",
        "FILE_NOT_FOUND",
    )


def test_a_device_is_not_a_regular_file(kernel, assay_home):
    assert refused(kernel, assay_home, "z=/dev/zero") == "FILE_NOT_REGULAR"


def test_a_bad_file_among_good_ones_registers_none_of_them(kernel, files_dir, assay_home):
    write_csv(files_dir / "good.csv")
    (files_dir / "bad.csv").write_bytes(b"")
    assert (
        refused(kernel, assay_home, str(files_dir / "good.csv"), str(files_dir / "bad.csv"))
        == "FILE_EMPTY"
    )


def test_ragged_rows_past_the_sample_fail_the_query_with_a_code(kernel, files_dir):
    path = files_dir / "late.csv"
    with open(path, "w") as fh:
        fh.write("a,b\n")
        for i in range(200_000):
            fh.write(f"{i},{i}\n")
        fh.write("1,2,3\n")
    attach_files(kernel, [str(path)])
    result = kernel.call_tool("sql_query", {"sql": "SELECT sum(a) FROM late"})
    assert not result.success and result.error_code == "SQL_QUERY_FAILED"
    assert "Expected Number of Columns" in result.message or "columns" in result.message.lower()


def test_a_file_deleted_mid_query_is_file_missing(kernel, files_dir):
    path = files_dir / "big.csv"
    with open(path, "w") as fh:
        fh.write("a,b\n")
        fh.writelines(f"{i},{i % 7}\n" for i in range(300_000))
    resource = attach_files(kernel, [str(path)])
    original = resource.executor().run

    def run_then_vanish(sql, attempt):
        os.unlink(path)
        return original(sql, attempt)

    resource.executor().run = run_then_vanish
    result = kernel.call_tool("sql_query", {"sql": "SELECT b, count(*) FROM big GROUP BY b"})
    assert not result.success and result.error_code in ("FILE_MISSING",)
