"""What a follow-up's main agent starts with: its thread's questions, answers and evidence, verified.

A follow-up run continues a parent run (:mod:`assay.plugins.runs.thread`
keeps the link). :func:`load_thread` reads the chain of runs and builds
the part of the system prompt that tells the agent about them:

- the earlier questions and final answers. The newest
  ``thread_recent_turns`` turns are shown whole (an answer up to 2,000
  characters); older turns are *summarised*: their question, and the first
  200 characters of their answer. Which turns were summarised is recorded.
  A thread too long for even that (the turns may use half the thread's
  budget) leaves its oldest summarised turns out, counted and recorded.
- the thread's evidence manifest: one line per artifact (id, kind, rows,
  completeness, the SQL or code it came from, its run), newest turn first,
  until the thread's share of the prompt budget is spent; what is left out
  is counted per run, never dropped silently.
- every artifact of the thread is read back verified first (its SHA-256,
  as the report sub-agent reads evidence). One that is gone or altered is
  listed with its code and message under "unavailable", before the agent
  plans, and is not citable.
- a follow-up given no files: which of its parent's files are registered again and which are not
  (changed or gone since: ``FILE_CHANGED`` / ``FILE_MISSING``), by :func:`note_files` once the files
  plugin checked them (:func:`assay.plugins.agent.ask.reopen_thread_files`).

Not the transcripts: an earlier tool result is reached through its artifact
(``read_artifact_result``), so the follow-up re-runs nothing to cite it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assay.kernel.errors import AssayError

from ..runs.thread import THREAD_PARENT_NOT_FOUND, thread_chain

if TYPE_CHECKING:
    from assay.kernel.protocols import KernelAPI as Kernel

    from ..runs.records import RunRecord
    from .settings import AgentSettings

THREAD_DATASOURCE_NEEDED = "THREAD_DATASOURCE_NEEDED"
RECENT_ANSWER_CHARS = 2_000
SUMMARY_ANSWER_CHARS = 200
PROBLEMS_LISTED = 20


@dataclass(frozen=True)
class ThreadProblem:
    """An artifact of the thread that cannot be cited: gone, altered, or unreadable."""

    artifact_id: str
    run_id: str
    code: str
    message: str


@dataclass
class ThreadContext:
    """A follow-up's view of its thread (built by :func:`load_thread`)."""

    parent_run_id: str
    run_ids: list[str]  # the earlier runs, oldest first (the parent last)
    prompt: str = ""
    artifact_ids: list[str] = field(default_factory=list)  # verified: the follow-up may cite these
    problems: list[ThreadProblem] = field(default_factory=list)
    summarised: list[str] = field(default_factory=list)  # runs whose turn was summarised
    not_shown: list[str] = field(
        default_factory=list
    )  # the oldest summarised turns left out (a very long thread)
    listed: int = 0  # artifacts the manifest lists
    omitted: dict[str, int] = field(
        default_factory=dict
    )  # per run: artifacts left out of the manifest
    datasources: list[str] = field(default_factory=list)  # the parent's
    files: dict[str, Any] | None = None  # the parent's files record (a follow-up gets them again)
    files_registered: list[str] = field(
        default_factory=list
    )  # the parent's tables registered again
    file_problems: list[dict[str, Any]] = field(
        default_factory=list
    )  # the parent's files changed or gone since (not registered)
    files_inherited: bool = False  # the follow-up was given no files: its parent's were checked

    def record(self) -> dict[str, Any]:
        """What the run record keeps of the thread."""
        return {
            "parent_run_id": self.parent_run_id,
            "chain": self.run_ids,
            "verified_artifacts": len(self.artifact_ids),
            "manifest_listed": self.listed,
            "manifest_omitted": self.omitted,
            "summarised_turns": self.summarised,
            "turns_not_shown": self.not_shown,
            "problems": [vars(p) for p in self.problems],
            **(
                {"files": {"registered": self.files_registered, "problems": self.file_problems}}
                if self.files_inherited
                else {}
            ),
        }


