"""The console's narrow tables (ddpbench.show.console.fitted): words are cut, widest first, until the
table fits; figures and verdicts never are. Generated column widths."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpbench.show.console import NARROWEST_WORDS, fitted
from ddpbench.testing.fuzzing import examples


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(st.integers(1, 60), st.booleans(), st.one_of(st.none(), st.integers(3, 40))),
                min_size=1, max_size=12), st.integers(40, 160))
def test_words_are_cut_until_the_table_fits_and_figures_never(columns, width):
    natural = [n for n, _, _ in columns]
    whole = {i for i, (_, figure, _) in enumerate(columns) if figure}
    limits = [limit for _, _, limit in columns]
    widths = fitted(natural, whole, limits, width)
    assert set(widths) == set(range(len(columns))) - whole  # a width for each column of words, none for figures
    for i, w in widths.items():
        assert NARROWEST_WORDS <= w or w == min(natural[i], limits[i] or natural[i])
        assert w <= min(natural[i], limits[i] or natural[i])  # never wider than its cells or its limit
    total = 1 + 3 * len(columns) + sum(natural[i] for i in whole) + sum(widths.values())
    if total > width:  # it could not fit: every column of words is already at its narrowest
        assert all(w <= NARROWEST_WORDS for w in widths.values())


def test_a_negative_exposed_communication_is_said_not_measurable_neither_zero_nor_a_negative_time():
    """A negative exposed time (the no_sync() steps slower than the synced ones) is no communication time: not
    0.00, which would say nothing is exposed (issue 59), nor -0.40 or -7.11~, a time nothing measured (issue 82),
    but n/m, which the summary's title explains."""
    from ddpbench.analysis.core.columns import EXPOSED_COMM_MS
    from ddpbench.show.budget import NOT_MEASURABLE
    from ddpbench.show.console_columns import _comm

    below = {"exposed_comm_ms_low": -0.6, "exposed_comm_ms_high": -0.2}  # told apart from 0, below it
    above = {"exposed_comm_ms_low": 1.0, "exposed_comm_ms_high": 2.0}
    two = {"status": "ok", "world_size": 2}
    assert _comm({EXPOSED_COMM_MS: -0.4, "comm_ms": math.nan, **two, **below}, None) == NOT_MEASURABLE == "n/m"
    assert _comm({EXPOSED_COMM_MS: -7.11, "comm_ms": 0.0, **two, "exposed_comm_ms_low": -15.0,
                  "exposed_comm_ms_high": 0.8}, None) == "n/m"
    assert _comm({EXPOSED_COMM_MS: -7.11, "comm_ms": 0.0, **two}, None) == "n/m"  # one launch: no time either
    assert _comm({EXPOSED_COMM_MS: 1.5, "comm_ms": 2.0, **two, **above}, None) == "3.50"
    assert _comm({EXPOSED_COMM_MS: math.nan, "comm_ms": math.nan, **two}, None) == "-"


@pytest.mark.parametrize(("low", "high", "shown"), [
    (1.0, 2.0, "1.50"),        # above 0: communication measured
    (-2.0, -1.0, "n/m"),       # below 0: no communication time
    (-1.0, 4.0, "n/m"),        # includes 0: not measurable
    (math.nan, math.nan, "1.50~"),  # one launch: the point, marked: no interval
])
def test_a_comm_figure_is_shown_only_where_measurable_and_the_title_explains_each_mark(low, high, shown):
    """A figure where the exposed part's interval lies above 0 (the diagnosis's measurable), n/m where not, ``~``
    after the point of one launch; the summary's title says what each mark it shows means; explicit communication
    alone is never marked."""
    from ddpbench.analysis.core.columns import EXPOSED_COMM_MS
    from ddpbench.show.budget import comm_marks
    from ddpbench.show.console_columns import _comm

    row = {EXPOSED_COMM_MS: 1.5, "comm_ms": 0.0, "status": "ok", "world_size": 2, "exposed_comm_ms_low": low,
           "exposed_comm_ms_high": high}
    assert _comm(row, None) == shown
    marks = comm_marks(pd.DataFrame([row]))
    assert ("comm n/m: not measurable" in marks) == (shown == "n/m")
    assert ("comm ~: one launch, no interval" in marks) == shown.endswith("~")
    # a strategy that communicates after backward, with no no_sync() baseline: nothing exposed to doubt
    assert _comm({**row, EXPOSED_COMM_MS: math.nan, "comm_ms": 3.0}, None) == "3.00"


def test_one_rank_communicates_nothing_whatever_its_no_sync_difference():
    """At world size 1 the synced step less the no_sync() step is noise (2-7 ms on a script's epochs): none, with
    its meaning in the title, never a figure."""
    from ddpbench.analysis.core.columns import EXPOSED_COMM_MS
    from ddpbench.show.budget import comm_marks
    from ddpbench.show.console_columns import _comm

    one = {EXPOSED_COMM_MS: 3.19, "comm_ms": 0.0, "status": "ok", "world_size": 1, "exposed_comm_ms_low": 1.0,
           "exposed_comm_ms_high": 5.4}
    assert _comm(one, None) == "none"
    assert comm_marks(pd.DataFrame([one])) == "comm none: one rank, nothing communicated"
    assert _comm({**one, "status": "failed"}, None) == "-"
