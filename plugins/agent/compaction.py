"""The run's token budget: estimate the conversation, and compact older tool results.

Previews bound one result; this bounds the whole conversation. When the
estimate nears ``token_budget * compact_at``, the oldest tool results (all
but the newest ``keep_recent_results``) are replaced by a one-line stub that
names the tool, its outcome and its artifact ids; the evidence itself stays
whole and readable in the artifact store. Each compaction is returned so the
run can record it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from assay.kernel.messages import Message

STUB_PREFIX = "[compacted]"
_MESSAGE_OVERHEAD = 4  # role and separators, in tokens


@dataclass
class ToolMessageInfo:
    """What a stub says about one tool message: its outcome and its artifacts."""

    tool: str
    outcome: str
    artifact_ids: list[str] = field(default_factory=list)


def message_chars(message: Message) -> int:
    chars = len(message.content or "")
    for call in message.tool_calls:
        chars += len(call.name) + len(call.arguments_json())
    return chars


def estimate_tokens(messages: list[Message], chars_per_token: float) -> int:
    return tokens_for(sum(message_chars(m) for m in messages), len(messages), chars_per_token)


def tokens_for(chars: int, messages: int, chars_per_token: float) -> int:
    return messages * _MESSAGE_OVERHEAD + int(chars / chars_per_token) + 1


def stub_text(info: ToolMessageInfo, original_chars: int) -> str:
    ids = ", ".join(info.artifact_ids) if info.artifact_ids else "none"
    return (
        f"{STUB_PREFIX} {info.tool} result ({info.outcome}; {original_chars:,} characters) removed to stay "
        f"within the run's token budget. Its evidence is whole in artifacts: {ids}"
        + (" (read them back with read_artifact_result)." if info.artifact_ids else ".")
    )


def compact(
    messages: list[Message],
    infos: dict[str, ToolMessageInfo],
    *,
    target_tokens: int,
    keep_recent: int,
    chars_per_token: float,
) -> tuple[list[str], int, int]:
    """Stub the oldest tool messages in place until the estimate is under ``target_tokens``.

    Returns (the call ids stubbed, tokens before, tokens after).
    """
    before = estimate_tokens(messages, chars_per_token)
    after = before
    tool_indexes = [i for i, m in enumerate(messages) if m.role == "tool"]
    candidates = tool_indexes[: max(0, len(tool_indexes) - keep_recent)]
    stubbed: list[str] = []
    for index in candidates:
        if after <= target_tokens:
            break
        message = messages[index]
        if (message.content or "").startswith(STUB_PREFIX):
            continue
        info = infos.get(
            message.tool_call_id or "", ToolMessageInfo(message.name or "tool", "unknown")
        )
        old = message.content or ""
        new = stub_text(info, len(old))
        if len(new) >= len(old):
            continue
        messages[index] = message.model_copy(update={"content": new})
        after -= int((len(old) - len(new)) / chars_per_token)
        stubbed.append(message.tool_call_id or "")
    if stubbed:
        after = estimate_tokens(messages, chars_per_token)
    return stubbed, before, after
