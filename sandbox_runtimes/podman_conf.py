"""The containers.conf a ``podman system service`` started by assay runs with.

Podman's API keeps every exec's ``conmon`` (two processes) alive for
``exit_command_delay`` seconds after the exec ends - 300 s by default - so
that a client can still read the exit code; those processes sit on the host,
outside the container's limits (20 executions left 40). assay reads the exit
code as soon as the output ends, so the services it starts get a delay of
:data:`EXEC_EXIT_DELAY_S`. Podman reads one file named by ``CONTAINERS_CONF``
instead of its system files, so that file is the system's configuration
(merged as podman merges it) with only this key changed. When the system
files cannot be read exactly, nothing is changed (the service then keeps
podman's own delay).

A service assay did not start (``SANDBOX_PODMAN_SOCKET``, the system socket)
keeps its own setting: set ``exit_command_delay`` in its containers.conf.
"""

from __future__ import annotations

import glob
import json
import os
import re
from pathlib import Path
from typing import Any

EXEC_EXIT_DELAY_S = 5
SYSTEM_FILES = ("/usr/share/containers/containers.conf", "/etc/containers/containers.conf")
DROP_IN_DIRS = ("/usr/share/containers/containers.conf.d", "/etc/containers/containers.conf.d")


def service_environment(
    directory: str | os.PathLike[str],
    delay_s: int = EXEC_EXIT_DELAY_S,
    filename: str = "containers.conf",
) -> dict[str, str]:
    """Variables to add to a podman service's environment (empty when the conf cannot be made exactly)."""
    text = containers_conf(delay_s)
    if text is None:
        return {}
    path = Path(directory) / filename
    path.write_text(text)
    return {"CONTAINERS_CONF": str(path)}


def containers_conf(delay_s: int = EXEC_EXIT_DELAY_S) -> str | None:
    """The merged configuration with ``engine.exit_command_delay = delay_s``, as TOML text."""
    import tomllib

    merged: dict[str, Any] = {}
    for path in sources():
        try:
            with open(path, "rb") as fh:
                _merge(merged, tomllib.load(fh))
        except FileNotFoundError:
            continue
        except (OSError, tomllib.TOMLDecodeError):
            return None
    merged.setdefault("engine", {})["exit_command_delay"] = int(delay_s)
    try:
        text = "\n".join(_toml(merged)) + "\n"
        if tomllib.loads(text) != merged:
            return None
    except (TypeError, ValueError, tomllib.TOMLDecodeError):
        return None
    return text


def sources() -> list[str]:
    """The files podman reads its configuration from, in the order it merges them."""
    if os.environ.get("CONTAINERS_CONF"):
        return [os.environ["CONTAINERS_CONF"]]
    paths = list(SYSTEM_FILES)
    for directory in DROP_IN_DIRS:
        paths += sorted(glob.glob(os.path.join(directory, "*.conf")))
    if os.getuid() != 0:
        home = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
        paths.append(os.path.join(home, "containers", "containers.conf"))
    return paths


def _merge(into: dict[str, Any], data: dict[str, Any]) -> None:
    for key, value in data.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def _toml(data: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[str]:
    lines = [f"{_key(k)} = {_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    tables = [(k, v) for k, v in data.items() if isinstance(v, dict)]
    out = (["[" + ".".join(_key(p) for p in prefix) + "]"] if prefix else []) + lines
    for key, value in tables:
        out += _toml(value, (*prefix, key))
    return out


def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML form for {type(value).__name__}")
