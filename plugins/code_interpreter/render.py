"""The model-facing text of a code_interpreter call: bounded, and explicit about what is missing."""

from __future__ import annotations

import unicodedata
from typing import Any

from .frame import Frame, Stream

NO_RESULT = (
    "no REPORT_RESULT was assigned; printed output is not a result (the artifact's result is None)"
)


# Characters a name shown to the model never carries as such: controls (a newline would start a
# line of its own, such as a forged "chart:" line), format characters (a right-to-left override
# shows "invoice\u202efdp.exe" as "invoiceexe.pdf"; zero-width ones hide), line and paragraph separators,
# surrogates and private or unassigned code points.
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def shown_name(name: str) -> str:
    """``name`` with every control, format or invisible character escaped (``\\n``, ``\\u202e``)."""
    if name.isprintable() and not any(unicodedata.category(ch) in _HIDDEN for ch in name):
        return name
    out = []
    for ch in name:
        if unicodedata.category(ch) not in _HIDDEN:
            out.append(ch)
        elif ch in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
    return "".join(out)


def clip(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to about ``limit`` characters, keeping its start and its end."""
    if len(text) <= limit:
        return text, False
    head = limit * 3 // 4
    tail = limit - head
    return (
        f"{text[:head]}\n... [{len(text) - head - tail:,} characters not shown] ...\n{text[-tail:]}",
        True,
    )


def stream_block(label: str, stream: Stream, full: str, limit: int, artifact_id: str | None) -> str:
    if not full:
        return ""
    shown, clipped = clip(full, limit)
    notes = []
    if stream.truncated:
        notes.append(
            f"{stream.total_chars:,} characters printed; {stream.omitted_chars:,} in the middle were "
            "dropped even from the artifact (output truncated)"
        )
    elif clipped:
        where = f"artifact {artifact_id}" if artifact_id else "the tool's data"
        notes.append(f"{len(full):,} characters; preview only, full text in {where}")
    head = f"{label}" + (f" ({'; '.join(notes)})" if notes else "") + ":"
    return f"{head}\n{shown.rstrip()}"


def result_block(frame: Frame, value_text: str, limit: int, artifact_id: str | None) -> str:
    if not frame.result_set:
        return NO_RESULT + "."
    shown, clipped = clip(value_text, limit)
    where = (
        f" (preview; the full value is in artifact {artifact_id})"
        if clipped and artifact_id
        else ""
    )
    return f"REPORT_RESULT{where}: {shown}"


def produced_lines(
    charts: list[dict[str, Any]], files: list[dict[str, Any]], skipped: list[str]
) -> list[str]:
    lines = []
    for c in charts:
        size = f"{c['width']}x{c['height']} " if c.get("width") else ""
        lines.append(
            f"chart: {c['artifact_id'] or '(not captured)'} {c['name']} ({size}PNG, {c['size']:,} bytes)"
        )
    for f in files:
        lines.append(
            f"file: {f['artifact_id'] or '(not captured)'} out/{f['name']} ({f['size']:,} bytes)"
        )
    lines.extend(f"not captured: {s}" for s in skipped)
    return lines


def state_lines(frame: Frame | None, state_lost: bool, holder_note: str | None = None) -> list[str]:
    lines = [f"warning: {holder_note}"] if holder_note else []
    if state_lost:
        lines.append(
            "warning: this run's sandbox was reset or had expired (idle too long) since the last call; "
            "variables and files from earlier calls are gone - recompute what you need"
        )
    if frame is None:
        return lines
    if frame.restore_error:
        lines.append(f"warning: {frame.restore_error}")
    if frame.not_persisted:
        parts = [
            shown_name(f"{p.get('name')} ({p.get('type')}: {p.get('reason')})")
            for p in frame.not_persisted[:10]
        ]
        more = f" and {len(frame.not_persisted) - 10} more" if len(frame.not_persisted) > 10 else ""
        if frame.kept_live:
            lines.append(
                "kept in memory but not in the notebook's snapshot (lost if the notebook's process "
                "is lost): " + "; ".join(parts) + more
            )
        else:
            lines.append("not persisted for the next call: " + "; ".join(parts) + more)
    if frame.state_error:
        lines.append(f"warning: {frame.state_error}")
    return lines


def error_text(error: dict[str, Any]) -> str:
    """``Type: message`` and the traceback lines of the user's code."""
    head = f"{error.get('type', 'Error')}: {error.get('message', '')}".rstrip(": ")
    tb = [str(line) for line in (error.get("traceback") or [])][-30:]
    if tb:
        head += "\nTraceback (your code only, most recent call last):\n" + "\n".join(tb)
    return head
