"""The demo's second question: one asked of a shipped CSV file and of the database together.

``examples/retail/region_targets.csv`` is registered as a table (``assay ask --file``'s code path); the
scripted model reads the targets from the file and the revenue from the database with ``sql_query``, and
answers with the regions that missed their target, quoting the figures both results show. The file's
``source`` artifact (its SHA-256) is named in the provenance of the query over it.
"""

from __future__ import annotations

from pathlib import Path

TARGETS = Path(__file__).resolve().parent / "retail" / "region_targets.csv"
TARGETS_SQL = "SELECT region, revenue_target FROM targets ORDER BY region"
REVENUE_SQL = """
SELECT s.region, ROUND(SUM(o.total), 2) AS revenue
FROM orders o JOIN stores s ON s.store_id = o.store_id
GROUP BY s.region ORDER BY s.region
""".strip()
QUESTION = "Which regions missed their revenue target (the targets are in region_targets.csv)?"


def _table(messages, datasource: str) -> dict[str, str]:
    """region -> the figure, from the markdown preview of the ``sql_query`` result over ``datasource``."""
    for message in messages:
        if (
            message.role == "tool"
            and message.name == "sql_query"
            and f"from {datasource} in" in (message.content or "")
        ):
            rows = [
                line.strip("|").split("|")
                for line in message.content.splitlines()
                if line.startswith("| ")
            ]
            return {cells[0].strip(): cells[1].strip() for cells in rows[1:]}
    raise RuntimeError(f"no sql_query result from {datasource} in the conversation")


def answer(messages) -> dict:
    targets, revenue = _table(messages, "files"), _table(messages, "retail")
    missed = [r for r in sorted(targets) if r in revenue and float(revenue[r]) < float(targets[r])]
    lines = [f"{r}: revenue {revenue[r]} against a target of {targets[r]}" for r in missed]
    return {
        "text": ("Missed their target: " + "; ".join(lines) + ".")
        if missed
        else "Every region met its target."
    }


def script_steps() -> list:
    return [
        {"tool": "sql_query", "arguments": {"sql": TARGETS_SQL, "datasource": "files"}},
        {"tool": "sql_query", "arguments": {"sql": REVENUE_SQL, "datasource": "retail"}},
        answer,
    ]


def ask_file_and_database(kernel, say, printer_cls, print_result) -> bool:
    """Ask :data:`QUESTION`; True when it was answered from evidence with the file's source traced."""
    from assay.plugins.agent.ask import AskOptions, ask
    from assay.plugins.ask_cli import open_files
    from assay.plugins.models.scripted import ScriptedModel

    say(f"file: {TARGETS} (registered as table 'targets' of datasource 'files')")
    say(f"question: {QUESTION}")
    printer = printer_cls()
    options = AskOptions(
        question=QUESTION, databases=["retail"], files=[f"targets={TARGETS}"], open_files=open_files
    )
    transcript = ask(kernel, options, model=ScriptedModel(script_steps()), observers=[printer])
    print_result(transcript, printer, "steps")
    catalog = kernel.evidence.catalog
    traced = False
    for artifact_id in transcript.artifact_ids:
        record = catalog.get(artifact_id)
        for source_id in (record.provenance.get("sources") or []) if record else []:
            source = catalog.get(source_id)
            say(
                f"{artifact_id} read {source.provenance['name']} ({source.provenance['size']} bytes, "
                f"sha256 {source.provenance['sha256'][:16]}...): source artifact {source_id}"
            )
            traced = True
    return traced and str(transcript.status) == "answered"
