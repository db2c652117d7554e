"""The runner's reply: one JSON object after a marker line carrying the call's nonce.

The frame comes from inside the sandbox, where the user's code runs in the
same process, so it is untrusted data: it is validated here, and nothing in
it is executed or used as a host path.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

FRAME_MARK = "\x1eASSAY-FRAME "


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
        payload = text[at + len(marker):]
        end = payload.find("\n")
        payload = payload[:end] if end >= 0 else payload
    try:
        frame = Frame.model_validate(json.loads(payload))
    except (ValueError, ValidationError) as exc:
        return None, f"the runner's reply could not be read: {str(exc)[:300]}"
    if frame.nonce != nonce:
        return None, "the runner's reply belongs to another call"
    return frame, None


def raw_before_frame(text: str, nonce: str) -> str:
    """What reached the sandbox's stdout before the frame (early output, subprocesses)."""
    at = text.rfind(FRAME_MARK + nonce + "\n")
    return text if at < 0 else text[:at].rstrip("\n")
