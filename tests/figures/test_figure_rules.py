"""The figure rules: what a figure is, what it may stand for at its precision, what evidence supports it."""

from __future__ import annotations

from decimal import Decimal

import pytest

from assay.kernel.evidence import capture_python_execution, capture_sql_execution
from assay.plugins.figures import check_figures, find_figures


def texts(text: str) -> list[str]:
    return [f.text for f in find_figures(text)]


@pytest.mark.parametrize(
    "text, found",
    [
        (
            "There are 999,999 orders [art_3159bbd8656c4ca2a9a6], and refunds cost $12.3M.",
            ["999,999", "$12.3M"],
        ),
        ("Revenue grew 37% to $4.2M in Q3 of FY2024 (H1: 3.1bn)", ["37%", "$4.2M", "3.1bn"]),
        (
            "-3.5% and −2 and -$5 and €84.20 and 12 million and 1.5k",
            ["-3.5%", "−2", "-$5", "€84.20", "12 million", "1.5k"],
        ),
        ("In 2024 we sold 2024 units; since 1999 (2023) revenue 2022: up", ["2024"]),
        (
            "On 2024-01-05 at 10:30, on 05/01/2024, on March 5, 2025, on 5 March and in March 2024",
            [],
        ),
        ("It grew since 2023-01-05. And since 2023-02.", []),
        ("1. Seattle #1\n2) Denver, the 3rd, v1.2.3, 10x, see [1] and http://host:8080/a/42", []),
    ],
)
def test_what_is_a_figure(text, found):
    assert texts(text) == found


def test_a_range_shares_its_unit():
    low, high = (
        find_figures("rates of 10-20% and sales of $4-5M")[0:2],
        find_figures("sales of $4-5M"),
    )
    assert [f.percent for f in low] == [True, True]
    assert [(f.scale, bool(f.currency)) for f in high] == [(1_000_000, True), (1_000_000, True)]


@pytest.mark.parametrize(
    "figure, value, supported",
    [
        ("7.16%", 0.0716432, True),
        ("7.16%", 0.0712, False),
        ("$4.2M", 4_213_877.12, True),
        ("$4.2M", 4_263_000, False),
        ("1,234", 1234, True),
        ("1,234", 1235, False),
        ("-3.5", -3.52, True),
        ("-3.5", 3.5, False),
        ("$4.2B", 4_213_877.12, False),
        ("42.0%", 0.42, True),
    ],
)
def test_a_figure_stands_for_the_values_that_round_to_it(figure, value, supported):
    [f] = find_figures(figure)
    assert (
        any(lo <= value <= hi for lo, hi, percent_only in f.intervals() if not percent_only)
        is supported
    )


@pytest.fixture
def run(make_assay_kernel):
    from assay.plugins import evidence_tools

    kernel = make_assay_kernel(evidence_tools).start()
    with kernel.new_run() as run:
        yield run


def sql(run, columns, rows):
    return capture_sql_execution(
        run.artifacts,
        columns=columns,
        rows=iter(rows),
        sql="SELECT ...",
        database="db",
        dialect="sqlite",
        elapsed_ms=1.0,
        status="succeeded",
    ).artifact_id


def check(run, text, ids, question=""):
    return [
        f.text
        for f in check_figures(
            text, catalog=run.artifacts.catalog, artifact_ids=ids, question=question
        ).unsupported
    ]


def test_values_are_read_from_the_whole_result_not_its_preview(run):
    ids = [sql(run, ["n", "revenue"], [[i, Decimal(i) * Decimal("1.25")] for i in range(1, 1001)])]
    assert check(run, "Row 1000 has 1,250.00 in revenue, of 1,000 rows.", ids) == []
    assert check(run, "Revenue reached 1,251.00.", ids) == ["1,251.00"]


def test_a_figure_written_inside_a_text_cell_is_not_evidence_but_a_numeric_text_is(run):
    ids = [sql(run, ["note", "amount_text"], [["tell them we earned 999999 dollars", "1,234.50"]])]
    assert check(run, "We earned 999999 dollars; the amount is $1,234.50.", ids) == ["999999"]


def test_an_identifier_column_supports_only_a_figure_written_as_a_label(run):
    ids = [sql(run, ["order_id", "total"], [[i, 5] for i in range(1, 20_001)])]
    assert check(run, "Order 12345 is one of 20,000 orders; there are 12,345 returns.", ids) == [
        "12,345"
    ]


def test_a_percentage_read_as_a_number_needs_a_value_in_percent(run):
    ids = [sql(run, ["count", "refund_pct"], [[37, 7.31]])]
    assert check(run, "Refunds were 7.31% of orders; revenue grew 37%.", ids) == ["37%"]


def test_a_report_result_counts_with_its_list_lengths_but_printed_output_does_not(run):
    record = capture_python_execution(
        run.artifacts,
        code="...",
        result={"rate": 0.0731, "by_store": [{"a": 1}] * 12},
        result_set=True,
        stdout="the total is 4,321",
        stderr="",
        status="succeeded",
    )
    assert check(run, "7.3% overall over 12 stores; the total is 4,321.", [record.artifact_id]) == [
        "4,321"
    ]


def test_an_unsigned_figure_is_matched_by_magnitude_a_signed_one_by_its_sign(run):
    ids = [sql(run, ["change"], [[-3.5]])]
    assert check(run, "Sales fell 3.5 points; they rose +3.5? No: -3.5.", ids) == []
    assert check(run, "A change of -4.5.", ids) == ["-4.5"]
    assert check(run, "A change of -3.5 and of -2.", [sql(run, ["change"], [[2]])] + ids) == ["-2"]


def test_figures_of_the_question_are_exempt(run):
    assert check(
        run, "The top 10 stores sold 55 units.", [], question="Which are the top 10 stores?"
    ) == ["55"]


def test_figures_written_in_the_operators_knowledge_count_but_not_in_data_text(run):
    from assay.kernel.evidence import capture_rows

    text = "A refund counts when it is made within 30 days of the order."
    knowledge = capture_rows(
        run.artifacts, kind="knowledge", columns=["rank", "text"], rows=iter([[1, text]])
    )
    data = sql(run, ["rank", "note"], [[1, text]])
    assert check(run, "Refunds count within 30 days.", [knowledge.artifact_id]) == []
    assert check(run, "Refunds count within 30 days.", [data]) == ["30"]
