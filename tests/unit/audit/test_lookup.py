"""The figures a sentence may quote, found by value (:class:`ddpbench.audit.lookup.Pool`), are those
:func:`ddpbench.audit.pool.build` lists, in its order: on committed folders of many settings, for the
jobs sentences are about and for random sets of them, at every figure's own value and between; and on
folders made by hand, the figure a problem names as nearest a quote: the first of the nearest that near
lists, wherever the jobs' steps lie, and at a window's very edge."""

from __future__ import annotations

import math
import random
import warnings

import pandas as pd
import pytest

from ddpbench.audit import derive
from ddpbench.audit.checks import near_jobs
from ddpbench.audit.figures import Figures
from ddpbench.audit.lookup import Pool
from ddpbench.audit.pool import Entry, build
from ddpbench.experiment.spec import FIELDS
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


# -- on folders made by hand: which figure a quote is matched to, and the nearest one a problem names --------

def _folder(steps: dict, **columns) -> Figures:
    """Ok jobs alike in every setting, by key with their mean steps (ms), each of two launches at its step;
    ``columns``: a column's value by key over it (nan where a key is not given)."""
    rows = {}
    for key, step in steps.items():
        row = {c: "alike" for c in FIELDS}
        row.update(status="ok", world_size=2, bucket_cap_mb=50.0, step_ms=step, launches=2, global_batch=math.nan,
                   samples_per_s=math.nan, data_ms=math.nan, exposed_ms=math.nan, speedup_low=math.nan,
                   speedup_high=math.nan)
        row.update({c: by_key.get(key, math.nan) for c, by_key in columns.items()})
        rows[key] = row
    return Figures(pd.DataFrame.from_dict(rows, orient="index"), {k: [s, s] for k, s in steps.items()})


def _family(name: str):
    return lambda e: e.family == name


def _nearest_listed(fig, keys, unit, value, accept, stated=None):
    """The accepted figure near's order lists first among those nearest ``value``: build's, then what
    a sentence stating the estimate ``stated`` (ms, rounding) may say of it."""
    listed = list(build(fig, keys).get(unit, []))
    if stated is not None:
        listed += _stated(fig, keys, *stated).get(unit, [])
    return min((e for e in listed if accept(e)), key=lambda e: abs(e.value - value), default=None)


def _hint(pool, fig, keys, unit, value, accept, stated=None):
    """What nearest names and what it should: the same, the whole entry."""
    got = pool.nearest(unit, value, accept)
    want = _nearest_listed(fig, keys, unit, value, accept, stated)
    return (None if got is None else _same(got)), (None if want is None else _same(want))


def test_the_nearest_ratio_may_be_of_a_job_past_the_other_one():
    """A ratio just over 1 of j100 is nearest j50 / j100: below j100 itself, two places before where
    1.01 x its step would sort."""
    steps = {"j10": 10.0, "j50": 50.0, "j100": 100.0, "j1000": 1000.0}
    fig, keys = _folder(steps), tuple(steps)
    got, want = _hint(Pool(fig, keys), fig, keys, "x", 1.01, _family("step"))
    assert got == want and want[0] == "step of j50 / j100"


def test_the_nearest_saving_may_be_of_a_job_past_the_other_one():
    """What j100 saves of j200's step (50 %) is the saving nearest none: j200 lies past j100 itself,
    where a saving of nothing would sort."""
    steps = {"j10": 10.0, "j100": 100.0, "j200": 200.0, "j1000": 1000.0}
    fig, keys = _folder(steps), tuple(steps)
    got, want = _hint(Pool(fig, keys), fig, keys, "%", 0.0, _family("share"))
    assert got == want and want[0] == "what j100 saves of j200's step" and want[2] == 50.0


def test_the_saving_nearest_100_pct_or_more_is_the_largest():
    """No job saves all of another's step: a saving quoted at 100 % or past it is nearest the fastest
    job's of the slowest's (the sub-ms steps and the gap below the slowest keep it off its neighbours).
    A job's own step in % of itself (100 %) is a share too: the hint is asked of savings alone."""
    steps = {"tiny": 0.25, "small": 0.5, "mid": 25.0, "big": 30.0, "huge": 40.0}
    fig, keys = _folder(steps), tuple(steps)
    pool = Pool(fig, keys)
    for value in (100.0, 150.0):
        got, want = _hint(pool, fig, keys, "%", value, lambda e: "saves" in e.name)
        assert got == want and want[0] == "what tiny saves of huge's step"
        assert want[2] == pytest.approx(100 * (1 - 0.25 / 40))


