"""Files as a datasource: each format a table, the guard in front, evidence naming the source bytes."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from assay.plugins.files import attach_files
from tests.files.conftest import write_csv, write_parquet, write_xlsx

GROUP_BY = "SELECT region, sum(amount) AS total FROM {t} GROUP BY region ORDER BY region"
EXPECTED = [("east", 40.0), ("north", 250.5), ("south", 175.25)]


def rows(kernel, sql, datasource="files"):
    result = kernel.call_tool(
        "sql_query", {"sql": sql, "datasource": datasource}, run=kernel.new_run()
    )
    assert result.success, result.message
    return result


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "cp1252"])
def test_csv_in_each_encoding_is_a_table(kernel, files_dir, encoding):
    data = [("Zürich", "2024-01", 10.0), ("Köln €", "2024-01", 5.0)]
    write_csv(files_dir / "cities.csv", rows=data, encoding=encoding)
    attach_files(kernel, [str(files_dir / "cities.csv")])
    res = kernel.resources["files"].query("SELECT region FROM cities ORDER BY amount")
    expected = "Köln €" if encoding != "cp1252" else "Köln €"
    assert [r[0] for r in res.rows][1] == "Zürich"
    assert res.rows[0][0].startswith("Köln")
    if encoding != "cp1252":
        assert res.rows[0][0] == expected


def test_tsv_parquet_json_ndjson_and_xlsx_answer_the_same_group_by(kernel, files_dir):
    write_csv(files_dir / "a.tsv", sep="\t")
    write_parquet(files_dir / "b.parquet")
    records = [
        {"region": r, "month": m, "amount": a}
        for r, m, a in __import__("tests.files.conftest").files.conftest.SALES
    ]
    (files_dir / "c.json").write_text(json.dumps(records))
    (files_dir / "d.ndjson").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    write_xlsx(files_dir / "e.xlsx")
    attach_files(kernel, [str(files_dir)])
    resource = kernel.resources["files"]
    for table in "abcde":
        assert [
            (r[0], float(r[1])) for r in resource.query(GROUP_BY.format(t=table)).rows
        ] == EXPECTED, table


def test_gzip_csv_is_read_as_duckdb_reads_it(kernel, files_dir):
    import gzip

    (files_dir / "s.csv.gz").write_bytes(
        gzip.compress(write_csv(files_dir / "plain.csv").read_bytes())
    )
    attach_files(kernel, [f"s={files_dir / 's.csv.gz'}"])
    assert kernel.resources["files"].query("SELECT count(*) FROM s").rows == [(5,)]


def test_a_named_glob_is_one_table_over_every_file(kernel, files_dir):
    write_parquet(files_dir / "p1.parquet")
    write_parquet(files_dir / "p2.parquet")
    attach_files(kernel, [f"ev={files_dir}/*.parquet"])
    assert kernel.resources["files"].query("SELECT count(*) FROM ev").rows == [(10,)]


def test_each_sheet_of_a_workbook_is_a_table(kernel, files_dir):
    write_xlsx(files_dir / "book.xlsx", {"Q1": [("a",), (1,), (2,)], "Q2 West": [("b",), (3,)]})
    attach_files(kernel, [str(files_dir / "book.xlsx")])
    names = sorted(t.name for t in kernel.resources["files"].tables())
    assert names == ["book_q1", "book_q2_west"]


def test_list_and_describe_show_the_sniffed_schema_and_row_count(kernel, files_dir):
    write_csv(files_dir / "sales.csv")
    attach_files(kernel, [str(files_dir / "sales.csv")])
    described = kernel.call_tool("describe_table", {"table": "sales"})
    assert described.success, described.message
    assert [c["name"] for c in described.data["columns"]] == ["region", "month", "amount"]
    assert described.data["row_estimate"] == 5
    listed = kernel.call_tool("list_tables", {})
    assert listed.data[0]["name"] == "sales" and listed.data[0]["row_estimate"] == 5


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_text('/etc/hostname')",
        "SELECT * FROM '/etc/passwd'",
        "SELECT * FROM glob('/etc/*')",
        "ATTACH '/tmp/x.duckdb'",
        "SELECT * FROM read_parquet('/tmp/*.parquet')",
    ],
)
def test_the_guard_still_refuses_file_reading_sql(kernel, files_dir, sql):
    write_csv(files_dir / "sales.csv")
    attach_files(kernel, [str(files_dir / "sales.csv")])
    result = kernel.call_tool("sql_query", {"sql": sql})
    assert not result.success and result.error_code == "SQL_READ_ONLY_REQUIRED"


def test_the_engine_reaches_only_the_registered_files(kernel, files_dir):
    write_csv(files_dir / "sales.csv")
    write_csv(files_dir / "other.csv")
    attach_files(kernel, [str(files_dir / "sales.csv")])
    resource = kernel.resources["files"]
    resource.query("SELECT 1 FROM sales LIMIT 1")
    import duckdb

    from assay.plugins.files.engine import FILES

    pool = FILES.make_pool(FILES.parse_url(resource.url), pool_size=1, pool_timeout_s=5)
    conn = pool.connect()
    try:
        raw = conn.dbapi_connection  # a cursor of the same locked instance: no guard in front of it
        with pytest.raises(duckdb.PermissionException):
            raw.execute(f"SELECT * FROM read_csv('{files_dir / 'other.csv'}')").fetchall()
        assert raw.execute("SELECT count(*) FROM sales").fetchone() == (5,)
    finally:
        conn.close()


def test_a_query_artifact_names_the_source_artifact_of_the_exact_bytes(kernel, files_dir):
    path = write_csv(files_dir / "sales.csv")
    attach_files(kernel, [str(path)])
    run = kernel.new_run()
    result = kernel.call_tool("sql_query", {"sql": GROUP_BY.format(t="sales")}, run=run)
    assert result.success, result.message
    record = kernel.evidence.catalog.get(result.data["artifact_id"])
    (source_id,) = record.provenance["sources"]
    source = kernel.evidence.catalog.get(source_id)
    assert source.kind == "source"
    assert source.provenance["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert (
        source.provenance["size"] == path.stat().st_size
        and source.provenance["name"] == "sales.csv"
    )
    from assay.kernel.evidence.readback import open_verified_content

    _, content = open_verified_content(kernel.evidence.catalog, source_id)
    doc = json.loads(content if isinstance(content, bytes) else content.read_bytes())
    assert doc["tables"]["sales"]["columns"][0] == {"name": "region", "type": "VARCHAR"}
    again = kernel.call_tool("sql_query", {"sql": "SELECT count(*) FROM sales"}, run=run)
    assert kernel.evidence.catalog.get(again.data["artifact_id"]).provenance["sources"] == [
        source_id
    ]  # once per run


def test_a_file_changed_after_registration_is_refused(kernel, files_dir):
    path = write_csv(files_dir / "sales.csv")
    attach_files(kernel, [str(path)])
    kernel.resources["files"].query("SELECT count(*) FROM sales")
    write_csv(path, rows=[("west", "2024-03", 1.0)])
    os.utime(path, ns=(1, 1))
    result = kernel.call_tool("sql_query", {"sql": "SELECT count(*) FROM sales"})
    assert not result.success and result.error_code == "FILE_CHANGED"


def test_a_touched_file_with_the_same_bytes_is_not_changed(kernel, files_dir):
    path = write_csv(files_dir / "sales.csv")
    attach_files(kernel, [str(path)])
    assert rows(
        kernel, "SELECT count(*) FROM sales"
    ).success  # hashed with the first captured query
    os.utime(path, ns=(10**18, 10**18))
    assert rows(kernel, "SELECT count(*) FROM sales").data["row_count"] == 1


def test_a_deleted_file_is_file_missing(kernel, files_dir):
    path = write_csv(files_dir / "sales.csv")
    attach_files(kernel, [str(path)])
    path.unlink()
    result = kernel.call_tool("sql_query", {"sql": "SELECT count(*) FROM sales"})
    assert not result.success and result.error_code == "FILE_MISSING"


def test_excel_is_loaded_once_into_a_duckdb_file_under_assay_home(kernel, files_dir, assay_home):
    write_xlsx(files_dir / "sales.xlsx")
    first = attach_files(kernel, [str(files_dir / "sales.xlsx")])
    second = attach_files(kernel, [str(files_dir / "sales.xlsx")])
    assert first.directory == second.directory and first.directory.is_relative_to(assay_home)
    assert (first.directory / "data.duckdb").stat().st_size > 0


def test_zstd_csv_is_read_as_duckdb_reads_it(kernel, files_dir):
    import duckdb

    target = files_dir / "z.csv.zst"
    duckdb.connect().execute(
        f"COPY (SELECT range AS n FROM range(7)) TO '{target}' (HEADER, COMPRESSION zstd)"
    )
    attach_files(kernel, [str(target)])
    assert kernel.resources["files"].query("SELECT sum(n) FROM z").rows == [(21,)]


def test_a_workbook_gives_values_never_formulas(kernel, files_dir):
    import xlsxwriter

    path = files_dir / "calc.xlsx"
    book = xlsxwriter.Workbook(str(path))
    sheet = book.add_worksheet("calc")
    sheet.write_row(0, 0, ["a", "b", "total"])
    sheet.write_row(1, 0, [2, 3])
    sheet.write_formula(1, 2, "=A2+B2", None, 5)
    book.close()
    attach_files(kernel, [str(path)])
    assert kernel.resources["files"].query("SELECT total FROM calc").rows == [(5.0,)]
