"""Text columns of ddpbench's tables are stored as Python strings for the call, whatever pyarrow's
presence, and a user's own pandas setting is left as it was (ddpbench/results/strings.py)."""

import pandas as pd

from ddpbench.results.strings import python_strings
from ddpbench.results.tables import load_tables
from ddpbench.testing import ROOT


def test_the_tables_hold_python_strings_and_the_users_setting_is_kept():
    before = pd.get_option("mode.string_storage")
    tables = load_tables(ROOT / "reports" / "examples" / "quick-cpu")
    assert pd.get_option("mode.string_storage") == before
    for frame in (tables.steps, tables.runs):
        texts = [c for c in ("key", "phase", "strategy") if c in frame]
        assert texts and all(frame[c].dtype == pd.StringDtype("python", na_value=float("nan")) for c in texts)


def test_the_wrapper_sets_the_storage_for_the_call_only_even_when_it_raises():
    seen = []

    @python_strings
    def build(fail):
        seen.append(pd.Series(["a"]).dtype.storage)
        if fail:
            raise ValueError("boom")
        return pd.DataFrame({"k": ["x", "y"]})

    before = pd.get_option("mode.string_storage")
    assert build(False)["k"].dtype.storage == "python"
    try:
        build(True)
    except ValueError:
        pass
    assert seen == ["python", "python"] and pd.get_option("mode.string_storage") == before
