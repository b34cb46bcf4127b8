"""Sets of intervals against a brute-force count of covered grid points."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpbench.testing.fuzzing import examples
from ddpbench.traces import intervals as iv

spans = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 12)), max_size=12)


def _grid(pairs) -> np.ndarray:
    covered = np.zeros(80, dtype=bool)
    for start, width in pairs:
        covered[start:start + width] = True
    return covered


def _set(pairs):
    return iv.merge([s for s, _ in pairs], [s + w for s, w in pairs])


@settings(max_examples=examples(300), deadline=None)
@given(spans, spans, st.integers(0, 80), st.integers(0, 80))
def test_union_intersection_difference_and_windows_count_what_is_covered(a, b, lo, hi):
    lo, hi = min(lo, hi), max(lo, hi)
    ga, gb = _grid(a), _grid(b)
    sa, sb = _set(a), _set(b)
    assert iv.length(sa) == ga.sum()
    assert iv.length(iv.union(sa, sb)) == (ga | gb).sum()
    assert iv.length(iv.intersect(sa, sb)) == (ga & gb).sum()
    assert iv.length(iv.subtract(sa, sb)) == (ga & ~gb).sum()
    assert iv.within(sa, [lo], [hi])[0] == ga[lo:hi].sum()
    assert iv.length(iv.complement(sa, lo, hi)) == (~ga[lo:hi]).sum()
    starts, ends = sa
    assert np.all(starts[1:] > ends[:-1])  # disjoint and sorted, touching intervals merged
