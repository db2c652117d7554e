"""The report sub-agent's scenario suite: each path of a report, and the counters they add up to.

    .venv/bin/python examples/report_scenarios.py          # prints one line per scenario and the totals

Each scenario runs a real kernel on a temporary evidence store (SQLite
catalog + local content store), captures what a main agent would have
captured, and drives the report writer with a scripted model. The counters
are the outcome flags ``generate_report`` sets when a report is final:
recovered by hand-back, delivered with gaps, stopped as failed, completed clean.
The helpers here are also what tests/report_agent uses.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

PLUGINS = [
    "assay.plugins.artifact_stores.local",
    "assay.plugins.artifact_stores.s3",
    "assay.plugins.evidence_tools",
    "assay.plugins.reports.markdown",
    "assay.plugins.report_agent",
    "assay.plugins.models.scripted",
]
COUNTERS = ("recovered_by_handback", "delivered_with_gaps", "stopped_failed", "completed_clean")


def new_kernel(**settings: Any):
    from assay import Kernel, Settings

    return Kernel(load_entrypoints=False, plugins=PLUGINS, settings=Settings.from_env(**settings))


# --- what a main agent would have captured ---------------------------------------------------------------


def sql(
    run: Any,
    columns: list[str],
    rows: list[list[Any]],
    text: str = "select ...",
    status: str = "succeeded",
):
    from assay.kernel.evidence import capture_sql_execution

    return capture_sql_execution(
        run.artifacts,
        columns=columns,
        rows=iter(rows),
        sql=text,
        database="retail",
        dialect="sqlite",
        elapsed_ms=1.0,
        status=status,
        error=None if status == "succeeded" else "no such table: x",
    )


def py(
    run: Any,
    result: Any = None,
    *,
    result_set: bool = True,
    status: str = "succeeded",
    stdout: str = "",
    inputs: tuple[str, ...] = (),
):
    from assay.kernel.evidence import capture_python_execution

    return capture_python_execution(
        run.artifacts,
        code="REPORT_RESULT = ...",
        result=result,
        result_set=result_set,
        stdout=stdout,
        stderr="",
        status=status,
        inputs=inputs,
        error=None if status == "succeeded" else "ZeroDivisionError",
    )


def refunds(run: Any, stores: int = 120, key: int = 87):
    """Refunds per store; the highest rate is at row ``key`` (past the 50-row preview)."""
    rows = []
    for i in range(stores):
        orders = 100 + i
        refunded = 60 + i if i == key else (i % 9) + 1
        rows.append(
            [
                i,
                f"store {i:03d}",
                ["north", "south", "east"][i % 3],
                orders,
                refunded,
                round(refunded / orders, 4),
            ]
        )
    return sql(
        run,
        ["store_id", "store", "region", "promo_orders", "refunded_orders", "refund_rate"],
        rows,
        "SELECT store_id, store, region, promo_orders, refunded_orders, refund_rate FROM v ORDER BY store_id",
    )


def tamper(run: Any, record: Any) -> None:
    """Flip one byte of an artifact's stored content (a local store)."""
    path = run.artifacts.catalog.store.local_path(record.sha256)
    path.chmod(0o644)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))


# --- the scripted report writer --------------------------------------------------------------------------


def writer(*steps: Any):
    from assay.plugins.models.scripted import ScriptedModel

    return ScriptedModel(list(steps))


def manifest() -> dict[str, Any]:
    return {"tool": "report_evidence_manifest", "arguments": {}}


def ask(name: str, steps: list[str], inputs: list[str]) -> dict[str, Any]:
    return {
        "tool": "request_report_calculation",
        "arguments": {"name": name, "steps": steps, "inputs": inputs},
    }


def submit(document: dict[str, Any] | Callable[[list[Any]], dict[str, Any]]):
    if callable(document):
        return lambda messages: {
            "tool": "submit_report",
            "arguments": {"document": document(messages)},
        }
    return {"tool": "submit_report", "arguments": {"document": document}}


def boom(messages: list[Any]) -> dict[str, Any]:
    raise RuntimeError("the model provider went away")


def bound_artifact(messages: list[Any]) -> str:
    """The artifact id of the last calculation the report was told is done."""
    for message in reversed(messages):
        if (
            message.role == "user"
            and message.content
            and "is done: cite artifact" in message.content
        ):
            return re.search(r"cite artifact (art_\w+)", message.content).group(1)
    raise AssertionError("no bound calculation in the conversation")


def number(label: str, artifact_id: str, path: Any, fmt: str | None = None) -> dict[str, Any]:
    return {
        "type": "number",
        "label": label,
        "artifact_id": artifact_id,
        "path": path,
        "format": fmt,
    }


def highest_table(artifact_id: str, sort: bool = True) -> list[dict[str, Any]]:
    table = {
        "type": "table",
        "artifact_id": artifact_id,
        "max_rows": 5,
        "columns": ["store", "region", "refund_rate"],
        "caption": "Stores by refund rate",
    }
    if sort:
        table["sort"] = [{"column": "refund_rate", "descending": True}]
    return [{"type": "heading", "text": "Stores with the highest refund rate"}, table]


