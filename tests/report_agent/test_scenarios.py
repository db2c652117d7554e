"""The scenario suite runs every report path and adds up the four outcome counters."""

from __future__ import annotations

from examples.report_scenarios import run_suite


def test_the_scenario_suite_reports_its_counters(tmp_path):
    lines: list[str] = []
    totals = run_suite(str(tmp_path), out=lines.append)
    assert totals == {
        "recovered_by_handback": 1,
        "delivered_with_gaps": 3,
        "stopped_failed": 2,
        "completed_clean": 2,
    }
    assert lines[-1].startswith("totals: recovered_by_handback 1")
    assert any(
        line.startswith("calculation attempts spent") and " partial " in line for line in lines
    )