def test_among_equally_near_own_figures_the_hint_names_the_first_job_the_sentence_names():
    fig = _folder({"k1": 100.0, "k2": 100.0}, buckets={"k1": 10, "k2": 12})
    for keys in (("k1", "k2"), ("k2", "k1")):
        got, want = _hint(Pool(fig, keys), fig, keys, "buckets", 11.0, lambda e: True)
        assert got == want and want[0] == f"bucket count of {keys[0]}"


def _caps(steps: dict, several: tuple) -> Figures:
    """Jobs of one setting but for the bucket cap (``several``: the same buckets recorded, caps
    25, 26, ... MB) beside jobs of other settings."""
    return _folder(steps, layout={k: (4_000_000, 1_000_000) for k in several},
                   bucket_cap_mb={k: 25.0 + i for i, k in enumerate(several)})


def test_a_sentence_about_one_setting_of_several_caps_finds_its_figures():
    """Its jobs are one set: nothing between two sets, and the set's own spread."""
    fig = _caps({"k1": 100.0, "k2": 110.0}, ("k1", "k2"))
    keys = ("k1", "k2")
    pool = Pool(fig, keys)
    for unit, value, width in (("%", 10.0, 0.05), ("x", 1.1, 0.05), ("%", 1000.0, 0.05)):
        assert [_same(e) for e in pool.near(unit, value, width)] == [
            _same(e) for e in build(fig, keys)[unit] if value - width <= e.value <= value + width]
        got, want = _hint(pool, fig, keys, unit, value, _family("change" if unit == "%" else "step"))
        assert got == want
    assert "spread of ('k1', 'k2')" in [e.name for e in pool.near("%", 10.0, 0.05)]


def test_what_lies_between_a_setting_of_several_caps_and_other_jobs_is_found_as_build_lists_it():
    """k1 and k2 (one setting, 101 ms pooled) against k3 (130 ms): a window with nothing between them,
    and the ratio nearest 1 (of k1 / k2: the set is never held against itself); against k3 and k4 of
    one step, the ratio of the set to either (the first near lists); a set of sub-ms steps."""
    steps = {"k1": 100.0, "k2": 102.0, "k3": 130.0}
    fig, keys = _caps(steps, ("k1", "k2")), tuple(steps)
    pool = Pool(fig, keys)
    assert [_same(e) for e in pool.near("%", 1000.0, 0.05)] == []
    got, want = _hint(pool, fig, keys, "x", 1.0, _family("step"))
    assert got == want and want[0] == "step of k1 / k2"
    for more, value in (({**steps, "k4": 130.0}, 101 / 130), ({"k1": 0.5, "k2": 0.52, "k3": 0.8}, 0.51 / 0.8)):
        fig, keys = _caps(more, ("k1", "k2")), tuple(more)
        got, want = _hint(Pool(fig, keys), fig, keys, "x", value, _family("step"))
        assert got == want and want[0] == "ratio of ['k1', 'k2'] vs ['k3']"


def test_the_hint_may_be_what_a_sentence_says_of_the_estimate_it_states():
    """An estimate of 4.8 ms over k1 (100 ms a step, 20 exposed) and k2 (50, 10): 9.6 % of k2's step,
    24 and 48 % of their exposed communication, which it leaves at 15.2 and 5.2 ms."""
    steps = {"k1": 100.0, "k2": 50.0}
    fig, keys = _folder(steps, exposed_ms={"k1": 20.0, "k2": 10.0}), tuple(steps)
    stating = Pool(fig, keys).stating([(4.8, 0.05)], [])
    for unit, value, accept, name in (("%", 9.0, _family("share"), "the estimate over k2's step"),
                                      ("%", 25.0, _family(""), "the estimate over k1's exposed communication"),
                                      ("ms", 15.0, _family(""), "k1's exposed communication less the estimate"),
                                      ("ms", 4.7, _family(""), "the estimate it states")):
        got, want = _hint(stating, fig, keys, unit, value, accept, stated=(4.8, 0.05))
        assert got == want and want[0] == name, (unit, value)
    assert stating.nearest("x", 15.2, lambda e: "estimate" in e.name) is None
    assert not [e for e in stating.near("x", 15.2, 1.0) if "estimate" in e.name]


def test_an_estimate_over_a_sub_ms_step_is_its_share():
    fig = _folder({"k1": 0.8}, exposed_ms={"k1": 0.4})
    names = [e.name for e in Pool(fig, ("k1",)).stating([(0.2, 0.05)], []).near("%", 25.0, 0.05)]
    assert "the estimate over k1's step" in names


def test_an_estimate_over_a_job_with_no_exposed_communication_says_nothing_of_it():
    """Nothing to take a share of, nothing left of it; and no warning of a division by zero."""
    fig = _folder({"k1": 100.0}, exposed_ms={"k1": 0.0})
    for e in (4.8, 0.0):
        stating = Pool(fig, ("k1",)).stating([(e, 0.05)], [])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            found = [f.name for unit in ("%", "ms") for value in (-e, e, 50.0)
                     for f in stating.near(unit, value, 0.05)]
            nearest = [stating.nearest(unit, value, lambda f: True) for unit in ("%", "ms") for value in (-e, 50.0)]
        assert not [name for name in found if "exposed communication" in name]
        assert not [f for f in nearest if "exposed communication" in f.name]


