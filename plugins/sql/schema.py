"""Schema descriptions: what a datasource holds, and how it reads in a prompt."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ColumnInfo(BaseModel):
    name: str
    type: str = ""
    nullable: bool = True
    primary_key: bool = False
    comment: str = ""  # the database's own comment on the column
    samples: list[str] = Field(
        default_factory=list
    )  # a low-cardinality text column's values (schema index)


class ForeignKey(BaseModel):
    columns: list[str]
    ref_table: str
    ref_columns: list[str] = Field(default_factory=list)


class TableInfo(BaseModel):
    """One table or view: columns, keys and a row estimate (None when unknown)."""

    name: str
    kind: str = "table"  # or "view"
    columns: list[ColumnInfo] = Field(default_factory=list)
    foreign_keys: list[ForeignKey] = Field(default_factory=list)
    row_estimate: int | None = None
    comment: str = ""  # the database's own comment on the table

    def primary_key(self) -> list[str]:
        return [c.name for c in self.columns if c.primary_key]

    def summary_line(self) -> str:
        rows = (
            f"~{self.row_estimate:,} rows"
            if self.row_estimate is not None and self.row_estimate >= 0
            else "rows unknown"
        )
        kind = "view, " if self.kind == "view" else ""
        return f"{self.name} ({kind}{rows}, {len(self.columns)} columns)"

    def render(self) -> str:
        """A compact block: header line, one line per column, key lines."""
        lines = [self.summary_line() + (f"  -- {self.comment}" if self.comment else "")]
        for col in self.columns:
            flags = []
            if col.primary_key:
                flags.append("PK")
            if not col.nullable and not col.primary_key:
                flags.append("NOT NULL")
            line = f"  {col.name} {col.type}{(' ' + ' '.join(flags)) if flags else ''}".rstrip()
            notes = [col.comment] if col.comment else []
            if col.samples:
                notes.append("values: " + ", ".join(repr(v) for v in col.samples))
            lines.append(line + (f"  -- {'; '.join(notes)}" if notes else ""))
        for fk in self.foreign_keys:
            ref = f"{fk.ref_table}({', '.join(fk.ref_columns)})" if fk.ref_columns else fk.ref_table
            lines.append(f"  FK ({', '.join(fk.columns)}) -> {ref}")
        return "\n".join(lines)


def render_schema(
    header: str, tables: list[TableInfo], max_chars: int, out: dict | None = None
) -> str:
    """The schema under ``max_chars``: the smallest tables in full while they fit (the largest are
    summarised to one line each), then names only, then a count. Tables keep their order.

    A cut always ends with a note naming ``list_tables`` / ``describe_table``. ``out``, when given, receives
    the names ``shown`` in full, ``listed`` and ``left_out``.
    """
    note_room = 160
    blocks = [t.render() for t in tables]
    used = len(header)
    full: set[int] = set()
    for index in sorted(range(len(tables)), key=lambda i: len(blocks[i])):
        if used + len(blocks[index]) + 1 + note_room > max_chars:
            break
        full.add(index)
        used += len(blocks[index]) + 1
    parts = [header] + [blocks[i] for i in range(len(tables)) if i in full]
    rest = [t for i, t in enumerate(tables) if i not in full]
    if out is not None:
        out.update(
            shown=[t.name for i, t in enumerate(tables) if i in full], listed=[], left_out=[]
        )
    if not rest:
        return "\n".join(parts)
    named: list[str] = []
    for table in rest:
        line = table.summary_line()
        if used + len(line) + 2 + note_room > max_chars:
            break
        named.append(line)
        used += len(line) + 2
    if named:
        parts.append("Also (columns not shown; call describe_table): " + "; ".join(named))
    hidden = len(rest) - len(named)
    if out is not None:
        out.update(
            listed=[t.name for t in rest[: len(named)]],
            left_out=[t.name for t in rest[len(named) :]],
        )
    note = (
        f"(schema cut to fit the prompt: {len(full)} of {len(tables)} tables shown in full"
        + (f", {hidden} not named" if hidden else "")
        + "; call list_tables and describe_table for the rest)"
    )
    parts.append(note)
    text = "\n".join(parts)
    if len(text) > max_chars:  # a tiny budget: keep the note, drop the middle
        text = text[: max(0, max_chars - len(note) - 1)] + "\n" + note
        text = text[-max_chars:] if len(text) > max_chars else text
    return text
