"""The console's narrow tables (ddpbench.cli.console.fitted): words are cut, widest first, until the
table fits; figures and verdicts never are. Generated column widths."""

from __future__ import annotations

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
    import math

    from ddpbench.analysis.core.columns import EXPOSED_COMM_MS
    from ddpbench.cli.columns import _comm

    assert _comm({EXPOSED_COMM_MS: -0.4, "comm_ms": math.nan, "status": "ok"}, None) == "-0.40"
    assert _comm({EXPOSED_COMM_MS: 1.5, "comm_ms": 2.0, "status": "ok"}, None) == "3.50"
    assert _comm({EXPOSED_COMM_MS: math.nan, "comm_ms": math.nan, "status": "ok"}, None) == "-"
