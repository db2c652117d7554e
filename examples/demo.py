"""The assay demo: a question answered from evidence, end to end.

    make demo                  # or: .venv/bin/python examples/demo.py

1. builds the sample retail database (SQLite, ~200,000 orders) once;
2. boots the kernel and shows the plugins it found;
3. chooses a sandbox: a container engine when one answers, otherwise the
   local runtime, opted into *explicitly* here and said so on screen
   (assay's own default stays fail-closed);
4. asks the question through the code path of ``assay ask`` (the same
   steps on screen, the run kept in the runs store), with a deterministic
   scripted model:
   ``knowledge_search`` (the retail glossary: what a promoted order, a refund
   and the refund rate's denominator are) -> ``sql_query`` ->
   ``code_interpreter`` over the captured result (refund rate per store
   during a promotion, and a chart; the overall rate is only printed) ->
   ``generate_report``: its report writer (a sub-agent, scripted too) finds
   the overall rate missing and hands that calculation back
   (``needs_analysis``); the main agent computes it into ``REPORT_RESULT``
   and calls ``generate_report`` again, which completes the report, citing
   the glossary's definition beside the numbers;
5. asks one question of a shipped CSV file (``examples/retail/region_targets.csv``)
   and of the database together (:mod:`examples.demo_files`), the file's
   source artifact named in the provenance of the query over it;
6. prints the previews the model saw, the artifact ids, and where the
   evidence lives.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for examples.retail when run as a script

DEMO_DIR = ROOT / ".assay" / "demo"
DB_PATH = DEMO_DIR / "retail.db"
GLOSSARY = ROOT / "examples" / "retail" / "glossary"
LOCAL_IMAGE = "localhost/assay-sandbox-python:bookworm"

REFUNDS_SQL = """
SELECT s.store_id, s.name AS store, s.region,
       COUNT(DISTINCT o.order_id) AS promo_orders,
       COUNT(DISTINCT r.order_id) AS refunded_orders,
       ROUND(SUM(o.total), 2) AS promo_revenue
FROM orders o
JOIN stores s ON s.store_id = o.store_id
LEFT JOIN refunds r ON r.order_id = o.order_id
WHERE o.promotion_id IS NOT NULL
GROUP BY s.store_id, s.name, s.region
ORDER BY s.store_id
""".strip()

ANALYSIS_CODE = """
import matplotlib.pyplot as plt

df = load_artifact({artifact_id!r})
df["refund_rate"] = df["refunded_orders"] / df["promo_orders"]
top = df.sort_values("refund_rate", ascending=False).head(10)

fig, ax = plt.subplots(figsize=(8, 4))
ax.barh(top["store"], top["refund_rate"] * 100)
ax.invert_yaxis()
ax.set_xlabel("refund rate during promotions (%)")
ax.set_title("Stores with the highest refund rate on promoted orders")
fig.tight_layout()
plt.show()

