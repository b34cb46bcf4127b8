"""Which fields vary, read value by value (analysis.core.jobs.varying), says what pandas' astype(str).nunique() > 1
says, missing values included."""

import math

import pandas as pd

from ddpbench.analysis.core.jobs import _knob_varies, describe, varying


def _pandas(table, fields):
    return [f for f in fields if f in table.columns and table[f].astype(str).nunique() > 1]


def test_varying_is_pandas_nunique_of_the_text():
    table = pd.DataFrame({
        "same_int": [2, 2, 2], "ints": [1, 2, 1], "int_and_float": [1, 1.0, 1],  # a float column: "1.0" thrice
        "floats": [0.5, 0.5, 0.25], "bools": [True, True, True], "strs": ["ddp", "ddp", "master"],
        "nan_and_one": [math.nan, 1.0, 1.0], "none_and_x": [None, "x", "x"], "all_nan": [math.nan] * 3,
        "lists": [[1, 2], [1, 2], [1, 3]],
    })
    fields = list(table.columns) + ["absent"]
    assert varying(table, fields) == _pandas(table, fields)
    assert varying(table, fields) == ["ints", "floats", "strs", "lists"]
    assert varying(table.iloc[:1], fields) == [] and varying(table.iloc[0:0], fields) == []


def test_a_strategy_setting_is_named_only_where_its_strategy_ran_it_with_two_values():
    table = pd.DataFrame({"model": ["mlp"] * 4, "model_size": ["s"] * 4, "strategy": ["ddp", "ddp", "ring", "ring"],
                          "bucket_cap_mb": [1.0, 25.0, 25.0, 25.0], "world_size": [2, 2, 2, 4]})
    rows = [r for _, r in table.iterrows()]
    assert _knob_varies(table, rows[0], "bucket_cap_mb") and not _knob_varies(table, rows[2], "bucket_cap_mb")
    fields = ["strategy", "bucket_cap_mb", "world_size"]
    assert [describe(r, fields, table) for r in rows] == [
        "mlp-s ddp bucket 1 MB ws=2", "mlp-s ddp bucket 25 MB ws=2", "mlp-s ring ws=2", "mlp-s ring ws=4"]
