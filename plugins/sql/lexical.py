"""Checks on the raw SQL text, before any parse: what the server reads differently from the parser.

* :func:`two_readings` scans the text as the server's lexer does (strings,
  quoted names, dollar quotes, comments) and refuses what a reader could read
  two ways: a non-ASCII space or a control character outside a string or a
  quoted name (``SQL_AMBIGUOUS_CHARACTER``: MariaDB does not end a ``--`` at
  U+00A0, the parser does), ``/*`` inside a block comment
  (``SQL_AMBIGUOUS_COMMENT``: PostgreSQL and DuckDB nest comments, the parser
  does not), and on MySQL/MariaDB the opener of an executable comment.
* MySQL/MariaDB run the inside of ``/*! ... */``, ``/*M! ... */`` (versioned
  code) and may act on ``/*+ ... */`` (optimizer hints); to a parser they are
  comments. Any of them outside a string or quoted name is refused (inside a
  comment too).
* MySQL/MariaDB read a backslash in a string as an escape unless the session's
  ``sql_mode`` holds ``NO_BACKSLASH_ESCAPES``; text whose strings end in
  different places under the two readings (``'a\\'...``) is refused
  (:func:`mysql_backslash_ambiguity`), so the check never depends on that mode.
* PostgreSQL resolves ``U&"\\0070g_read_file"`` (optionally ``UESCAPE 'c'``) to
  ``"pg_read_file"`` before it looks the name up. :func:`resolve_postgres_escapes`
  rewrites every such identifier (and ``U&'...'`` string) to its plain quoted
  form with the server's own lexical rules (comments nest, ``E''`` strings take
  backslash escapes, dollar quotes), so the parser and the name check see the
  name the server will see. What it cannot decode raises :class:`Unresolvable`.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

MYSQL_FAMILY = ("mysql", "mariadb")  # the dialects that read MySQL's way
_MYSQL_EXECUTABLE = re.compile(r"/\*(?:!|M!|\+)", re.IGNORECASE)
_DOLLAR_TAG = re.compile(r"\$([A-Za-z_\x80-\uffff][A-Za-z0-9_\x80-\uffff]*)?\$")
_HEX = set("0123456789abcdefABCDEF")


class Unresolvable(ValueError):
    """The text holds a name or literal the check cannot resolve as the server would."""


@dataclass(frozen=True)
class Ambiguity:
    """Something in the text a reader could read two ways: ``kind`` is ``character``, ``comment`` or
    ``executable_comment``; ``what`` says what was found, ``position`` where (0-based)."""

    kind: str
    what: str
    position: int


# Where the scan of code may change state or meet an odd character.
_STOP = re.compile(r"""['"`\[$#/\-]|[^\x20-\x7e\t\n\r]""")
_COMMENT_MARK = re.compile(r"/\*|\*/")
_ODD_CHAR = re.compile(r"[^\x20-\x7e\t\n\r]")
_PLAIN_STRING = re.compile(r"'[^']*(?:''[^']*)*'")
_BACKSLASH_STRING = re.compile(r"'[^'\\]*(?:(?:\\.|'')[^'\\]*)*'", re.DOTALL)
_MYSQL_DOUBLE_STRING = re.compile(r'"[^"\\]*(?:(?:\\.|"")[^"\\]*)*"', re.DOTALL)
_QUOTED_NAME = {
    '"': re.compile(r'"[^"]*(?:""[^"]*)*"'),
    "`": re.compile(r"`[^`]*(?:``[^`]*)*`"),
    "[": re.compile(r"\[[^\]]*\]"),
}
_MYSQL_DASHES_END = " \t\n\r\f\v" + "".join(map(chr, range(0x20)))


def odd_character(ch: str) -> str | None:
    """Why ``ch`` could be read two ways outside a string or quoted name (None: it cannot).

    ASCII control characters but tab, LF and CR; non-ASCII spaces, line and paragraph
    separators; non-ASCII control, format (zero-width, BOM...), private-use and unassigned
    characters. Other non-ASCII characters (letters of a name) are read the same by all."""
    code = ord(ch)
    if 0x20 <= code < 0x7F or ch in "\t\n\r":
        return None
    if code < 0x80:
        return f"the control character U+{code:04X}"
    category = unicodedata.category(ch)
    if category in ("Zs", "Zl", "Zp"):
        return f"the non-ASCII space U+{code:04X} ({unicodedata.name(ch, 'unnamed')})"
    if category[0] == "C":
        return (
            f"the invisible or control character U+{code:04X} ({unicodedata.name(ch, 'unnamed')})"
        )
    return None


def two_readings(sql: str, dialect: str) -> Ambiguity | None:
    """The first thing in ``sql`` a reader could read two ways, scanning as ``dialect``'s server lexes, or None.

    Strings (with ``''``; backslash escapes in MySQL/MariaDB strings and PostgreSQL/DuckDB ``E''``
    strings), quoted names and dollar quotes are skipped whole; everything else, comments included,
    is checked. Text that does not end a string or comment is left to the parser."""
    mysql, dollars = dialect in ("mysql", "mariadb"), dialect in ("postgresql", "duckdb")
    i, n = 0, len(sql)
    while True:
        found = _STOP.search(sql, i)
        if found is None:
            return None
        j, c = found.start(), found.group()
        if c == "'":
            escaped = mysql or (
                dollars and j > 0 and sql[j - 1] in "eE" and not _ident_before(sql, j - 1)
            )
            end = (_BACKSLASH_STRING if escaped else _PLAIN_STRING).match(sql, j)
        elif c == '"':
            end = (_MYSQL_DOUBLE_STRING if mysql else _QUOTED_NAME['"']).match(sql, j)
        elif (c == "`" and dialect in ("mysql", "mariadb", "sqlite")) or (
            c == "[" and dialect == "sqlite"
        ):
            end = _QUOTED_NAME[c].match(sql, j)
        elif c == "$" and dollars and not _ident_before(sql, j) and _DOLLAR_TAG.match(sql, j):
            tag = _DOLLAR_TAG.match(sql, j).group(0)  # type: ignore[union-attr]
            close = sql.find(tag, j + len(tag))
            if close < 0:
                return None
            i = close + len(tag)
            continue
        elif (
            sql.startswith("--", j) and (not mysql or j + 2 >= n or sql[j + 2] in _MYSQL_DASHES_END)
        ) or (c == "#" and mysql):  # a line comment
            close = sql.find("\n", j)
            close = n if close < 0 else close
            found_in = _in_comment(sql, j, close, mysql)
            if found_in is not None:
                return found_in
            i = close
            continue
        elif sql.startswith("/*", j):
            if mysql and _MYSQL_EXECUTABLE.match(sql, j):
                return Ambiguity("executable_comment", sql[j : j + 24], j)
            mark = _COMMENT_MARK.search(
                sql, j + 2
            )  # the first /* or */ after the opener, left to right
            if mark is not None and mark.group() == "/*":
                return Ambiguity("comment", "'/*' inside a /* comment */", mark.start())
            close = n if mark is None else mark.start()
            found_in = _in_comment(sql, j, close, mysql)
            if found_in is not None:
                return found_in
            i = close + 2
            continue
        else:
            why = odd_character(c) if len(c) == 1 and not ("\x20" <= c <= "\x7e") else None
            if why is not None:
                return Ambiguity("character", why, j)
            i = j + 1
            continue
        if end is None:
            return None  # unterminated: the parser reports it
        i = end.end()


def _in_comment(sql: str, start: int, end: int, mysql: bool) -> Ambiguity | None:
    """An odd character or (MySQL/MariaDB) an executable-comment opener inside the comment sql[start:end]."""
    for odd in _ODD_CHAR.finditer(sql, start, end):
        why = odd_character(odd.group())
        if why is not None:
            return Ambiguity("character", why, odd.start())
    if mysql:
        opener = _MYSQL_EXECUTABLE.search(sql, start + 1, end)
        if opener is not None:
            return Ambiguity(
                "executable_comment", sql[opener.start() : opener.start() + 24], opener.start()
            )
    return None


def mysql_backslash_ambiguity(sql: str) -> bool:
    """Whether the quoted spans of ``sql`` differ with and without backslash escapes (MySQL/MariaDB lexing)."""
    if "\\" not in sql:
        return False
    try:
        return _mysql_spans(sql, True) != _mysql_spans(sql, False)
    except Unresolvable:
        return True


def _mysql_spans(sql: str, backslash: bool) -> list[tuple[int, int]]:
    """Start and end of every string, quoted identifier and comment, as MySQL reads them."""
    spans, i, n = [], 0, len(sql)
    while i < n:
        c = sql[i]
        if c in "'\"`":
            j = i + 1
            while True:
                if j >= n:
                    raise Unresolvable("an unterminated quoted token")
                if backslash and c != "`" and sql[j] == "\\":
                    j += 2
                    continue
                if sql[j] == c:
                    if sql.startswith(c, j + 1):
                        j += 2
                        continue
                    break
                j += 1
            spans.append((i, j + 1))
            i = j + 1
        elif c == "#" or (sql.startswith("--", i) and (i + 2 >= n or sql[i + 2] in " \t\r\n\f\v")):
            j = sql.find("\n", i)
            j = n if j < 0 else j
            spans.append((i, j))
            i = j
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            if j < 0:
                raise Unresolvable("an unterminated /* comment")
            spans.append((i, j + 2))
            i = j + 2
        else:
            i += 1
    return spans


def resolve_postgres_escapes(sql: str) -> str:
    """``sql`` with every ``U&"..."`` identifier and ``U&'...'`` string written plainly, as PostgreSQL reads them."""
    if "&" not in sql:
        return sql
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if sql.startswith("--", i):
            j = sql.find("\n", i)
            j = n if j < 0 else j + 1
        elif sql.startswith("/*", i):
            j = _end_of_block_comment(sql, i)
        elif (
            c in "uU"
            and sql.startswith("&", i + 1)
            and i + 2 < n
            and sql[i + 2] in "\"'"
            and not _ident_before(sql, i)
        ):
            quote = sql[i + 2]
            body, j = _quoted(sql, i + 2, quote)
            escape, j = _uescape(sql, j)
            text = _decode_unicode(body, escape)
            out.append(quote + text.replace(quote, quote * 2) + quote)
            i = j
            continue
        elif c == "'":
            escaped = i > 0 and sql[i - 1] in "eE" and not _ident_before(sql, i - 1)
            j = _end_of_string(sql, i, escaped)
        elif c == '"':
            j = _quoted(sql, i, '"')[1]
        elif c == "$" and not _ident_before(sql, i):
            tag = _DOLLAR_TAG.match(sql, i)
            if tag:
                close = sql.find(tag.group(0), tag.end())
                if close < 0:
                    raise Unresolvable("an unterminated dollar-quoted string")
                j = close + len(tag.group(0))
            else:
                j = i + 1
        else:
            j = i + 1
        out.append(sql[i:j])
        i = j
    return "".join(out)


def _uescape(sql: str, j: int) -> tuple[str, int]:
    """The escape character of the ``U&`` token ending at ``sql[j]`` and the index after its
    ``UESCAPE 'c'`` clause; a backslash and ``j`` when none follows. Comments and white space may
    stand on either side of ``UESCAPE``; they are skipped as the server skips them (block comments
    nest, and no comment reaches past its own end)."""
    k = _skip_blank(sql, j)
    if sql[k : k + 7].upper() != "UESCAPE" or (
        k + 7 < len(sql) and (sql[k + 7].isalnum() or sql[k + 7] in "_$")
    ):
        return "\\", j
    k = _skip_blank(sql, k + 7)
    if not (sql.startswith("'", k) and sql.startswith("'", k + 2)):
        raise Unresolvable("UESCAPE must be followed by a one-character string literal")
    return sql[k + 1], k + 3


def _skip_blank(sql: str, i: int) -> int:
    """The index of the first character at or after ``i`` that is neither white space nor in a comment."""
    while i < len(sql):
        if sql[i].isspace():
            i += 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = len(sql) if end < 0 else end + 1
        elif sql.startswith("/*", i):
            i = _end_of_block_comment(sql, i)
        else:
            break
    return i


def _ident_before(sql: str, i: int) -> bool:
    return i > 0 and (sql[i - 1].isalnum() or sql[i - 1] in "_$")


def _end_of_block_comment(sql: str, i: int) -> int:
    depth, j = 0, i
    while j < len(sql):
        if sql.startswith("/*", j):
            depth, j = depth + 1, j + 2
        elif sql.startswith("*/", j):
            depth, j = depth - 1, j + 2
            if depth == 0:
                return j
        else:
            j += 1
    raise Unresolvable("an unterminated /* comment")


def _end_of_string(sql: str, i: int, escaped: bool) -> int:
    j = i + 1
    while j < len(sql):
        ch = sql[j]
        if escaped and ch == "\\":
            j += 2
            continue
        if ch == "'":
            if sql.startswith("''", j):
                j += 2
                continue
            return j + 1
        j += 1
    raise Unresolvable("an unterminated string literal")


def _quoted(sql: str, i: int, quote: str) -> tuple[str, int]:
    """The body of the quoted token starting at ``sql[i]`` (doubled quotes undone) and the index after it."""
    parts, j = [], i + 1
    while True:
        k = sql.find(quote, j)
        if k < 0:
            raise Unresolvable(f"an unterminated {quote}-quoted token")
        parts.append(sql[j:k])
        if sql.startswith(quote * 2, k):
            parts.append(quote)
            j = k + 2
            continue
        return "".join(parts), k + 1


def _decode_unicode(body: str, escape: str) -> str:
    if escape in _HEX or escape in "+'\" \t\n\r" or len(escape) != 1:
        raise Unresolvable(f"UESCAPE {escape!r} is not a valid escape character")
    out, j = [], 0
    while j < len(body):
        ch = body[j]
        if ch != escape:
            out.append(ch)
            j += 1
            continue
        if body.startswith(escape, j + 1):
            out.append(escape)
            j += 2
            continue
        if body.startswith("+", j + 1):
            digits, j = body[j + 2 : j + 8], j + 8
        else:
            digits, j = body[j + 1 : j + 5], j + 5
        if len(digits) not in (4, 6) or not set(digits) <= _HEX:
            raise Unresolvable("an invalid Unicode escape in a U& literal")
        code = int(digits, 16)
        if code == 0 or code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            raise Unresolvable("a Unicode escape outside the characters PostgreSQL accepts")
        out.append(chr(code))
    return "".join(out)