def test_the_hint_may_be_the_cap_a_fix_sets_and_is_none_where_nothing_is_of_the_unit():
    fig = _folder({"k1": 100.0})
    stating = Pool(fig, ("k1",)).stating([], [25.0])
    assert _same(stating.nearest("MB", 24.0, _family(""))) == _same(Entry(25.0, "the fix's bucket cap"))
    assert stating.nearest("h", 3.0, lambda e: True) is None


def _at_the_edges(fig, keys, units):
    """Every figure build lists of ``units``, with the windows it is an edge of or the whole of (a quote to
    every digit) that near misses it in: [f, f], [0, f] or [f, 0], and [f, f + 2w] for a w a billionth of f
    (a power of 2: f + w - w is f)."""
    pool, missed = Pool(fig, keys), []
    for unit in units:
        for e in build(fig, keys)[unit]:
            f = e.value
            w = math.ldexp(1.0, math.frexp(abs(f))[1] - 30)
            for value, width in ((f, 0.0), (f / 2, abs(f) / 2), (f + w, w)):
                if value - width == f or value + width == f:
                    if _same(e) not in [_same(g) for g in pool.near(unit, value, width)]:
                        missed.append((unit, e.name, value, width))
    return missed


@pytest.mark.parametrize("steps", [{"a": 0.02, "b": 0.3, "c": 7.0, "d": 100.0, "e": 3e4, "f": 1.5e5},
                                   {"slow": 16148.8, "fast": 0.04}])
def test_a_figure_at_the_very_edge_of_a_window_is_found_however_far_apart_the_steps(steps):
    """Steps up to 7.5e6 times each other: the ratio a figure is made of and the one a window's edge
    maps to round differently in their last bits, the more the further apart (what fast saves of
    slow's step, 99.99975 %, maps to a ratio 0.01 below theirs)."""
    fig = _folder(steps)
    assert _at_the_edges(fig, tuple(steps), ("%", "x", "ms")) == []


def test_a_difference_at_the_very_edge_of_a_window_is_found_between_steps_years_long():
    """Steps of 2**40 ms round to 2**-12 ms: a window's widening by a millionth of its ends is lost in
    them but where its far end is the wider."""
    steps = {"a": 2.0 ** 40 + 1, "b": 2.0 ** 40, "c": 0.1}
    fig = _folder(steps)
    assert _at_the_edges(fig, tuple(steps), ("ms",)) == []


def test_a_folder_priced_at_nothing_has_no_cost_gain_and_its_hint_is_found():
    """At a price of 0 an hour (--price-per-device-hour 0) every job costs nothing: what one saves of
    another's cost is 0 / 0, no figure; the rest are found as ever."""
    steps = {"k1": 100.0, "k2": 120.0}
    fig = _folder(steps, hourly={"k1": 0.0, "k2": 0.0}, global_batch={"k1": 32, "k2": 32})
    keys = tuple(steps)
    assert not [e for e in build(fig, keys)["%"] if "cost" in e.name]
    got, want = _hint(Pool(fig, keys), fig, keys, "%", 16.0, _family("change"))
    assert got == want and want[0] == "step gain k1 vs k2"


def _as_build_lists(fig, keys, units, width=0.0005) -> list:
    """Every figure build lists of ``units`` with the windows around it near lists otherwise than build."""
    pool, listed, differ = Pool(fig, keys), build(fig, keys), []
    for unit in units:
        for e in listed.get(unit, []):
            want = [_same(f) for f in listed[unit] if e.value - width <= f.value <= e.value + width]
            if [_same(f) for f in pool.near(unit, e.value, width)] != want:
                differ.append((unit, e.name))
    return differ


def test_a_figure_of_a_setting_of_several_caps_at_the_very_edge_of_a_window_is_found():
    """The set's own figures (its spread, pooled and mean step) and those between it and another job, quoted
    to every digit: found at the window's either edge."""
    steps = {"k1": 100.0, "k2": 102.0, "k3": 130.0}
    fig = _caps(steps, ("k1", "k2"))
    assert _at_the_edges(fig, tuple(steps), ("%", "x", "ms")) == []


def test_the_estimate_a_sentence_states_is_found_quoted_to_every_digit():
    stating = Pool(_folder({"k1": 100.0}), ("k1",)).stating([(4.8, 0.05)], [])
    for value, width in ((4.8, 0.0), (2.4, 2.4), (5.0, 0.2)):
        assert "the estimate it states" in [e.name for e in stating.near("ms", value, width)], (value, width)


