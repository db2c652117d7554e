"""The schema chosen for a question: which tables the prompt shows in full, which it names, which it leaves out.

:func:`rank_tables` ranks by BM25 over the schema index, then adds one hop
along foreign keys from the best hits (a fact table's dimensions, or the
tables that point at a matched dimension), each below the hit it came from.
:func:`layout_schema` shows the ranked tables in full, best first, while they
fit the budget (a table too large for what is left is skipped, not cut), names
every other table in a compact list while that fits, and ends with a note
saying how much is shown and how to reach the rest. The
:class:`SchemaLayout` it returns is what ``assay prompt --json`` prints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from .schema import TableInfo
from .schema_index import question_terms, split_name

# Words that mark a copy of a table rather than the table a question is about (staging loads, backups,
# history, aggregates): such a table ranks at NOISE_SHARE of its score unless the question says the word.
NOISE_WORDS = frozenset(
    {
        "stg",
        "staging",
        "tmp",
        "temp",
        "backup",
        "bak",
        "archive",
        "archived",
        "old",
        "copy",
        "history",
        "hist",
        "agg",
        "aggregate",
        "scratch",
        "test",
        "dedup",
        "raw",
        "bkp",
    }
)
NOISE_SHARE = 0.5
HOP_FROM = 6  # the best hits whose foreign-key neighbours join the ranking
HOP_SHARE = 0.6  # a neighbour ranks at this share of the hit it joins
NOTE_ROOM = 240
MIN_BLOCK = 60  # no table's block is shorter (its summary line and a column)  # kept free for the closing note
LIST_SHARE = (
    0.15  # of the budget, kept for the compact list of the other tables (when there are any)
)


@dataclass
class Ranked:
    name: str
    score: float
    why: str


@dataclass
class TableChoice:
    name: str
    why: str = ""


@dataclass
class SchemaLayout:
    """What a schema prompt holds: tables ``shown`` in full, ``listed`` by name, ``left_out``; and why."""

    datasource: str
    question: str | None
    mode: str  # "question" (ranked for it) | "catalog" (no question, or no index: today's order)
    total: int = 0
    shown: list[TableChoice] = field(default_factory=list)
    listed: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    index: str = ""  # the index's state: fresh, rebuilt, memory, or unavailable: CODE: message
    note: str = ""
    text: str = ""

    def to_dict(self) -> dict:
        data = asdict(self)
        data.pop("text")
        return data


def rank_tables(
    hits: list[tuple[str, float]],
    tables: dict[str, TableInfo],
    question: str = "",
    neighbours: dict[str, set[str]] | None = None,
) -> list[Ranked]:
    """The BM25 ``hits`` (name, score), copies of tables (``stg_``, ``_history``, ...) lowered unless the
    question names them, then one hop along foreign keys from the best: a neighbour ranks below its hit."""
    asked = set(question_terms(question)) if question else set()
    scores: dict[str, Ranked] = {}
    for name, score in hits:
        if name not in tables:
            continue
        noise = (set(split_name(name)) & NOISE_WORDS) - asked
        if noise:
            score *= NOISE_SHARE
        scores[name] = Ranked(
            name,
            score,
            f"matches the question (bm25 {score:.2f}"
            + (f", lowered as a copy: {', '.join(sorted(noise))})" if noise else ")"),
        )
    best = sorted(scores.values(), key=lambda r: -r.score)[:HOP_FROM]
    if neighbours is None:
        neighbours = foreign_key_neighbours(tables)
    for name, score in [(r.name, r.score) for r in best]:
        for other in sorted(neighbours.get(name, ())):
            hop = score * HOP_SHARE
            if other not in scores or scores[other].score < hop:
                scores[other] = Ranked(other, hop, f"joins {name} (foreign key)")
    return sorted(scores.values(), key=lambda r: -r.score)


def foreign_key_neighbours(tables: dict[str, TableInfo]) -> dict[str, set[str]]:
    """Each table's foreign-key neighbours, both ways (the tables it points at, and those pointing at it)."""
    lower = {name.lower(): name for name in tables}
    links: dict[str, set[str]] = {}
    for table in tables.values():
        for fk in table.foreign_keys:
            ref = lower.get(fk.ref_table.lower()) or lower.get(fk.ref_table.lower().split(".")[-1])
            if ref is None or ref == table.name:
                continue
            links.setdefault(table.name, set()).add(ref)
            links.setdefault(ref, set()).add(table.name)
    return links


def layout_schema(
    header: str,
    tables: list[TableInfo],
    ranked: list[Ranked],
    max_chars: int,
    *,
    datasource: str,
    question: str,
    block: Callable[[TableInfo], str] | None = None,
    index_state: str = "",
) -> SchemaLayout:
    """The prompt text for ``question``: ranked tables in full while they fit, the rest named, then a note.

    ``block`` renders one table in full (default :meth:`TableInfo.render`; the datasource adds sample
    values). Never longer than ``max_chars``.
    """
    render = block or TableInfo.render
    by_name = {t.name: t for t in tables}
    layout = SchemaLayout(
        datasource=datasource,
        question=question,
        mode="question",
        total=len(tables),
        index=index_state,
    )
    others_len = sum(len(t.name) + 2 for t in tables)
    full_limit = max_chars - NOTE_ROOM - int(min(others_len, max_chars * LIST_SHARE))
    used = len(header)
    parts = [header]
    full: set[str] = set()
    for choice in ranked:
        if full_limit - used < MIN_BLOCK:
            break  # no table fits in what is left
        text = render(by_name[choice.name])
        if used + len(text) + 1 > full_limit:
            continue  # too large for what is left: a smaller table further down may still fit
        parts.append(text)
        used += len(text) + 1
        full.add(choice.name)
        layout.shown.append(TableChoice(choice.name, choice.why))
    rank_order = [r.name for r in ranked if r.name not in full]
    in_rank = set(rank_order)
    rest = rank_order + [t.name for t in tables if t.name not in full and t.name not in in_rank]
    if rest:
        lead = "Other tables (columns not shown; call describe_table): "
        used += len(lead) + 1
        for name in rest:
            if used + len(name) + 2 > max_chars - NOTE_ROOM:
                break
            layout.listed.append(name)
            used += len(name) + 2
        if layout.listed:
            parts.append(lead + ", ".join(layout.listed))
        layout.left_out = rest[len(layout.listed) :]
    matched = "chosen for the question" if ranked else "no table matched the question's words"
    layout.note = (
        f"(schema {matched}: {len(full)} of {len(tables)} tables shown in full"
        + (f", {len(layout.listed)} more named" if layout.listed else "")
        + (f", {len(layout.left_out)} not named" if layout.left_out else "")
        + ("; call list_tables(search=...) and describe_table for the rest)" if rest else ")")
    )
    parts.append(layout.note)
    text = "\n".join(parts)
    layout.text = (
        text
        if len(text) <= max_chars
        else text[: max(0, max_chars - len(layout.note) - 1)] + "\n" + layout.note
    )
    layout.text = layout.text[-max_chars:] if len(layout.text) > max_chars else layout.text
    return layout
