"""The figures a sentence may quote, found by value (:class:`ddpbench.audit.lookup.Pool`), are those
:func:`ddpbench.audit.pool.build` lists, in its order: on committed folders of many settings, for the
jobs sentences are about and for random sets of them, at every figure's own value and between."""

from __future__ import annotations

import math
import random

import pytest

from ddpbench.audit import derive
from ddpbench.audit.checks import near_jobs
from ddpbench.audit.lookup import Pool
from ddpbench.audit.pool import Entry, build
from ddpbench.testing import ROOT

#: folders whose jobs pair across settings, caps of the same buckets (sets of several) and launches
FOLDERS = ("bucket-sweep-cpu", "consistency-cpu", "strategies-cpu", "world-sizes-cpu", "network-cpu")


def _same(e) -> tuple:
    return e.name, e.family, e.value, repr(e.low), repr(e.high), e.slack


def _key_sets(fig, seed: int):
    ok = list(fig.ok().index)
    rng = random.Random(seed)
    yield tuple(ok)
    for key in ok[:2]:
        yield tuple(near_jobs(fig, key))
    for _ in range(2):
        yield tuple(rng.sample(ok, rng.randint(1, len(ok))))


@pytest.fixture(scope="module", params=FOLDERS)
def fig(request):
    return derive(ROOT / "reports" / "examples" / request.param)


def test_found_by_value_is_what_build_lists_in_its_order(fig):
    rng = random.Random(7)
    for n, keys in enumerate(_key_sets(fig, 1)):
        listed, pool = build(fig, keys), Pool(fig, keys)
        for unit, entries in listed.items():
            probes = [e.value for e in entries[:: max(1, len(entries) // 15)]]
            probes += [rng.uniform(min(probes) - 1, max(probes) + 1) for _ in range(5)]
            for value in probes:
                for width in (0.0005, 0.05, 5.0):
                    want = [_same(e) for e in entries if value - width <= e.value <= value + width]
                    got = [_same(e) for e in pool.near(unit, value, width)]
                    assert got == want, (n, unit, value, width)
                nearest = pool.nearest(unit, value, lambda e: True)
                closest = min(abs(e.value - value) for e in entries)
                assert math.isclose(abs(nearest.value - value), closest, rel_tol=1e-12, abs_tol=1e-12)


def test_a_sentences_own_entries_are_found_beside_the_folders(fig):
    keys = tuple(fig.ok().index)
    pool = Pool(fig, keys).with_extra({"ms": [Entry(12345.6, "stated", slack=0.2)]})
    assert [e.name for e in pool.near("ms", 12345.75, 0.0)] == ["stated"]
    assert [e.name for e in pool.near("ms", 12345.9, 0.0)] == []
