"""Who may see what: a caller's runs and artifacts, and artifact ids inside tool arguments.

A service run belongs to an owner (the owner of the token that started it, or
the MCP conversation). Artifacts belong to the run that captured them, so an
artifact is visible only when its run is one of the caller's. Anything else
answers "not found", the same as an id that does not exist, so nothing leaks
whether another owner's id is real.

Tool arguments are searched for artifact ids (``art_`` and 20 hex digits, the
evidence store's shape) wherever they sit; a call naming an artifact outside
the caller's scope is refused before the tool runs (``SERVICE_ARTIFACT_NOT_FOUND``),
since several tools (``read_artifact_result``, ``code_interpreter`` inputs,
reports) read any artifact of the catalog by id.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from assay.kernel.errors import AssayError

SERVICE_ARTIFACT_NOT_FOUND = "SERVICE_ARTIFACT_NOT_FOUND"
ARTIFACT_ID = re.compile(r"art_[0-9a-f]{20}")


class ArtifactOutOfScope(AssayError):
    code = SERVICE_ARTIFACT_NOT_FOUND

    def __init__(self, artifact_id: str) -> None:
        super().__init__(
            SERVICE_ARTIFACT_NOT_FOUND,
            f"no artifact {artifact_id!r} in this run's scope",
            "Use an artifact id a tool call of this run (or another of your runs) returned.",
        )


def artifact_ids_in(value: Any, depth: int = 0) -> Iterator[str]:
    """Every artifact id inside a JSON value (strings, lists, object keys and values)."""
    if depth > 32:
        return
    if isinstance(value, str):
        yield from ARTIFACT_ID.findall(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from artifact_ids_in(key, depth + 1)
            yield from artifact_ids_in(item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from artifact_ids_in(item, depth + 1)


def check_arguments(arguments: Any, visible: Callable[[str], bool]) -> None:
    """Raise :class:`ArtifactOutOfScope` for the first artifact id the caller may not see."""
    for artifact_id in artifact_ids_in(arguments):
        if not visible(artifact_id):
            raise ArtifactOutOfScope(artifact_id)


def owner_scope(tokens: Any, who: str) -> Callable[[str], bool]:
    """A service run's ``artifact_scope`` (:meth:`RunContext.may_read`): the runs of owner ``who``.
    Tools that read artifacts by id (``code_interpreter`` inputs) check it themselves as well."""
    return lambda run_id: tokens.owner_of(run_id) == who


def artifact_run(kernel: Any, artifact_id: str) -> str | None:
    """The run that captured ``artifact_id`` (None when there is no such artifact)."""
    record = kernel.evidence.catalog.get(artifact_id)
    return record.run_id if record is not None else None
