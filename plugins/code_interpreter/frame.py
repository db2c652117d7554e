"""The runner's reply: one JSON object after a marker line carrying the call's nonce.

The frame comes from inside the sandbox, where the user's code runs in the
same process, so it is untrusted data: it is validated here, and nothing in
it is executed or used as a host path.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

FRAME_MARK = "\x1eASSAY-FRAME "
# Deeper JSON than this is refused before it reaches the models and the evidence store (both
# recurse); the runner refuses a REPORT_RESULT nested deeper than 100 levels itself.
MAX_DEPTH = 200


class Stream(BaseModel):
    head: str = ""
    tail: str = ""
    total_chars: int = 0
    omitted_chars: int = 0

    @property
    def text(self) -> str:
        """The kept text: the head, a marker for what was dropped, the tail."""
        if self.omitted_chars > 0:
            return f"{self.head}\n... [{self.omitted_chars:,} characters omitted] ...\n{self.tail}"
        return self.head + self.tail

    @property
    def truncated(self) -> bool:
        return self.omitted_chars > 0


class Produced(BaseModel):
    model_config = ConfigDict(extra="ignore")

    path: str
    name: str
    size: int = Field(ge=0)
    width: int | None = None
    height: int | None = None
    data_b64: str | None = None


class Frame(BaseModel):
    model_config = ConfigDict(extra="ignore")

    v: int = 1
    nonce: str
    status: str = ""  # succeeded | failed | input_failed | runner_failed
    frame_file: str | None = None
    error: dict[str, Any] | None = None
    result_set: bool = False
    result: Any = None
    result_error: str | None = None
    stdout: Stream = Field(default_factory=Stream)
    stderr: Stream = Field(default_factory=Stream)
    charts: list[Produced] = Field(default_factory=list)
    files: list[Produced] = Field(default_factory=list)
    not_persisted: list[dict[str, str]] = Field(default_factory=list)
    state_error: str | None = None
    restore_error: str | None = None
    state_found: bool | None = None
    kept_live: bool | None = None  # run in the notebook holder, whose memory keeps every variable
    cell_ms: float | None = None
    runner_ms: float | None = None
    cell_faults: int | None = None  # minor page faults while the cell ran (notebook holder only)


def parse_frame(text: str, nonce: str, *, bare: bool = False) -> tuple[Frame | None, str | None]:
    """The frame for ``nonce`` in ``text`` (the sandbox's stdout), or why there is none."""
    if bare:
        payload = text
    else:
        marker = FRAME_MARK + nonce + "\n"
        at = text.rfind(marker)
        if at < 0:
            return None, "the runner did not reply (the process ended before it could report)"
        payload = text[at + len(marker) :]
        end = payload.find("\n")
        payload = payload[:end] if end >= 0 else payload
    value, problem = load_json(payload)
    if problem is not None:
        return None, f"the runner's reply could not be read: {problem}"
    try:
        frame = Frame.model_validate(value)
    except (ValueError, ValidationError, RecursionError) as exc:
        return None, f"the runner's reply could not be read: {str(exc)[:300]}"
    if frame.nonce != nonce:
        return None, "the runner's reply belongs to another call"
    return frame, None


def load_json(text: str | bytes, max_depth: int = MAX_DEPTH) -> tuple[Any, str | None]:
    """``text`` parsed as JSON, or (None, why not): never raises, whatever the sandbox wrote.

    Nesting deeper than ``max_depth`` is refused (the parser, pydantic and the evidence store's
    canonical form all recurse): a frame with fewer brackets than that cannot be deeper.
    """
    try:
        value = json.loads(text)
    except (ValueError, RecursionError, MemoryError) as exc:
        return None, str(exc)[:300]
    if isinstance(text, bytes):
        brackets = text.count(b"[") + text.count(b"{")
    else:
        brackets = text.count("[") + text.count("{")
    if brackets > max_depth:
        depth = _depth(value)
        if depth > max_depth:
            return None, f"it is nested {depth:,} levels deep (at most {max_depth} are read)"
    return value, None


def _depth(value: Any) -> int:
    """The deepest nesting of lists and objects in a parsed JSON value (no recursion)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        children: Iterable[Any]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def raw_before_frame(text: str, nonce: str) -> str:
    """What reached the sandbox's stdout before the frame (early output, subprocesses)."""
    at = text.rfind(FRAME_MARK + nonce + "\n")
    return text if at < 0 else text[:at].rstrip("\n")
