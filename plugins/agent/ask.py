"""One question answered by the main agent: the one code path of ``assay ask``, ``POST /runs`` and ``assay worker``.

:func:`aask` resolves the model (``PROVIDER[:NAME]``), attaches the databases
(a configured datasource's name, or a URL the caller's ``open_url``
attaches: the SQL plugin's for `assay ask --db URL`) and checks that they
connect, picks the resources, then runs the agent on the run. Input that
cannot work (an empty question, an unknown model, a database that does not
connect) never reaches the model: the run is recorded with status
``invalid_input`` and the error's code, message and hint. A cancel before the
model was asked records the run ``cancelled`` too.

What differs between the three callers is a parameter, never a copy: the CLI
records on a new run and may record a cassette (``AskOptions.record``); the
service passes a run scoped to its owner, its clamped settings and its
watchers; a worker passes the run under the id the API recorded and its
lease-fenced recorder.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assay.kernel.errors import AssayError
from assay.kernel.resources import Resource, ResourceType
from assay.kernel.settings import mask_url

from .loop import AGENT_QUESTION_EMPTY, arun_agent, model_label
from .status import RunStatus
from .transcript import AgentEvent, AgentObserver, RunError, Transcript

MODEL_CONFIG_INVALID = "MODEL_CONFIG_INVALID"

UrlOpener = Callable[["Kernel", str, bool], Resource]
"""(kernel, url, allow_privileged) -> the attached database resource."""
ModelRecorder = Callable[["Model", str], "Model"]
"""(model, cassette path) -> the model, recording every exchange to the cassette."""

if TYPE_CHECKING:
    from assay.kernel.context import RunContext
    from assay.kernel.models import Model
    from assay.kernel.protocols import KernelAPI as Kernel

    from .settings import AgentSettings


@dataclass
class AskOptions:
    """One question to answer: what ``assay ask``, ``POST /runs`` or a worker's message was given."""

    question: str
    databases: list[str] = field(default_factory=list)  # URLs or configured datasource names
    model: str | None = None  # PROVIDER[:NAME]; None: the agent settings' model
    allow_privileged: bool = False
    settings: AgentSettings | None = (
        None  # None: the kernel's agent section (the service's are clamped)
    )
    open_url: UrlOpener | None = None  # attaches a database URL (the SQL plugin's)
    record: str | None = None  # a cassette path: every model exchange is written there
    record_model: ModelRecorder | None = None  # wraps the model to record it (the models plugin's)
    files: list[str] = field(
        default_factory=list
    )  # `--file` paths, globs, directories or name=path
    open_files: Callable[[Any, list[str]], Any] | None = (
        None  # attaches them as one datasource (the files plugin's)
    )
    parent_run_id: str | None = (
        None  # a follow-up: the run it continues (default datasources: that run's)
    )
    reopen_files: Callable[[Any, Any, dict[str, Any]], Any] | None = (
        None  # a follow-up without files: (kernel, run, the parent's files record) -> Reopened
    )


def parse_model_spec(spec: str) -> tuple[str, str | None]:
    """``PROVIDER[:NAME]`` -> (provider, name or None)."""
    provider, _, name = spec.strip().partition(":")
    return provider, (name or None)


def resolve_model(kernel: Kernel, spec: str) -> Model:
    provider, name = parse_model_spec(spec)
    if not provider:
        raise AssayError(
            "MODEL_NOT_FOUND", f"no model named {spec!r}", "Write --model PROVIDER[:NAME]."
        )
    try:
        return kernel.model(provider, model=name) if name else kernel.model(provider)
    except AssayError:
        raise
    except Exception as exc:  # noqa: BLE001 - e.g. a scripted model's script that cannot be read
        raise AssayError(
            MODEL_CONFIG_INVALID,
            f"cannot make model {spec!r}: {type(exc).__name__}: {exc}",
            "Check the NAME part of --model (for scripted: a readable JSON script).",
        ) from None


