"""The notebook's snapshot: executed INSIDE the sandbox (uploaded as ``assay_ci_state``).

The namespace is saved after every cell and restored when a process starts
without it in memory: every call on the local runtime (one process per
call), and a notebook holder started anew (after the old one was lost, or
when a cell's threads kept it from taking over). Modules are stored by name
and come back as stand-ins that import on first use; plain data is stored
with ``marshal`` (no ``pickle`` import to load it), the rest with ``pickle``,
then ``cloudpickle`` for functions and classes defined in cells. What cannot
be pickled, or would pass the size limit, is left out and named.
"""

import marshal
import os
import sys
import types


def restore_state(ns: dict, path: str) -> str | None:
    """Load the saved namespace (``path``) into ``ns``; an explanation if it failed."""
    try:
        with open(path, "rb") as fh:
            blob = fh.read()
    except FileNotFoundError:
        return None
    try:
        if blob[:1] == b"M":
            state = marshal.loads(blob[1:])
        else:
            import pickle

            state = pickle.loads(blob[1:])
    except Exception as exc:  # noqa: BLE001
        return (
            f"the saved state could not be restored ({type(exc).__name__}: {exc}); starting empty"
        )
    problems: list[str] = []
    for name, module in state.get("modules", {}).items():
        ns[name] = sys.modules.get(module) or _ModuleProxy(module)
    ns.update(state.get("values", {}))
    return ("could not re-import: " + ", ".join(problems)) if problems else None


class _ModuleProxy(types.ModuleType):
    """A module from the saved state, imported when the cell first uses it.

    A cell that does not touch ``pd`` or ``plt`` does not pay for importing
    pandas or matplotlib. ``__name__`` is answered without importing.
    """

    def __getattr__(self, attr):
        import importlib

        return getattr(importlib.import_module(self.__name__), attr)


def save_state(
    ns: dict, max_bytes: int, path: str, not_state: frozenset
) -> tuple[list, str | None]:
    """Pickle the namespace to ``path``; the names left out (with reasons) and a state-level error."""
    modules, values, skipped = {}, {}, []
    for name, value in ns.items():
        if name in not_state or (name.startswith("__") and name.endswith("__")):
            continue
        if isinstance(value, types.ModuleType):
            modules[name] = value.__name__  # (a proxy answers without importing)
        else:
            size = _estimated_size(value)
            if size > max_bytes:  # known too big: skip it without paying for a pickle
                skipped.append(
                    {
                        "name": name,
                        "type": _type_name(value),
                        "reason": f"too large to keep (about {size:,} bytes; state limit {max_bytes:,})",
                    }
                )
                continue
            values[name] = value
    state = {"modules": modules, "values": values}
    try:
        # Plain data (numbers, strings, lists, dicts...) needs no pickle at all, either way.
        blob = b"M" + marshal.dumps(state)
        return (
            _write_state(blob, path, skipped)
            if len(blob) <= max_bytes
            else _save_pickled(state, max_bytes, path, skipped)
        )
    except ValueError:
        return _save_pickled(state, max_bytes, path, skipped)


def _estimated_size(value) -> int:
    """A cheap lower bound of the pickled size of big array-like values (0 when unknown).

    It must never be above the real size: a value it puts over the limit is left out without
    being pickled. Numbers count their bytes; other elements (objects, strings, extension
    arrays) one byte each, as a pickle may store a repeated one as a 2-byte reference.
    """
    mod = type(value).__module__.split(".")[0]
    try:
        if mod == "numpy":
            return _array_floor(value)
        if mod == "pandas" and hasattr(value, "memory_usage"):
            # pandas' blocks (``_mgr.blocks``, in pandas 1 to 3) cost a microsecond; the public
            # ``dtypes`` builds a Series, and this runs for every frame in the notebook on every cell.
            blocks = getattr(getattr(value, "_mgr", None), "blocks", None)
            if blocks is not None:
                return sum(_array_floor(block.values) for block in blocks)
            return int(getattr(value, "size", 0))
    except Exception:  # noqa: BLE001 - an estimate only
        return 0
    return 0


def _array_floor(values) -> int:
    dtype = getattr(values, "dtype", None)
    if type(values).__module__ == "numpy" and getattr(dtype, "kind", "O") != "O":
        return int(values.nbytes)
    return int(getattr(values, "size", 0))


def _save_pickled(state: dict, max_bytes: int, path: str, skipped: list) -> tuple[list, str | None]:
    modules, values = state["modules"], state["values"]
    dumps = _plain_dumps
    try:
        blob = dumps(state)  # plain pickle first: loading it later needs no cloudpickle import
    except Exception:  # noqa: BLE001
        dumps = _pickler()
        try:
            blob = dumps(state)
        except Exception:  # noqa: BLE001 - find the culprits one by one
            blob = None
    if blob is None or len(blob) > max_bytes:
        sizes = {}
        for name, value in list(values.items()):
            try:
                sizes[name] = len(dumps(value))
            except Exception as exc:  # noqa: BLE001
                skipped.append(
                    {
                        "name": name,
                        "type": _type_name(value),
                        "reason": f"cannot be pickled: {type(exc).__name__}: {str(exc)[:200]}",
                    }
                )
                del values[name]
        total = sum(sizes.values())
        for name in sorted(sizes, key=lambda n: sizes[n], reverse=True):
            if total <= max_bytes * 0.95:
                break
            skipped.append(
                {
                    "name": name,
                    "type": _type_name(values[name]),
                    "reason": f"too large to keep ({sizes[name]:,} bytes; state limit {max_bytes:,})",
                }
            )
            total -= sizes[name]
            del values[name]
        try:
            blob = dumps({"modules": modules, "values": values})
        except Exception as exc:  # noqa: BLE001 - shared references can still fail together
            return skipped, f"the state could not be pickled: {type(exc).__name__}: {exc}"
    return _write_state(b"P" + blob, path, skipped)


def _write_state(blob: bytes, path: str, skipped: list) -> tuple[list, str | None]:
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as fh:
            fh.write(blob)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return (
            skipped,
            f"the state could not be written ({exc.strerror or exc}); the previous state is kept",
        )
    return skipped, None


def _plain_dumps(obj) -> bytes:
    import pickle

    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def _pickler():
    try:
        import cloudpickle  # pickles functions and classes defined in cells by value
    except ImportError:
        return _plain_dumps
    return lambda obj: cloudpickle.dumps(obj, protocol=5)


def _type_name(value) -> str:
    t = type(value)
    return (
        t.__name__
        if t.__module__ in ("builtins", "__main__")
        else f"{t.__module__}.{t.__qualname__}"
    )