overall = df["refunded_orders"].sum() / df["promo_orders"].sum()
print(f"{{len(df)}} stores, overall promotional refund rate {{overall:.2%}}")  # printed only: not a result
REPORT_RESULT = {{
    "worst_store": top.iloc[0]["store"],
    "worst_rate": float(top.iloc[0]["refund_rate"]),
    "by_store": top[["store", "region", "promo_orders", "refunded_orders", "refund_rate"]],
}}
""".strip()


def say(text: str = "") -> None:
    print(text, flush=True)


def banner(text: str) -> None:
    say()
    say(f"== {text} " + "=" * max(0, 70 - len(text)))


def build_database() -> None:
    if DB_PATH.exists():
        say(f"sample database: {DB_PATH} (already built)")
        return
    from examples.retail.generate import write_sqlite

    DEMO_DIR.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    tmp = DB_PATH.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    counts = write_sqlite(tmp)
    tmp.rename(DB_PATH)
    say(
        f"sample database: {DB_PATH} built in {time.perf_counter() - started:.1f} s: "
        + ", ".join(f"{k} {v:,}" for k, v in counts.items())
    )


def prefer_local_image() -> None:
    """Use the image `make image` builds when it exists and the user chose none."""
    if "SANDBOX_IMAGE_PYTHON" in os.environ or not shutil.which("podman"):
        return
    exists = subprocess.run(
        ["podman", "image", "exists", LOCAL_IMAGE], capture_output=True, timeout=30
    )
    if exists.returncode == 0:
        os.environ["SANDBOX_IMAGE_PYTHON"] = LOCAL_IMAGE


def choose_sandbox() -> str:
    """Probe the configured sandbox; opt into the local runtime explicitly if none works."""
    from assay import Kernel
    from assay.plugins.sandbox import SandboxError

    prefer_local_image()
    kernel = Kernel()
    try:
        session = kernel.sandbox.open_session("python")
        try:
            result = session.run_code("print('ok')")
        finally:
            session.close()
        if result.exit_code == 0:
            return f"{session.runtime} (isolated: {session.isolated})"
        reason = f"a test execution failed: {result.stderr.strip()[:200]}"
    except SandboxError as exc:
        reason = f"{exc.code}: {exc.message}"
    finally:
        kernel.close()
    say("!" * 78)
    say("! No usable container sandbox here:")
    say(f"!   {reason}")
    say("! The demo now opts into the LOCAL runtime EXPLICITLY")
    say("! (SANDBOX_RUNTIME=local, SANDBOX_ALLOW_LOCAL_RUNTIME=1): the analysis code runs")
    say("! on this host without container isolation. assay's own default stays fail-closed;")
    say("! install podman and run `make image` to use a real sandbox.")
    say("!" * 78)
    os.environ["SANDBOX_RUNTIME"] = "local"
    os.environ["SANDBOX_ALLOW_LOCAL_RUNTIME"] = "1"
    return "local (isolated: False)"


OVERALL_CODE = """
df = load_artifact({artifact_id!r})
REPORT_RESULT = {{"overall_refund_rate": float(df["refunded_orders"].sum() / df["promo_orders"].sum())}}
""".strip()


def writer_step(messages) -> dict:
    """The scripted report writer's every turn, decided from its conversation: read the evidence, hand the
    overall rate back (the analysis only printed it), then submit a report citing the bound result."""
    import re

    tools = {m.name: m.content for m in messages if m.role == "tool"}
    if "report_evidence_manifest" not in tools:
        return {"tool": "report_evidence_manifest", "arguments": {}}
    listing = tools["report_evidence_manifest"]
    sql, analysis = (
        re.findall(r"- (art_\w+) sql succeeded", listing)[0],
        re.findall(r"- (art_\w+) python", listing)[0],
    )
    glossary = re.findall(r"- (art_\w+) knowledge succeeded", listing)[0]
    if "read_artifact_result" not in tools:
        return {
            "tool": "read_artifact_result",
            "arguments": {"artifact_id": glossary, "selectors": {"field": "heading"}},
        }
    bound = re.findall(
        r"cite artifact (art_\w+)", "".join(m.content or "" for m in messages if m.role == "user")
    )
    if not bound:
        return {
            "tool": "request_report_calculation",
            "arguments": {
                "name": "overall refund rate on promoted orders",
                "inputs": [sql],
                "steps": [
                    "sum refunded_orders over all stores",
                    "divide by the sum of promo_orders",
                ],
            },
        }
    row = int(
        re.search(
            r"^(\d+): \[\"[^\"]*> Refund rate\"\]", tools["read_artifact_result"], re.MULTILINE
        ).group(1)
    )
    document = {
        "title": "Refunds on promoted orders, by store",
        "formats": {"refund_rate": ".2%"},
        "blocks": [
            {
                "type": "text",
                "text": "The refund rate follows the glossary ({file}, {heading}): {text}",
                "cite": {
                    key: {"artifact_id": glossary, "path": [row, key]}
                    for key in ("file", "heading", "text")
                },
            },
            {
                "type": "text",
                "text": "Across all stores, {rate} of promoted orders were refunded.",
                "cite": {
                    "rate": {
                        "artifact_id": bound[-1],
                        "path": "overall_refund_rate",
                        "format": ".2%",
                    }
                },
            },
            {
                "type": "number",
                "label": "Highest store refund rate",
                "artifact_id": analysis,
                "path": "worst_rate",
                "format": ".2%",
            },
            {"type": "heading", "text": "Stores with the highest refund rate"},
            {
                "type": "table",
                "artifact_id": analysis,
                "path": "by_store",
                "max_rows": 10,
                "columns": ["store", "region", "promo_orders", "refunded_orders", "refund_rate"],
                "sort": [{"column": "refund_rate", "descending": True}],
                "caption": "Promoted orders and refunds",
            },
            {
                "type": "chart",
                "chart": "bar",
                "artifact_id": analysis,
                "path": "by_store",
                "x": "store",
                "y": "refund_rate",
                "sort": [{"column": "refund_rate", "descending": True}],
                "max_points": 10,
                "caption": "Refund rate, the 10 highest stores (drawn by the report)",
            },
            *[
                {
                    "type": "image",
                    "artifact_id": chart,
                    "caption": "The analysis' own chart (code_interpreter)",
                }
                for chart in re.findall(r"- (art_\w+) chart succeeded", listing)[:1]
            ],
        ],
    }
    return {"tool": "submit_report", "arguments": {"document": document}}


def report_writer_plugin():
    """A plugin registering the scripted report writer as model ``demo_report_writer`` (ASSAY_REPORT_MODEL)."""
    from assay import hookimpl
    from assay.plugins.models.scripted import ScriptedModel

    class DemoReportWriter(ScriptedModel):
        model_id = "demo_report_writer"

        def __init__(self, **options) -> None:
            super().__init__([writer_step] * 20)

    class Plugin:
        @hookimpl
        def register_models(self, register):
            register(DemoReportWriter)

    return Plugin()


def script_steps() -> list:
    """What the scripted model does; later steps read ids from earlier results."""

    def last_artifact(messages, kind: str) -> str:
        import json

        for message in reversed(messages):
            if message.role == "tool" and message.content:
                for line in message.content.splitlines():
                    if line.startswith("artifacts:"):
                        ids = [i.strip() for i in line.split(":", 1)[1].split(",")]
                        return ids[0] if kind == "first" else ids
        raise RuntimeError(
            "no artifact id in the conversation: " + json.dumps([m.role for m in messages])
        )

    def analysis(messages):
        sql_artifact = last_artifact(messages, "first")
        return {
            "tool": "code_interpreter",
            "arguments": {
                "code": ANALYSIS_CODE.format(artifact_id=sql_artifact),
                "inputs": [sql_artifact],
            },
        }

    def first_of(messages, tool: str) -> tuple[str, str]:
        """The first ``tool`` result's artifact id and its text."""
        for message in messages:
            if (
                message.role == "tool"
                and message.name == tool
                and "artifacts:" in (message.content or "")
            ):
                return message.content.rsplit("artifacts:", 1)[1].split(",")[
                    0
                ].strip(), message.content
        raise RuntimeError(f"no {tool} result with an artifact in the conversation")

    def compute_missing(messages):
        import re

        handed_back = next(
            m.content
            for m in reversed(messages)
            if m.role == "tool" and m.name == "generate_report"
        )
        inputs = re.findall(r"art_\w+", handed_back.split("Inputs:", 1)[1].splitlines()[0])
        return {
            "tool": "code_interpreter",
            "arguments": {"code": OVERALL_CODE.format(artifact_id=inputs[0]), "inputs": inputs},
        }

    return [
        {
            "tool": "knowledge_search",
            "arguments": {"query": "refund rate denominator promoted order", "k": 3},
        },
        {"tool": "sql_query", "arguments": {"sql": REFUNDS_SQL, "datasource": "retail"}},
        analysis,
        {
            "tool": "generate_report",
            "arguments": {
                "instructions": "Refunds on promoted orders by store, the overall "
                "refund rate, and the glossary's definition"
            },
        },
        compute_missing,
        {"tool": "generate_report", "arguments": {}},
        {
            "text": "Done: the report above cites the glossary's definition and the SQL and Python artifacts it "
            "read its numbers from."
        },
    ]