def load_thread(
    kernel: Kernel,
    parent_run_id: str,
    settings: AgentSettings,
    *,
    budget_chars: int | None = None,
) -> ThreadContext:
    """Read ``parent_run_id``'s thread, verify its artifacts, and write the prompt part (within the budget)."""
    chain = thread_chain(kernel.runs, parent_run_id)
    if not chain:
        raise AssayError(
            THREAD_PARENT_NOT_FOUND,
            f"no run {parent_run_id!r} to continue",
            "Give a run id `assay runs list` shows, or `last`.",
        )
    ctx = ThreadContext(
        parent_run_id=parent_run_id,
        run_ids=[r.run_id for r in chain],
        datasources=list((chain[-1].summary or {}).get("datasources") or []),
        files=(chain[-1].summary or {}).get("files") or None,
    )
    if budget_chars is None:
        budget_chars = int(
            settings.prompt_tokens * settings.chars_per_token * settings.thread_share
        )
    evidence = _verified_evidence(kernel, chain, ctx)
    turns = _turns(chain, settings.thread_recent_turns, ctx, max_chars=budget_chars // 2)
    head = (
        f"This question continues a thread of {len(chain)} earlier run(s). Their tool results are not "
        "repeated here: each is an artifact, verified just now, that you may cite by its id and read back "
        "with read_artifact_result. Do not re-run a query whose artifact is listed: cite it. Re-query only "
        "when the question is about data that may have changed since; then cite the new artifact."
    )
    problems = _problems_text(ctx.problems)
    fixed = len(head) + len(turns) + len(problems) + 64
    manifest = _manifest_text(evidence, max(0, budget_chars - fixed), ctx)
    ctx.prompt = "\n\n".join(p for p in (head, turns, manifest, problems) if p)
    return ctx


def _turns(chain: list[RunRecord], recent: int, ctx: ThreadContext, *, max_chars: int) -> str:
    entries = []
    for index, record in enumerate(chain, 1):
        whole = index > len(chain) - recent
        limit = RECENT_ANSWER_CHARS if whole else SUMMARY_ANSWER_CHARS
        answer = " ".join((record.answer or f"(no answer: {record.status})").split())
        if not whole:
            ctx.summarised.append(record.run_id)
        clipped = answer if len(answer) <= limit else answer[: limit - 3] + "..."
        tag = "" if whole else " [summarised]"
        entries.append(
            f"{index}. run {record.run_id} ({record.status}){tag}\n   Q: "
            f"{_one_line(record.question, 500)}\n   A: {clipped}"
        )
    # a very long thread: the oldest summarised turns are counted, not shown, until the turns fit
    hidden = 0
    while hidden < len(ctx.summarised) and sum(len(e) + 1 for e in entries[hidden:]) > max_chars:
        hidden += 1
    ctx.not_shown = ctx.summarised[:hidden]
    lines = ["Earlier turns (oldest first):"]
    if hidden:
        lines.append(
            f"({hidden} older turn(s) not shown, over the prompt budget: runs {ctx.not_shown[0]} to "
            f"{ctx.not_shown[-1]}; their artifacts are listed below as far as the budget allows)"
        )
    return "\n".join(lines + entries[hidden:])


def _verified_evidence(
    kernel: Kernel, chain: list[RunRecord], ctx: ThreadContext
) -> list[tuple[str, Any]]:
    """(run id, record) of every verified artifact of the thread, newest run first; problems into ``ctx``."""
    from assay.kernel.evidence import ArtifactError, verify

    catalog = kernel.evidence.catalog
    out: list[tuple[str, Any]] = []
    for run in reversed(chain):
        try:
            catalog.import_shared(run.run_id)
            known = {r.artifact_id: r for r in catalog.iter(run.run_id)}
        except AssayError as exc:
            ctx.problems.extend(
                ThreadProblem(a, run.run_id, exc.code, exc.message) for a in run.artifact_ids
            )
            continue
        ids = list(dict.fromkeys([*run.artifact_ids, *known]))
        for artifact_id in ids:
            record = known.get(artifact_id)
            if record is None:
                ctx.problems.append(
                    ThreadProblem(
                        artifact_id,
                        run.run_id,
                        "ARTIFACT_NOT_FOUND",
                        f"no artifact {artifact_id!r} in the catalog (deleted)",
                    )
                )
                continue
            try:
                verify(catalog, record)
            except ArtifactError as exc:
                ctx.problems.append(ThreadProblem(artifact_id, run.run_id, exc.code, exc.message))
                continue
            ctx.artifact_ids.append(artifact_id)
            out.append((run.run_id, record))
    return out


def _manifest_text(evidence: list[tuple[str, Any]], budget: int, ctx: ThreadContext) -> str:
    if not evidence:
        return ""
    lines = ["Evidence of the thread (newest turn first; cite by id):"]
    used = len(lines[0])
    for run_id, record in evidence:
        rows = "-" if record.row_count is None else f"{record.row_count:,}"
        state = (
            record.status
            if record.status != "succeeded"
            else ("complete" if record.complete else "INCOMPLETE")
        )
        line = f"- {record.artifact_id} {record.kind} rows={rows} {state} (run {run_id}): {record.summary(100)}"
        if used + len(line) + 1 > budget:
            ctx.omitted[run_id] = ctx.omitted.get(run_id, 0) + 1
            continue
        lines.append(line)
        used += len(line) + 1
        ctx.listed += 1
    if ctx.omitted:
        left = ", ".join(f"{n} of run {r}" for r, n in ctx.omitted.items())
        lines.append(
            f"(not listed, over the prompt budget: {left}; artifact_details shows any of them by id)"
        )
    return "\n".join(lines)


def _problems_text(problems: list[ThreadProblem]) -> str:
    if not problems:
        return ""
    lines = [
        "Unavailable evidence of the thread (do NOT cite these; re-run the analysis if you need it):"
    ]
    for p in problems[:PROBLEMS_LISTED]:
        lines.append(f"- {p.artifact_id} (run {p.run_id}): {p.code}: {_one_line(p.message, 200)}")
    if len(problems) > PROBLEMS_LISTED:
        lines.append(f"- and {len(problems) - PROBLEMS_LISTED} more unavailable artifact(s)")
    return "\n".join(lines)


def _one_line(text: str, width: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 3] + "..."


def note_files(
    ctx: ThreadContext,
    tables: list[str],
    problems: list[dict[str, Any]],
    resource: Any = None,
) -> None:
    """Tell the follow-up's agent which of its parent's files are registered again and which are not
    (changed or gone: their code), before it plans; kept in the run's thread record too."""
    ctx.files_registered, ctx.file_problems = list(tables), list(problems)
    ctx.files_inherited = True
    lines = []
    if tables and resource is not None:
        lines.append(
            f"The files of the thread are registered again, their bytes checked against the thread's "
            f"record: table(s) {', '.join(tables)} of datasource {resource.name!r}."
        )
    if problems:
        lines.append(
            "Files of the thread that are NOT registered (changed or gone since; never re-read: do not "
            "query them, their earlier evidence still cites the old bytes):"
        )
        for p in problems[:PROBLEMS_LISTED]:
            lines.append(
                f"- {p.get('name')} (table {p.get('table')}): {p['code']}: "
                f"{_one_line(p.get('message') or '', 200)}"
            )
        if len(problems) > PROBLEMS_LISTED:
            lines.append(f"- and {len(problems) - PROBLEMS_LISTED} more")
    if lines:
        ctx.prompt = "\n\n".join(p for p in (ctx.prompt, "\n".join(lines)) if p)


def parent_datasources(ctx: ThreadContext) -> list[str]:
    """The parent's datasources to attach again; one recorded with its password masked cannot be."""
    masked = [d for d in ctx.datasources if "***" in d]
    if masked:
        raise AssayError(
            THREAD_DATASOURCE_NEEDED,
            f"the run being continued used {masked[0]}, whose password is not kept",
            "Give the database again with --db (the thread's evidence is kept either way).",
        )
    return list(ctx.datasources)