def test_a_cost_per_sample_gain_at_prices_apart_is_found():
    """k1 at 2 an hour, k2 at 3: what one saves of the other's cost per sample is not what it saves of its
    time; each is found where build lists it."""
    steps = {"k1": 100.0, "k2": 120.0}
    fig = _folder(steps, hourly={"k1": 2.0, "k2": 3.0}, global_batch={"k1": 32, "k2": 64})
    keys = tuple(steps)
    assert [e for e in build(fig, keys)["%"] if "cost" in e.name]
    assert _as_build_lists(fig, keys, ("%",)) == []


def test_pooled_steps_of_sets_weigh_each_launch_once():
    """k1 and k2 (one setting) ran three launches each, k3 two: the set's pooled step is the mean of its
    six launches, and the figures between it and k3 are found where build lists them."""
    steps = {"k1": 100.0, "k2": 102.0, "k3": 130.0}
    fig, keys = _caps(steps, ("k1", "k2")), tuple(steps)
    fig.launch_ms.update(k1=[99.0, 100.0, 101.0], k2=[101.0, 102.0, 103.0])
    assert "ratio of ['k1', 'k2'] vs ['k3']" in [e.name for e in build(fig, keys)["x"]]
    assert _as_build_lists(fig, keys, ("%", "x")) == []


def test_a_sentence_about_no_ok_job_finds_nothing_of_the_folder():
    """A sentence naming only a job that failed (or none of the folder's) quotes none of its figures."""
    fig = _folder({"k1": 100.0, "k2": 120.0})
    for keys in (("gone",), ()):
        pool = Pool(fig, keys)
        assert list(pool.near("ms", 100.0, 50.0)) == [] and list(pool.near("x", 1.2, 1.0)) == []
        assert pool.nearest("ms", 100.0, lambda e: True) is None


def test_the_hint_of_an_own_figure_looks_past_jobs_the_sentence_is_not_about():
    """A quote of 101.6 ms about k1 (100 ms) and k3 (104 ms): k2's 101.5 ms lies between, and the hint is
    k1's step, the nearer of the sentence's."""
    steps = {"k1": 100.0, "k2": 101.5, "k3": 104.0}
    fig, keys = _folder(steps), ("k1", "k3")
    got, want = _hint(Pool(fig, keys), fig, keys, "ms", 101.6, lambda e: e.name.startswith("step_ms of"))
    assert got == want and want[0] == "step_ms of k1"


def test_among_equal_ratios_the_hint_names_the_first_pair_build_lists():
    """20 / 10 and 40 / 20 are both 2: the hint names the first of them near lists."""
    steps = {"j10": 10.0, "j20": 20.0, "j40": 40.0}
    fig, keys = _folder(steps), tuple(steps)
    got, want = _hint(Pool(fig, keys), fig, keys, "x", 2.0, _family("step"))
    assert got == want


def test_a_difference_quoted_as_nothing_is_nearest_the_first_pair_build_lists():
    """Of two jobs, 100 and 120 ms, no difference is 0 ms: k1 - k2 and k2 - k1 are both 20 ms from it, and
    the hint names k1 - k2, the first build lists."""
    steps = {"k1": 100.0, "k2": 120.0}
    fig, keys = _folder(steps), tuple(steps)
    got, want = _hint(Pool(fig, keys), fig, keys, "ms", 0.0, lambda e: e.name.startswith("step difference"))
    assert got == want and want[0] == "step difference k1 - k2"


def test_among_many_jobs_of_equal_steps_the_hint_names_the_first_pair_build_lists():
    """Twenty jobs of 100 ms and twenty of 200 ms, one of each in turn: every 200 / 100 is 2, and the hint
    names the first of them build lists."""
    steps = {f"k{i}": 100.0 * (1 + i % 2) for i in range(40)}
    fig, keys = _folder(steps), tuple(steps)
    for value in (2.0, 0.5):
        got, want = _hint(Pool(fig, keys), fig, keys, "x", value, _family("step"))
        assert got == want, value


@pytest.mark.parametrize("steps", [{"fast": 0.001, "slow": 7e7}, {"fast": 0.0123, "slow": 4.5e8}])
def test_a_change_of_nearly_100_pct_at_the_very_edge_of_a_window_is_found(steps):
    """Steps 1e10 and more times each other: fast's change and gain against slow (-99.9999999986 % and
    back) are quoted to every digit, and the ratio a window's edge maps to (1.4e-11) is off theirs in its
    fifth digit."""
    fig = _folder(steps)
    missed = _at_the_edges(fig, tuple(steps), ("%",))
    assert [m for m in missed if m[1].startswith(("step change", "step gain"))] == []
