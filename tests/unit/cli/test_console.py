"""The console's narrow tables (ddpbench.cli.console.fitted): words are cut, widest first, until the
table fits; figures and verdicts never are. Generated column widths."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpbench.cli.console import NARROWEST_WORDS, fitted
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


def test_exposed_communication_is_shown_signed_not_clipped_to_zero():
    """A negative exposed time (the no_sync() steps slower than the synced ones: noise) is said as measured,
    -0.40, not as 0.00 (issue 59: signed figures shown signed)."""
    from ddpbench.analysis.core.columns import EXPOSED_COMM_MS
    from ddpbench.cli.columns import _comm

    below = {"exposed_comm_ms_low": -0.6, "exposed_comm_ms_high": -0.2}  # told apart from 0, below it
    above = {"exposed_comm_ms_low": 1.0, "exposed_comm_ms_high": 2.0}
    assert _comm({EXPOSED_COMM_MS: -0.4, "comm_ms": math.nan, "status": "ok", **below}, None) == "-0.40"
    assert _comm({EXPOSED_COMM_MS: 1.5, "comm_ms": 2.0, "status": "ok", **above}, None) == "3.50"
    assert _comm({EXPOSED_COMM_MS: math.nan, "comm_ms": math.nan, "status": "ok"}, None) == "-"


@pytest.mark.parametrize(("low", "high", "marked"), [
    (1.0, 2.0, False),   # above 0: communication measured
    (-2.0, -1.0, False),  # below 0: told apart too (said signed, unmarked)
    (-1.0, 4.0, True),   # includes 0: within noise
    (math.nan, math.nan, True),  # one launch: no interval
])
def test_a_comm_figure_whose_exposed_part_is_within_noise_is_marked_and_the_title_says_so(low, high, marked):
    """As the loss budget's lines: ``~`` after a figure whose interval includes 0 (or that one launch gave), and the
    summary's title says what it means where some row has it; explicit communication alone is never marked."""
    from ddpbench.analysis.core.columns import EXPOSED_COMM_MS
    from ddpbench.cli.columns import WITHIN_NOISE, _comm

    row = {EXPOSED_COMM_MS: 1.5, "comm_ms": 0.0, "status": "ok", "exposed_comm_ms_low": low,
           "exposed_comm_ms_high": high}
    assert _comm(row, None) == "1.50" + (WITHIN_NOISE if marked else "")
    # a strategy that communicates after backward, with no no_sync() baseline: nothing exposed to doubt
    assert _comm({**row, EXPOSED_COMM_MS: math.nan, "comm_ms": 3.0}, None) == "3.00"
