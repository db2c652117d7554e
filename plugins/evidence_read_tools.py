"""The model-facing evidence tools (registered lazily by :mod:`assay.plugins.evidence_tools`).

Kept apart from that plugin module because importing these loads the evidence
store (~30 ms measured), which kernel start-up must not.

``read_artifact_result`` (a verified, bounded selection of one artifact),
``report_evidence_manifest`` (what the run captured) and
``artifact_details`` (full records of up to 12 artifacts).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from assay import RunContext, ToolResult, tool
from assay.kernel import evidence as ev


def _catalog(run: RunContext):
    if run.artifacts is not None:
        return run.artifacts.catalog
    if run.kernel is None:
        raise ev.ArtifactError(
            "ARTIFACT_STORE_UNAVAILABLE",
            "this run has no evidence store",
            "Start the run from a kernel with capture enabled.",
        )
    return run.kernel.evidence.catalog


@tool(name="read_artifact_result")
def read_artifact_result_tool(
    artifact_id: str,
    run: RunContext,
    selectors: Annotated[
        ev.Selectors | None,
        Field(
            description=(
                "What to read. field: one column; rows: [start, stop] (stop exclusive, negative from the end); "
                'path: [row, column-or-key, ...] such as [216] or [-1, "total"]. Omit for the first rows.'
            )
        ),
    ] = None,
) -> ToolResult:
    """Read part of a captured result back from the evidence store, checking it is unchanged.

    Use it to get exact numbers for a report instead of copying them from a preview.

    Args:
        artifact_id: The id a tool returned, such as art_0123abcd...
    """
    selected = ev.read_artifact_result(_catalog(run), artifact_id, selectors)
    return ToolResult.ok(
        data=selected.model_dump(mode="json"),
        content=selected.text(),
        artifacts=[ev.get_record(_catalog(run), artifact_id).ref()],
    )


@tool
def report_evidence_manifest(run: RunContext) -> ToolResult:
    """List what this run captured as evidence: each artifact's id, kind, status, rows, columns and SQL/code.

    Cite artifacts by these ids; use artifact_details or read_artifact_result for more.
    """
    catalog = _catalog(run)
    runs = run.evidence_runs()[
        ::-1
    ]  # this run first, then its thread's earlier runs (a follow-up), newest first
    manifests = [ev.evidence_manifest(catalog, rid, max_chars=12_000 // len(runs)) for rid in runs]
    lines: list[str] = []
    for rid, manifest in zip(runs, manifests):
        earlier = "" if rid == run.run_id else " (an earlier run of this thread: citable)"
        lines.append(f"{manifest['count']} artifacts in run {rid}{earlier}")
        for e in manifest["artifacts"]:
            rows = "-" if e["row_count"] is None else e["row_count"]
            flag = f" {e['incomplete']}." if e.get("incomplete") else ""
            lines.append(
                f"- {e['artifact_id']} {e['kind']} {e['status']} rows={rows}{flag} "
                f"columns={','.join(e['columns'])}: {e['summary']}"
            )
        if manifest["truncated"]:
            lines.append(f"({manifest['omitted']} more not listed: over the budget)")
    data = dict(manifests[0], **({"thread": manifests[1:]} if len(manifests) > 1 else {}))
    return ToolResult.ok(data=data, content="\n".join(lines))


@tool
def artifact_details(
    artifact_ids: Annotated[list[str], Field(description="At most 12 artifact ids.")],
    run: RunContext,
) -> ToolResult:
    """Full records of some artifacts: provenance (SQL or code), columns, types, counts, hash, preview."""
    details = ev.artifact_details(_catalog(run), artifact_ids)
    return ToolResult.ok(data=details, content=_details_text(details))


def _details_text(
    details: list[dict[str, Any]], max_chars: int = 20_000, preview_rows: int = 5
) -> str:
    blocks = []
    for d in details:
        if "error" in d and "kind" not in d:
            blocks.append(f"{d['artifact_id']}: {d['error']}")
            continue
        prov = d.get("provenance") or {}
        rows = "-" if d.get("row_count") is None else d["row_count"]
        lines = [
            f"{d['artifact_id']}: {d['kind']} {d['status']}, rows={rows}, "
            f"complete={d.get('complete')}, sha256={d['sha256'][:16]}..."
        ]
        if not d.get("complete", True):
            lines.append(
                "INCOMPLETE artifact: "
                + str(prov.get("incomplete_reason") or "the capture stopped early")
            )
        if d.get("columns"):
            types = d.get("column_types") or []
            cols = [f"{c} {types[i]}" if i < len(types) else c for i, c in enumerate(d["columns"])]
            lines.append("columns: " + ", ".join(cols))
        for key in ("sql", "code", "datasource", "error"):
            if prov.get(key):
                lines.append(f"{key}: {prov[key]}")
        for row in d.get("preview", [])[:preview_rows]:
            lines.append("  " + ev.dumps(row)[:500])
        if d.get("row_count") and d["row_count"] > min(preview_rows, len(d.get("preview", []))):
            lines.append("  ... use read_artifact_result for the other rows")
        blocks.append("\n".join(lines))
    text = "\n\n".join(blocks)
    return (
        text
        if len(text) <= max_chars
        else text[: max_chars - 30] + "\n... (truncated to the budget)"
    )