def attach_databases(
    kernel: Kernel,
    databases: Iterable[str],
    *,
    open_url: UrlOpener | None = None,
    allow_privileged: bool = False,
) -> list[Resource]:
    """The datasources ``databases`` names, each checked to connect.

    A name is a configured datasource; anything else is a URL, attached with
    ``open_url`` (the SQL plugin's, for `assay ask`). The same database
    attached before is used again, not attached twice.
    """
    chosen: list[Resource] = []
    for given in databases:
        resource = kernel.resources.get(given)
        if resource is None or resource.type != ResourceType.DATABASE:
            if "://" not in given and not given.startswith("sqlite:"):
                known = sorted(
                    n for n, r in kernel.resources.items() if r.type == ResourceType.DATABASE
                )
                raise AssayError(
                    "SQL_DATASOURCE_NOT_FOUND",
                    f"no datasource named {given!r}",
                    f"Pass a database URL, or one of: {', '.join(known) or 'none configured'}.",
                )
            if open_url is None:
                raise AssayError(
                    "SQL_DATASOURCE_INVALID",
                    "nothing here opens database URLs",
                    "Install the SQL plugin (pip install 'assay[sql]') or name a configured datasource.",
                )
            resource = open_url(kernel, given, allow_privileged)
        tables = getattr(resource, "tables", None)
        if callable(tables):
            tables()  # opens the pool: SQL_DATASOURCE_UNAVAILABLE / _PRIVILEGED now, not in the model's turn
        chosen.append(resource)
    return chosen


def refused(
    run_id: str,
    question: str,
    model: str,
    error: AssayError | None,
    observers: Iterable[AgentObserver],
    status: RunStatus = RunStatus.INVALID_INPUT,
    *,
    started_at: float | None = None,
    reason: str | None = None,
    parent_run_id: str | None = None,
) -> Transcript:
    """A run that never reached the model, recorded like any other; ``started_at``: when it began (the
    time spent resolving the model and the databases counts), else now; ``reason``: the status reason
    (else "refused before the model was asked: CODE")."""
    started = time.time() if started_at is None else started_at
    if reason is None:
        reason = "refused before the model was asked" + (
            f": {error.code}" if error is not None else ""
        )
    why = (
        None if error is None else RunError(code=error.code, message=error.message, hint=error.hint)
    )
    transcript = Transcript(
        run_id=run_id,
        question=question,
        model=model,
        status=status,
        status_reason=reason,
        error=why,
        started_at=started,
        ended_at=max(time.time(), started),
    )
    begun = {
        "question": question,
        "model": model,
        **({"thread": {"parent_run_id": parent_run_id}} if parent_run_id else {}),
    }  # a refused follow-up: its parent
    for kind, data in (("run_started", begun), ("run_finished", {"summary": transcript.summary()})):
        event = AgentEvent(kind, run_id, 0, data)  # type: ignore[arg-type]
        for observer in observers:
            observer(event)
    return transcript


async def aask(
    kernel: Kernel,
    options: AskOptions,
    *,
    model: Model | None = None,
    run: RunContext | None = None,
    observers: Iterable[AgentObserver] = (),
    record_run: bool = True,
) -> Transcript:
    """Answer ``options.question`` with the main agent: the one way a question is run (the CLI, the
    service and the workers call this).

    ``model`` (an instance) wins over ``options.model``. ``run``: the run to
    answer on (the service's, scoped to its owner; a worker's, under the id the
    API recorded), the caller's to close; None: a new run, closed here.
    ``record_run``: a :class:`~assay.plugins.runs.RunRecorder` of ``kernel.runs``
    sees every event before ``observers`` (False: the caller records, as the
    service and the workers do). The databases are attached on a thread, off
    the event loop. Cancelling the task cancels the running tool calls,
    records ``cancelled`` (also before the model was asked), closes a run made
    here (its sandbox session) and re-raises.
    """
    from assay.plugins.runs import RunRecorder

    from .loop import agent_settings

    settings = options.settings or agent_settings(kernel)
    spec = options.model or settings.model
    watchers: list[AgentObserver] = [RunRecorder(kernel.runs)] if record_run else []
    watchers += list(observers)
    started = time.time()
    own_run = run is None
    if run is None:
        run = kernel.new_run()
    recording: Any = None
    try:
        label = model_label(model) if model is not None else spec
        if not options.question or not options.question.strip():
            return refused(
                run.run_id,
                options.question,
                label,
                AssayError(
                    AGENT_QUESTION_EMPTY, "the question is empty", "Ask a question in words."
                ),
                watchers,
                started_at=started,
            )
        try:
            if model is None:
                model = resolve_model(kernel, spec)
                label = _label(spec, model)
            if options.record:
                if options.record_model is None:
                    raise AssayError(
                        MODEL_CONFIG_INVALID,
                        "recording model exchanges is not available here",
                        "The models plugin (assay.plugins.models.cassette) records them.",
                    )
                model = recording = options.record_model(model, options.record)
            thread, given = await _thread(kernel, options, settings)
            databases = await asyncio.to_thread(
                attach_databases,
                kernel,
                given,
                open_url=options.open_url,
                allow_privileged=options.allow_privileged,
            )
            files = None
            if options.files:
                files = await asyncio.to_thread(attach_files, kernel, run, options)
            elif thread is not None and thread.files:  # the parent's files, checked again
                files = await asyncio.to_thread(reopen_thread_files, kernel, run, options, thread)
            if files is not None:
                databases.append(files)
        except AssayError as exc:
            return refused(
                run.run_id,
                options.question,
                label,
                exc,
                watchers,
                started_at=started,
                parent_run_id=options.parent_run_id,
            )
        except (
            asyncio.CancelledError
        ):  # e.g. DELETE /runs/ID while a database connects: ended, not left running
            refused(
                run.run_id,
                options.question,
                label,
                None,
                watchers,
                RunStatus.CANCELLED,
                started_at=started,
                reason="cancelled before the model was asked",
                parent_run_id=options.parent_run_id,
            )
            raise
        resources = resources_for(kernel, databases) if given or files is not None else None
        recorded = getattr(files, "recorded", None)
        return await arun_agent(
            kernel,
            model,
            run,
            options.question,
            resources=resources,
            settings=settings,
            observers=watchers,
            model_name=label,
            thread=thread,
            datasources=[mask_url(d) for d in given],
            files=recorded(getattr(run, "artifacts", None)) if recorded is not None else None,
        )
    finally:
        if own_run:
            run.close()  # the sandbox session and what else the run opened, also after a cancellation
        if recording is not None and callable(getattr(recording, "close", None)):
            recording.close()


