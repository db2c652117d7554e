"""The snapshot's size floor: a value is left out unpickled only when its data alone is over the limit."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

from assay.plugins.code_interpreter.sandbox_state import _estimated_size

VALUES = {
    "float frame": pd.DataFrame({"a": np.arange(50_000) * 0.5, "b": np.arange(50_000)}),
    "repeated strings": pd.DataFrame({"s": ["x"] * 50_000}),
    "categorical": pd.DataFrame({"c": pd.Categorical(["p", "q"] * 25_000)}),
    "nullable ints": pd.Series(pd.array([1, None] * 25_000, dtype="Int64")),
    "float series": pd.Series(np.arange(50_000) * 0.25),
    "object array": np.array(["x"] * 50_000, dtype=object),
    "int8 array": np.zeros(50_000, dtype=np.int8),
}


@pytest.mark.parametrize("name", list(VALUES))
def test_size_floor_is_never_above_the_pickled_size(name):
    value = VALUES[name]
    assert 0 < _estimated_size(value) <= len(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


def test_size_floor_of_a_numeric_frame_is_its_data():
    frame = VALUES["float frame"]
    assert _estimated_size(frame) == frame["a"].nbytes + frame["b"].nbytes


def test_size_floor_of_other_values_is_zero():
    assert _estimated_size([1.0] * 1000) == 0 and _estimated_size("text") == 0
