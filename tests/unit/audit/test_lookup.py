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


def _stated(fig, keys, e: float, rounding: float) -> dict:
    """What a sentence stating the estimate ``e`` may say of it, listed (checks.with_estimates' definition)."""
    out = {"ms": [Entry(e, "the estimate it states")], "%": []}
    for k in keys:
        r = fig.rec(k)
        if r.get("step_ms", 0) > 0:
            out["%"].append(Entry(100 * e / r["step_ms"], f"the estimate over {k}'s step", family="share",
                                  slack=100 * rounding / r["step_ms"]))
        if r.get("exposed_ms", 0) > 0:
            out["ms"].append(Entry(r["exposed_ms"] - e, f"{k}'s exposed communication less the estimate",
                                   slack=rounding))
            out["%"].append(Entry(100 * e / r["exposed_ms"], f"the estimate over {k}'s exposed communication",
                                  slack=100 * rounding / r["exposed_ms"]))
    return out


def test_what_a_sentence_states_is_found_beside_the_folders_figures(fig):
    keys = tuple(fig.ok().index)
    pool = Pool(fig, keys)
    stating = pool.stating([(4.8, 0.05)], [25.0])
    for unit, entries in _stated(fig, keys, 4.8, 0.05).items():
        for value in [e.value for e in entries] + [e.value + 3 * e.slack for e in entries]:
            want = [_same(e) for e in entries if value - 0.05 - e.slack <= e.value <= value + 0.05 + e.slack]
            got = [_same(e) for e in stating.near(unit, value, 0.05)][len(list(pool.near(unit, value, 0.05))):]
            assert got == want, (unit, value)
    assert [e.name for e in stating.near("MB", 25.0, 0.0)][-1] == "the fix's bucket cap"
    assert not [e for e in pool.near("MB", 25.0, 0.0) if e.name == "the fix's bucket cap"]