def ask(kernel: Kernel, options: AskOptions, **kwargs: Any) -> Transcript:
    """Synchronous :func:`aask`. SIGTERM cancels it as Ctrl-C does (the running tool calls are cancelled,
    the run is recorded ``cancelled``), then raises :class:`assay.kernel.exit_signals.Terminated`."""
    from assay.kernel.exit_signals import cancel_on_sigterm

    return asyncio.run(cancel_on_sigterm(aask(kernel, options, **kwargs)))


async def _thread(
    kernel: Kernel, options: AskOptions, settings: AgentSettings
) -> tuple[Any, list[str]]:
    """A follow-up's thread (its artifacts verified) and the datasources to attach: those given, else the parent's."""
    if not options.parent_run_id:
        return None, list(options.databases)
    from .thread import load_thread, parent_datasources

    thread = await asyncio.to_thread(load_thread, kernel, options.parent_run_id, settings)
    return thread, list(options.databases) or parent_datasources(thread)


def _label(spec: str, model: Model) -> str:
    return spec if parse_model_spec(spec)[1] else model_label(model)


def attach_files(kernel: Kernel, run: Any, options: AskOptions) -> Resource:
    """``--file``: one datasource over the files, and their ``source`` artifacts captured in this run."""
    if options.open_files is None:
        raise AssayError(
            "FILE_READER_MISSING",
            "nothing here opens files as data",
            "Install the files plugin: pip install 'assay[files]'.",
        )
    resource = options.open_files(kernel, options.files)
    sources = getattr(resource, "source_artifacts", None)
    if sources is not None:
        sources(getattr(run, "artifacts", None))
    return resource


def reopen_thread_files(kernel: Kernel, run: Any, options: AskOptions, thread: Any) -> Any:
    """A follow-up given no files: its parent's, each checked against the parent's record (one changed
    or gone is told to the agent in the thread's part of the prompt, not registered); their datasource,
    or None when none is left (or nothing here opens files: the agent is told so)."""
    from .thread import note_files

    if options.reopen_files is None:
        note_files(thread, [], [_unopened(t) for t in thread.files.get("tables") or []])
        return None
    reopened = options.reopen_files(kernel, run, thread.files)
    note_files(thread, reopened.tables, reopened.problems, reopened.resource)
    if reopened.resource is not None:
        sources = getattr(reopened.resource, "source_artifacts", None)
        if sources is not None:
            sources(getattr(run, "artifacts", None))
    return reopened.resource


def _unopened(table: dict[str, Any]) -> dict[str, Any]:
    return {
        "table": table.get("table"),
        "name": ", ".join(f.get("name") or "" for f in table.get("files") or []),
        "code": "FILE_READER_MISSING",
        "message": "nothing here opens files as data",
    }


def resources_for(kernel: Kernel, databases: list[Resource]) -> list[Resource]:
    """The chosen databases, plus every resource that is not a database (knowledge, packs): what the
    agent is given when a question names its databases (``assay ask``, ``assay prompt``)."""
    others = [r for r in kernel.resources.values() if r.type != ResourceType.DATABASE]
    return list(databases) + [r for r in others if r not in databases]