def saved_report(kernel, run_id: str):
    """The path of the run's saved HTML report (a verified copy), or None when none was saved."""
    from assay import AssayError
    from assay.plugins.reports.cli import export_saved_html

    try:
        return export_saved_html(kernel, run_id)
    except AssayError:
        return None


def main() -> int:
    banner("1. sample data")
    build_database()
    os.environ.setdefault("ASSAY_HOME", str(DEMO_DIR / "home"))
    os.environ["ASSAY_SQL_DATABASES"] = f"retail=sqlite:///{DB_PATH}"
    os.environ["ASSAY_KNOWLEDGE"] = (
        f"glossary={GLOSSARY}"  # the metrics' definitions (docs/knowledge.md)
    )

    banner("2. sandbox")
    # The first cell imports pandas and matplotlib under the sandbox's 0.5-CPU
    # quota; on a busy machine that alone can approach the 30 s default.
    os.environ.setdefault("SANDBOX_TIMEOUT", "120")
    say(f"execution time limit: {os.environ['SANDBOX_TIMEOUT']} s (SANDBOX_TIMEOUT)")
    say(f"sandbox: {choose_sandbox()}")

    from assay import Kernel
    from assay.plugins.agent.ask import AskOptions, ask
    from assay.plugins.agent.cli_ask import StepPrinter, print_result
    from assay.plugins.models.scripted import ScriptedModel

    banner("3. kernel and plugins")
    os.environ["ASSAY_REPORT_MODEL"] = (
        "demo_report_writer"  # the report writer's model (docs/reports.md)
    )
    kernel = Kernel(plugins=[report_writer_plugin()]).start()
    for info in kernel.plugins():
        registered = ", ".join(f"{k}: {', '.join(v)}" for k, v in info.registered.items()) or "-"
        status = info.status if not info.error else f"{info.status} ({info.error['code']})"
        say(f"  {info.name:<18} {status:<10} {registered}")

    banner("4. the agent answers from evidence (the code path of `assay ask`)")
    question = "Which stores refund the most promoted orders, and what is the overall refund rate?"
    say(f"question: {question}")
    say("model: scripted (deterministic; `assay ask --model PROVIDER[:NAME]` uses a real one)")
    printer = StepPrinter()
    try:
        options = AskOptions(question=question, databases=["retail"])
        transcript = ask(kernel, options, model=ScriptedModel(script_steps()), observers=[printer])
        print_result(transcript, printer, "steps")
        for result in transcript.tool_results:
            say()
            status = result.metadata.get("report_status")
            say(
                f"--- what the model saw from {result.tool} ({'ok' if result.success else 'FAILED'}, "
                f"{result.elapsed_ms:.0f} ms" + (f", report status {status})" if status else ")")
            )
            if status == "needs_analysis":
                say(
                    ">>> HAND-BACK: the report writer asked the main agent for a calculation it lacks"
                )
            say(result.for_model())
        failed = [r for r in transcript.tool_results if not r.success]
        report_path = saved_report(kernel, transcript.run_id)

        banner("5. a file, asked like a database (`assay ask --file`)")
        from examples.demo_files import ask_file_and_database

        file_ok = ask_file_and_database(kernel, say, StepPrinter, print_result)
    finally:
        kernel.close()

    banner("6. evidence")
    run_id = transcript.run_id
    say(f"run: {run_id} (status {transcript.status})")
    say(f"artifacts captured: {', '.join(transcript.artifact_ids) or 'none'}")
    say(f"evidence store: {os.environ['ASSAY_HOME']}")
    say(f"inspect it:  .venv/bin/assay runs show {run_id}")
    say(f"             .venv/bin/assay artifacts ls --run {run_id}")
    say(
        f"             .venv/bin/assay runs export {run_id} && .venv/bin/assay artifacts verify {run_id}.zip"
    )
    say(f"HTML report: {report_path or 'none was saved'}")
    if report_path:
        say(f"open it:     .venv/bin/assay report show {run_id}")
    reports = [
        r.data["report_artifact_id"]
        for r in transcript.tool_results
        if r.tool == "generate_report"
        and isinstance(r.data, dict)
        and r.data.get("report_artifact_id")
    ]
    if reports:
        say(
            f"             .venv/bin/assay reports verify {reports[-1]}   # re-reads every cited number"
        )
        say(
            f"             .venv/bin/assay reports status {run_id}    # hand-backs, budgets, counters"
        )
    if not file_ok:
        say(
            "demo FAILED: the question of the CSV file and the database was not answered from traced evidence"
        )
        return 1
    if failed or str(transcript.status) != "answered":
        say(f"demo FAILED: status {transcript.status}, {len(failed)} tool call(s) did not succeed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
