"""REPORT_RESULT inside the sandbox: any value turned into plain JSON data.

Uploaded beside the runner (as ``assay_ci_results``) and imported only when a
cell assigns REPORT_RESULT. The host applies the evidence store's canonical
form on top of what this returns.
"""

import base64


def _type_name(value) -> str:
    t = type(value)
    return (
        t.__name__
        if t.__module__ in ("builtins", "__main__")
        else f"{t.__module__}.{t.__qualname__}"
    )


def jsonable(value, depth: int = 0):
    """REPORT_RESULT as plain JSON data (the host applies the canonical form on top).

    DataFrames become lists of row objects (a non-default index becomes
    columns), Series become objects, numpy values become Python values.
    """
    if depth > 100:
        raise ValueError("REPORT_RESULT is nested more than 100 levels deep")
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if value != value:
            return {"$float": "NaN"}
        if value in (float("inf"), float("-inf")):
            return {"$float": "Infinity" if value > 0 else "-Infinity"}
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((jsonable(v, depth + 1) for v in value), key=repr)
    mod = type(value).__module__.split(".")[0]
    if mod == "pandas":
        return _pandas_jsonable(value, depth)
    if mod == "numpy":
        if getattr(value, "ndim", None) == 0:
            return jsonable(value.item(), depth + 1)
        return jsonable(value.tolist(), depth + 1)
    import datetime
    import decimal
    import uuid

    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return {"$duration": f"PT{value.total_seconds()!r}S"}
    if isinstance(value, decimal.Decimal):
        return (
            {"$decimal": format(value.normalize(), "f")}
            if value.is_finite()
            else {"$decimal": str(value)}
        )
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    raise TypeError(
        f"REPORT_RESULT holds a {_type_name(value)}, which has no JSON form; convert it "
        "(for example to a dict, list, number or string)"
    )


def _pandas_jsonable(value, depth: int):
    import pandas as pd

    if value is pd.NaT or value is getattr(pd, "NA", object()):
        return None
    if isinstance(value, pd.DataFrame):
        frame, idx = value, value.index
        default = isinstance(idx, pd.RangeIndex) and idx.start == 0 and idx.step == 1
        # Unnamed integer labels are positions left by filtering or sorting: noise. A named or
        # non-integer index (a groupby key, set_index) is data and becomes columns.
        positional = idx.nlevels == 1 and idx.name is None and idx.dtype.kind in "iu"
        if not default and not positional:
            frame = frame.reset_index()
        frame = frame.astype(object).where(frame.notna(), None)
        return [
            {str(k): jsonable(v, depth + 1) for k, v in row.items()}
            for row in frame.to_dict("records")
        ]
    if isinstance(value, pd.Series):
        return {str(k): jsonable(None if _isna(v) else v, depth + 1) for k, v in value.items()}
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if isinstance(value, pd.Timedelta):
        return jsonable(value.to_pytimedelta(), depth + 1)
    if isinstance(value, pd.Index):
        return jsonable(value.tolist(), depth + 1)
    raise TypeError(f"REPORT_RESULT holds a {_type_name(value)}, which has no JSON form")


def _isna(v) -> bool:
    try:
        import pandas as pd

        return bool(pd.isna(v)) if not isinstance(v, (list, tuple, dict)) else False
    except (TypeError, ValueError):
        return False
