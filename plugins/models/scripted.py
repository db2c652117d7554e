"""The ``scripted_model`` plugin: the deterministic ``scripted`` model, for tests and the demo.

The script is a list of steps played in order, one per model turn. A step is
``{"tool": name, "arguments": {...}}`` (one tool call),
``{"tools": [{"tool": ..., "arguments": ...}, ...]}`` (several calls in one
turn), ``{"text": "..."}`` (the final answer), or a callable taking the
conversation so far (a list of :class:`assay.kernel.messages.Message`) and returning
one of those: that is how a script uses an artifact id a previous tool
returned. A step may also carry ``"delay_s": SECONDS``: the model takes that
long to answer it (a real model's latency, for benchmarks such as
bench/bench_workers.py). When the script runs out, the model answers with its last text.
A JSON script file is given as ``script=PATH``, or on the command line as
``--model scripted:PATH``.

One module (not a thin plugin module plus the model): the model imports in
about 1 ms (the message types load when it first answers), too little to split.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay import hookimpl
from assay.kernel.models import Model

if TYPE_CHECKING:
    from assay.kernel.messages import Message

Step = dict[str, Any] | Callable[[list["Message"]], dict[str, Any]]


class ScriptedModel(Model):
    model_id = "scripted"

    def __init__(
        self,
        steps: Sequence[Step] = (),
        *,
        script: str | Path | None = None,
        model: str | None = None,
    ) -> None:
        script = (
            script or model
        )  # `--model scripted:PATH` passes the script's path as the model name
        if script is not None:
            steps = json.loads(Path(script).read_text())
        self.steps = list(steps)
        self._position = 0
        self._calls = 0
        self._lock = threading.Lock()
        self.seen: list[list[Message]] = []  # the conversation at each turn, for assertions

    def complete(
        self, messages: list[Message], tools: list[dict[str, Any]], *, on_text: Any = None
    ) -> Message:
        from assay.kernel.messages import Message

        with self._lock:
            self.seen.append(list(messages))
            if self._position >= len(self.steps):
                return Message(role="assistant", content="(script finished)")
            step = self.steps[self._position]
            self._position += 1
        if callable(step):
            step = step(list(messages))
        if step.get("delay_s"):
            time.sleep(float(step["delay_s"]))
        return self._message(step)

    def _message(self, step: dict[str, Any]) -> Message:
        from assay.kernel.messages import Message, ToolCall

        if "text" in step:
            return Message(role="assistant", content=str(step["text"]))
        calls = step["tools"] if "tools" in step else [step]
        tool_calls = []
        for call in calls:
            if "tool" not in call:
                raise ValueError(
                    f"a script step needs 'text', 'tool' or 'tools', got {sorted(call)}"
                )
            self._calls += 1
            tool_calls.append(
                ToolCall(
                    id=f"call_{self._calls}", name=call["tool"], arguments=call.get("arguments", {})
                )
            )
        return Message(role="assistant", content=step.get("content"), tool_calls=tool_calls)


@hookimpl
def register_models(register):
    register(ScriptedModel)