def generate(run: Any, model: Any, instructions: str = "Refunds on promoted orders"):
    from assay.plugins.report_agent.generate import generate as run_generate, use_report_model

    use_report_model(run, model)
    return run_generate(run, instructions)


# --- the scenarios ---------------------------------------------------------------------------------------


def clean(kernel: Any):
    run = kernel.new_run()
    data = refunds(run)
    rate = py(run, {"overall_refund_rate": 0.0731})
    model = writer(
        manifest(),
        submit(
            {
                "title": "Refunds",
                "blocks": [
                    number("Overall refund rate", rate.artifact_id, "overall_refund_rate", ".2%"),
                    *highest_table(data.artifact_id),
                ],
            }
        ),
    )
    return [generate(run, model)]


def recovered(kernel: Any):
    run = kernel.new_run()
    data = refunds(run)
    model = writer(
        manifest(),
        ask(
            "overall refund rate",
            ["sum refunded_orders", "divide by sum promo_orders"],
            [data.artifact_id],
        ),
        submit(
            lambda m: {
                "title": "Refunds",
                "blocks": [
                    number("Overall refund rate", bound_artifact(m), "overall_refund_rate", ".2%"),
                    *highest_table(data.artifact_id),
                ],
            }
        ),
    )
    first = generate(run, model)
    py(run, {"overall_refund_rate": 0.0731}, inputs=(data.artifact_id,))
    return [first, generate(run, model)]


def gaps(kernel: Any):
    run = kernel.new_run()
    data = refunds(run)
    rate = py(run, {"overall_refund_rate": 0.0731})
    tamper(run, rate)
    model = writer(
        submit(
            {
                "title": "Refunds",
                "blocks": [
                    number("Overall refund rate", rate.artifact_id, "overall_refund_rate", ".2%"),
                    *highest_table(data.artifact_id),
                ],
            }
        )
    )
    return [generate(run, model)]


def no_progress(kernel: Any):
    run = kernel.new_run()
    data = refunds(run)
    bad = {"title": "Refunds", "blocks": highest_table(data.artifact_id, sort=False)}
    return [generate(run, writer(submit(bad), submit(bad), submit(bad), submit(bad)))]


def writer_raises_after_draft(kernel: Any):
    run = kernel.new_run()
    data = refunds(run)
    draft = {
        "title": "Refunds",
        "blocks": [
            number("Worst store's rate", data.artifact_id, [87, "refund_rate"]),
            *highest_table(data.artifact_id, sort=False),
        ],
    }
    return [generate(run, writer(submit(draft), boom))]


def writer_raises_nothing_renderable(kernel: Any):
    run = kernel.new_run()
    refunds(run)
    draft = {
        "title": "Refunds",
        "blocks": [number("Rate", "art_does_not_exist", [0, "refund_rate"])],
    }
    return [generate(run, writer(submit(draft), boom))]


def attempts_spent(kernel: Any):
    run = kernel.new_run()
    data = refunds(run)
    model = writer(
        ask("median refund rate", ["median of refund_rate"], [data.artifact_id]),
        submit({"title": "Refunds", "blocks": highest_table(data.artifact_id)}),
    )
    first = generate(run, model)
    for _ in range(3):
        py(run, status="failed", result_set=False)
    return [first, generate(run, model)]


def order_repaired(kernel: Any):
    run = kernel.new_run()
    data = refunds(run)
    model = writer(
        submit({"title": "Refunds", "blocks": highest_table(data.artifact_id, sort=False)}),
        submit({"title": "Refunds", "blocks": highest_table(data.artifact_id)}),
    )
    return [generate(run, model)]


SCENARIOS: dict[str, Callable[[Any], list[Any]]] = {
    "completed clean": clean,
    "hand-back recovered": recovered,
    "tampered value degraded": gaps,
    "same failure repeated": no_progress,
    "writer raised after a draft": writer_raises_after_draft,
    "writer raised, nothing renderable": writer_raises_nothing_renderable,
    "calculation attempts spent": attempts_spent,
    "order claim repaired": order_repaired,
}


def run_suite(home: str | None = None, out: Callable[[str], Any] = print) -> dict[str, int]:
    """Run every scenario on a fresh store under ``home``; the totals of the four counters."""
    home = home or tempfile.mkdtemp(prefix="assay-report-scenarios-")
    totals = dict.fromkeys(COUNTERS, 0)
    kernel = new_kernel(home=home)
    try:
        for name, scenario in SCENARIOS.items():
            final = scenario(kernel)[-1]
            flags = [c for c in COUNTERS if final.counters.get(c)]
            for c in flags:
                totals[c] += 1
            out(f"{name:<36} {final.status:<15} {', '.join(flags) or '-'}")
    finally:
        kernel.close()
    out("totals: " + ", ".join(f"{c} {n}" for c, n in totals.items()))
    return totals


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("ASSAY_LOG_LEVEL", "WARNING")
    run_suite()
