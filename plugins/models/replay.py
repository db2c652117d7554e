"""The ``replay_model`` plugin: the ``replay`` model plays a cassette back.

``--model replay:PATH`` (``kernel.model("replay", model=PATH)``) reads a
cassette recorded with ``--record`` (:mod:`.cassette`) and answers turn N
with the recorded response N, after checking that request N is the one
recorded: the same messages (roles, text, tool calls, tool results) and the
same tools. A request that differs is ``MODEL_REPLAY_DIVERGED``, naming the
turn and the first difference (its path, what was recorded, what came now);
a turn past the end is ``MODEL_REPLAY_EXHAUSTED``. A recorded failure is
raised again with its code; recorded text deltas are streamed to
``on_text`` in their order. Nothing is random and no server is asked, so a
replayed run is deterministic.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay import AssayError, hookimpl
from assay.kernel.models import Model

from .errors import MODEL_REPLAY_DIVERGED, MODEL_REPLAY_EXHAUSTED

if TYPE_CHECKING:
    from assay.kernel.messages import Message
    from assay.kernel.models import TextSink

_SHOWN = 160  # characters of each side shown in a divergence message


class ReplayModel(Model):
    model_id = "replay"

    def __init__(self, model: str | Path | None = None, *, path: str | Path | None = None) -> None:
        from .cassette import read_cassette

        source = path if path is not None else model
        if source is None:
            raise AssayError(
                "MODEL_CASSETTE_INVALID",
                "the replay model needs a cassette path",
                "Use --model replay:PATH (a file written by --record).",
            )
        self.path = Path(source)
        self.header, self.exchanges = read_cassette(self.path)
        self.model_name = str(self.path)
        self.recorded_model = str(self.header.get("model", ""))
        self.turn = 0
        self.ids: dict[
            str, str
        ] = {}  # recorded artifact/run id -> the id this run gave the same thing
        self._lock = threading.Lock()

    @property
    def remaining(self) -> int:
        """Recorded turns not yet asked for."""
        return len(self.exchanges) - self.turn

    def assert_finished(self) -> None:
        """Raise ``MODEL_REPLAY_DIVERGED`` unless every recorded turn was asked for.

        A run that stops before the recording did has diverged too; only the
        caller knows when it has stopped, so it asks.
        """
        if self.remaining:
            raise AssayError(
                MODEL_REPLAY_DIVERGED,
                f"{self.path}: the run stopped after turn {self.turn}, the recording has {len(self.exchanges)}",
                "The conversation ended earlier than recorded: re-record the cassette if that is intended.",
                details={
                    "turn": self.turn + 1,
                    "path": "",
                    "recorded": "more turns",
                    "actual": "end of run",
                },
            )

    def complete(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        on_text: TextSink | None = None,
    ) -> Message:
        from assay.kernel.messages import Message

        from .cassette import request_record

        request = request_record(messages, tools)
        with self._lock:
            turn = self.turn + 1
            if turn > len(self.exchanges):
                raise AssayError(
                    MODEL_REPLAY_EXHAUSTED,
                    f"{self.path}: turn {turn} asked, the recording has {len(self.exchanges)} turn(s)",
                    "The run went further than the recorded one: re-record the cassette (--record).",
                    details={"turn": turn},
                )
            exchange = self.exchanges[turn - 1]
            recorded_ids: list[str] = []
            actual_ids: list[str] = []
            difference = first_difference(
                normalise(exchange["request"], recorded_ids), normalise(request, actual_ids)
            )
            if difference is None:
                for old, new in zip(
                    recorded_ids, actual_ids, strict=True
                ):  # same placeholders: same count
                    known = self.ids.setdefault(old, new)
                    if known != new:
                        difference = ("(an id)", old, f"{new}, where earlier turns had {known}")
                        break
            if difference is not None:
                where, recorded, actual = difference
                raise AssayError(
                    MODEL_REPLAY_DIVERGED,
                    f"{self.path}: turn {turn} differs from the recording at {where or 'the request'}"
                    f"{_describe(recorded, actual)}",
                    "The code, prompt, tools or data changed since recording: re-record the cassette "
                    "(--record), or find the change.",
                    details={"turn": turn, "path": where, "recorded": recorded, "actual": actual},
                )
            self.turn = turn
        if "error" in exchange:
            err = exchange["error"]
            raise AssayError(
                str(err.get("code")), str(err.get("message", "")), str(err.get("hint", ""))
            )
        response = self._translate(exchange["response"])
        if on_text is not None:
            for delta in exchange.get("deltas", [exchange["response"].get("content") or ""]):
                if delta:
                    on_text(self._translate(delta))
        return Message.model_validate(response)

    def _translate(self, value: Any) -> Any:
        """``value`` with each recorded id this run knows under another name replaced by that name."""
        if isinstance(value, str):
            return VOLATILE_ID.sub(lambda m: self.ids.get(m.group(0), m.group(0)), value)
        if isinstance(value, list):
            return [self._translate(v) for v in value]
        if isinstance(value, dict):
            return {k: self._translate(v) for k, v in value.items()}
        return value


_MISSING = "(nothing)"

VOLATILE_ID = re.compile(r"\b(?:art|run)_[0-9a-f]{12,32}\b")
"""Artifact and run ids: random per run, so compared by position, not by value."""

DURATION = re.compile(r"\b\d[\d,]*(?:\.\d+)? ?ms\b")
"""Elapsed times tools report ("in 12 ms"): never the same twice."""


def normalise(value: Any, ids: list[str]) -> Any:
    """``value`` with ids numbered by first appearance (collected in ``ids``) and durations masked.

    Two requests that differ only in the ids a run drew or the time a tool
    took normalise to the same value; the ids' order pairs them up.
    """
    if isinstance(value, str):

        def number(match: re.Match[str]) -> str:
            found = match.group(0)
            if found not in ids:
                ids.append(found)
            return f"<id{ids.index(found) + 1}>"

        return DURATION.sub("<ms>", VOLATILE_ID.sub(number, value))
    if isinstance(value, list):
        return [normalise(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: normalise(value[k], ids) for k in sorted(value, key=_key_order)}
    return value


def first_difference(recorded: Any, actual: Any, where: str = "") -> tuple[str, Any, Any] | None:
    """The first place two JSON values differ, as ``(path, recorded, actual)``; None when equal."""
    if isinstance(recorded, dict) and isinstance(actual, dict):
        for key in sorted(set(recorded) | set(actual), key=_key_order):
            inner = f"{where}.{key}" if where else key
            if key not in recorded:
                return inner, _MISSING, actual[key]
            if key not in actual:
                return inner, recorded[key], _MISSING
            found = first_difference(recorded[key], actual[key], inner)
            if found is not None:
                return found
        return None
    if isinstance(recorded, list) and isinstance(actual, list):
        for index, (left, right) in enumerate(zip(recorded, actual, strict=False)):
            found = first_difference(left, right, f"{where}[{index}]")
            if found is not None:
                return found
        if len(recorded) != len(actual):
            index = min(len(recorded), len(actual))
            return (
                f"{where}[{index}]",
                recorded[index] if index < len(recorded) else _MISSING,
                actual[index] if index < len(actual) else _MISSING,
            )
        return None
    if recorded == actual and type(recorded) is type(actual):
        return None
    return where, recorded, actual


def _key_order(key: str) -> tuple[int, str]:
    # messages before tools, and within a message the role and text first: the first difference
    # reported is the one a person looks for first
    order = {"messages": 0, "role": 1, "content": 2, "tool_calls": 3, "tools": 9}
    return order.get(key, 5), key


def _describe(recorded: Any, actual: Any) -> str:
    if (
        isinstance(recorded, str)
        and isinstance(actual, str)
        and recorded != _MISSING
        and actual != _MISSING
    ):
        at = next(
            (i for i, (a, b) in enumerate(zip(recorded, actual, strict=False)) if a != b),
            min(len(recorded), len(actual)),
        )
        start = max(0, at - 40)
        lead = "..." if start else ""
        return (
            f" (character {at}): recorded {lead}{_show(recorded[start:])}, "
            f"now {lead}{_show(actual[start:])}"
        )
    return f": recorded {_show(recorded)}, now {_show(actual)}"


def _show(value: Any) -> str:
    text = (
        value
        if isinstance(value, str) and value == _MISSING
        else json.dumps(value, ensure_ascii=False)
    )
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


@hookimpl
def register_models(register):
    register(ReplayModel)
