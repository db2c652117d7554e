"""The run: what one agent task shares across its tool calls.

A tool that declares a parameter annotated :class:`RunContext` receives the
current run; the parameter is left out of the model-facing schema. The run
carries its id, the artifact sink that captures evidence (or ``None``), which
other runs' artifacts it may read (:meth:`RunContext.may_read`), and per-run
state such as the sandbox session, closed when the run ends.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from .log import get_logger

if TYPE_CHECKING:
    from .protocols import KernelAPI

T = TypeVar("T")


def new_run_id() -> str:
    return "run_" + uuid.uuid4().hex[:16]


@dataclass
class RunContext:
    """One run of an agent: id, evidence sink and run-scoped state."""

    kernel: KernelAPI | None = None
    run_id: str = field(default_factory=new_run_id)
    artifacts: Any = None  # kernel.evidence.ArtifactSink, or None when nothing is captured
    model: Any = None  # the run's kernel.models.Model, for tools that start a sub-agent (None outside an agent run)
    # Which *other* runs' artifacts this run may read as inputs, by run id (None: its own only). The
    # service sets "the caller's owner's runs"; ``assay tool call`` (the host's operator) sets every run.
    artifact_scope: Callable[[str], bool] | None = None
    # The earlier runs of this run's thread (a follow-up question), oldest first: their artifacts are
    # this run's evidence too (read, cited, reported), as far as they verify.
    thread: tuple[str, ...] = ()
    _scoped: dict[str, Any] = field(default_factory=dict, repr=False)
    _closers: list[tuple[str, Callable[[Any], Any]]] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def may_read(self, run_id: str) -> bool:
        """Whether an artifact captured by run ``run_id`` may be read by this run (its own, or in its scope)."""
        if run_id == self.run_id or run_id in self.thread:
            return True
        return self.artifact_scope is not None and bool(self.artifact_scope(run_id))

    def continue_thread(self, run_ids: tuple[str, ...] | list[str]) -> None:
        """Make this run a follow-up of ``run_ids`` (oldest first): their artifacts become its evidence too
        (its sink says so to the report resolver, which is given the sink)."""
        self.thread = tuple(run_ids)
        if self.artifacts is not None:
            self.artifacts.thread = self.thread

    def evidence_runs(self) -> tuple[str, ...]:
        """The runs whose artifacts this run may cite: its thread's, then its own."""
        return (*self.thread, self.run_id)

    def scoped(
        self, key: str, factory: Callable[[], T], close: Callable[[T], Any] | None = None
    ) -> T:
        """Return the run's ``key`` object, creating it with ``factory`` once.

        ``close`` is called with it when the run is closed.
        """
        with self._lock:
            if key in self._scoped:
                return self._scoped[key]
            value = factory()
            self._scoped[key] = value
            if close is not None:
                self._closers.append((key, close))
            return value

    def attach(self, resource: Any) -> Any:
        """A resource of this run only (a service run's uploaded files): the run's tools find it beside
        the kernel's resources, no other run sees it, and it is closed with the run."""

        def close(r: Any) -> None:
            if callable(getattr(r, "close", None)):
                r.close()

        return self.scoped(f"resource:{resource.name}", lambda: resource, close)

    def own_resources(self) -> dict[str, Any]:
        """The resources attached to this run only (:meth:`attach`), by name."""
        with self._lock:
            return {k[9:]: v for k, v in self._scoped.items() if k.startswith("resource:")}

    def peek(self, key: str) -> Any:
        """The run's ``key`` object if it was created, else ``None``."""
        return self._scoped.get(key)

    def discard(self, key: str) -> None:
        """Close and forget the run's ``key`` object (for a reset)."""
        with self._lock:
            value = self._scoped.pop(key, None)
            closers = [c for c in self._closers if c[0] == key]
            self._closers = [c for c in self._closers if c[0] != key]
        for _, close in closers:
            if value is not None:
                close(value)

    def close(self) -> None:
        """Close every run-scoped object, newest first. Errors are logged, not raised."""
        with self._lock:
            closers, self._closers = list(reversed(self._closers)), []
            scoped, self._scoped = self._scoped, {}
        for key, close in closers:
            try:
                close(scoped[key])
            except Exception as exc:  # noqa: BLE001 - closing must reach every object
                get_logger("assay.run").warning(
                    "run_close_failed", run_id=self.run_id, key=key, error=repr(exc)
                )

    def __enter__(self) -> RunContext:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
