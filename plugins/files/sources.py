"""From what a user typed (``sales=./sales.xlsx``, a directory, a glob) to checked files with table names."""

from __future__ import annotations

import glob
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from .errors import (
    FILE_NAME_INVALID,
    FILE_NOT_FOUND,
    FILE_NOT_REGULAR,
    FILE_OUTSIDE_ROOTS,
    FileError,
)
from .formats import _EXTENSIONS, format_of

_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


@dataclass(frozen=True)
class FileSpec:
    """One table to register: its name and the file(s) it reads (several: a glob of one format)."""

    name: str
    paths: tuple[Path, ...]


def table_name_for(path: Path) -> str:
    """``Sales 2024.csv.gz`` -> ``sales_2024``."""
    stem = path.name.split(".")[0]
    name = re.sub(r"[^a-z0-9_]+", "_", stem.lower()).strip("_") or "file"
    return name if not name[0].isdigit() else f"t_{name}"


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise FileError(
            FILE_NAME_INVALID,
            f"{name!r} is not a usable table name",
            "Use lower-case letters, digits and _ (starting with a letter), at most 63 characters.",
        )
    return name


def parse_assignments(text: str) -> list[tuple[str | None, str]]:
    """``'sales=./sales.xlsx; ev=./events/*.parquet'`` -> [(name, pattern), ...]; a bare path has no name."""
    out: list[tuple[str | None, str]] = []
    for part in re.split(r"[;\n]", text or ""):
        part = part.strip()
        if not part:
            continue
        name, sep, rest = part.partition("=")
        if sep and _NAME.match(name.strip()):
            out.append((name.strip(), rest.strip()))
        else:
            out.append((None, part))
    return out


def expand(pattern: str, *, roots: list[Path] | None = None) -> list[Path]:
    """The files a path, directory or glob names (a directory: each readable file in it, not recursive)."""
    path = Path(os.path.expanduser(pattern))
    if any(ch in pattern for ch in "*?["):
        found = [Path(p) for p in sorted(glob.glob(os.path.expanduser(pattern)))]
    elif path.is_dir():
        found = sorted(p for p in path.iterdir() if p.is_file() and _readable_name(p))
    else:
        found = [path]
    if not found:
        raise FileError(
            FILE_NOT_FOUND, f"{pattern!r} matches no file", "Check the path or the pattern."
        )
    return [checked(p, roots) for p in found]


def _readable_name(path: Path) -> bool:
    try:
        format_of(path)
        return True
    except FileError:
        return path.suffix.lower() in _EXTENSIONS


def checked(path: Path, roots: list[Path] | None) -> Path:
    """The file's real path: it exists, is a regular file, and (with ``roots``) lies inside one of them,
    symbolic links followed (a link to /etc/shadow from inside a root is outside it)."""
    try:
        real = path.resolve(strict=True)
        st = real.stat()
    except FileNotFoundError:
        raise FileError(FILE_NOT_FOUND, f"{path} does not exist", "Check the path.") from None
    except OSError as exc:
        raise FileError(
            FILE_NOT_FOUND, f"{path} cannot be read: {exc.strerror}", "Check the path."
        ) from None
    if not stat.S_ISREG(st.st_mode):
        raise FileError(
            FILE_NOT_REGULAR, f"{path} is not a regular file", "Give a file, not a device or pipe."
        )
    if roots is not None and not any(real.is_relative_to(r.resolve()) for r in roots):
        raise FileError(
            FILE_OUTSIDE_ROOTS,
            f"{path} is outside the allowed roots",
            "Put the file under one of [files] roots.",
            details={"path": str(path)},
        )
    if not os.access(real, os.R_OK):
        raise FileError(
            FILE_NOT_FOUND, f"{path} is not readable by this user", "Check the file's permissions."
        )
    return real


def specs_from(
    assignments: list[tuple[str | None, str]], *, roots: list[Path] | None = None
) -> list[FileSpec]:
    """One spec per named pattern (all its files one table); an unnamed pattern gives one table per file."""
    specs: list[FileSpec] = []
    for name, pattern in assignments:
        files = expand(pattern, roots=roots)
        if name is not None:
            specs.append(FileSpec(check_name(name), tuple(files)))
        else:
            specs.extend(FileSpec(table_name_for(f), (f,)) for f in files)
    seen: dict[str, FileSpec] = {}
    for spec in specs:
        if spec.name in seen and seen[spec.name].paths != spec.paths:
            raise FileError(
                FILE_NAME_INVALID,
                f"two files would both be table {spec.name!r}",
                "Name them: --file name=path, or ASSAY_FILES='a=./x.csv; b=./y/x.csv'.",
            )
        seen[spec.name] = spec
    return list(seen.values())
