"""Sample values: the distinct values of a table's low-cardinality text columns, for the prompt.

Read only for the tables a prompt is about to show in full, one bounded query
per column through the datasource's own read-only path (the guard, the time
limit, the value limits)::

    SELECT DISTINCT c FROM (SELECT c FROM t LIMIT <scan_rows>) s WHERE c IS NOT NULL LIMIT <max + 1>

A column with more distinct values than ``sample_values_max`` in those rows
gets none. A column whose name holds a secret-like word (``password``,
``token``, ``key``, ``ssn``, ... : ``sample_secret_words``) is never read.
The values are cached in the schema index, which a schema change empties.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import SqlError
from .schema import ColumnInfo, TableInfo
from .schema_index import split_name

if TYPE_CHECKING:
    from .resource import DatabaseResource

TEXT_TYPES = ("char", "text", "string", "enum", "varchar", "citext", "name")
MAX_VALUE_CHARS = 40
MAX_COLUMNS = 8  # per table


def is_secret(column: str, words: list[str]) -> bool:
    """Whether a column's name holds a secret-like word (``api_token``, ``PasswordHash``, ``ssn``)."""
    parts = set(split_name(column))
    lowered = column.lower()
    return any(w.lower() in parts or (len(w) > 4 and w.lower() in lowered) for w in words)


def is_text(column: ColumnInfo) -> bool:
    kind = column.type.lower()
    return any(t in kind for t in TEXT_TYPES) and "[]" not in kind


def sample_candidates(table: TableInfo, secret_words: list[str]) -> list[ColumnInfo]:
    """The columns of ``table`` whose values may be read: text, not a key, not secret-like."""
    keys = {c for fk in table.foreign_keys for c in fk.columns}
    chosen = [
        c
        for c in table.columns
        if is_text(c)
        and not c.primary_key
        and c.name not in keys
        and not is_secret(c.name, secret_words)
    ]
    return chosen[:MAX_COLUMNS]


def quote_name(name: str, dialect: str) -> str:
    """A (possibly schema-qualified) name quoted for ``dialect``."""
    if dialect in ("mysql", "mariadb"):
        return ".".join("`" + part.replace("`", "``") + "`" for part in name.split("."))
    return ".".join('"' + part.replace('"', '""') + '"' for part in name.split("."))


def read_samples(resource: DatabaseResource, table: TableInfo) -> dict[str, list[str]]:
    """``table``'s low-cardinality text columns and their distinct values (read now; errors skip a column)."""
    s = resource.settings
    out: dict[str, list[str]] = {}
    relation = quote_name(table.name, resource.dialect)
    for column in sample_candidates(table, s.sample_secret_words):
        col = quote_name(column.name, resource.dialect)
        sql = (
            f"SELECT DISTINCT {col} FROM (SELECT {col} FROM {relation} LIMIT {s.sample_scan_rows}) s "
            f"WHERE {col} IS NOT NULL LIMIT {s.sample_values_max + 1}"
        )
        try:
            rows = resource.query(sql, timeout_s=s.sample_timeout_s).rows
        except SqlError:
            continue  # refused, too slow, or not readable: the column is shown without values
        if 0 < len(rows) <= s.sample_values_max:
            values = sorted(str(r[0])[:MAX_VALUE_CHARS] for r in rows)
            out[column.name] = values
    return out


def with_samples(table: TableInfo, values: dict[str, list[str]]) -> TableInfo:
    if not values:
        return table
    return table.model_copy(
        update={
            "columns": [
                c.model_copy(update={"samples": values[c.name]}) if c.name in values else c
                for c in table.columns
            ]
        }
    )
