"""``python -m ddpbench compare``'s words on two written folders (issue 82): each job's change as a speedup
("A 1.20x as fast as B", a column of B's speedups on the console), a minimum detectable slowdown past a
doubling said as the launches a side that would detect what the call or gate asks about, never as a
figure of thousands of percent, and counts with their nouns."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ddpbench.analysis.core import power
from ddpbench.analysis.core.speedup_words import times
from ddpbench.experiment.spec import spec_from_dict
from ddpbench.testing import run_main
from ddpbench.testing.comparing import read_csv
from ddpbench.testing.records import ENV, ResultsFolder, job, result_for

#: each launch's level (ms): ws=1 two launches a side 15 % apart (too few to see anything under a doubling),
#: ws=2 three launches a side 1 % apart; B 20 % slower in both
A = {1: [10.0, 11.5], 2: [10.0, 10.1, 10.05]}
B = {1: [12.0, 13.8], 2: [12.0, 12.1, 12.05]}
#: what result_for adds to a launch's level: its measured steps take level + 0.1 * (step % 3), 8 of them, and
#: rank 1's 0.05 ms more (the slowest rank's steps are the job's)
MEAN_SHIFT, MEDIAN_SHIFT, RANK_SHIFT = 0.1 * np.mean([s % 3 for s in range(8)]), 0.1, 0.05


def _folder(path, launches):
    folder = ResultsFolder(path, env=ENV)
    for world, levels in launches.items():
        spec = job(world_size=world, repeats=len(levels))
        for repeat, level in enumerate(levels):
            folder.launch(spec_from_dict(spec), repeat, result=result_for(spec, level, repeat=repeat))
    return path


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare-words")
    a, b = _folder(root / "a", A), _folder(root / "b", B)
    done = run_main("compare", a, b, "--fail-on", "median:5%", "--out", root / "out")
    faster = run_main("compare", b, a, "--out", root / "back")
    return done, root / "out", faster, root / "back"


def _launch_means(levels, shift=MEAN_SHIFT):
    """Each launch's mean (or median) step of a job at these levels, as its slowest rank took it."""
    world = 2 if len(levels) == 3 else 1
    return [level + shift + RANK_SHIFT * (world - 1) for level in levels]


def test_a_detectable_slowdown_past_a_doubling_is_the_launches_a_side_that_would_see_it(compared):
    done, out, _, _ = compared
    assert done.returncode == 1, done.stderr  # ws=2 is slower than the 5 % gate beyond noise
    # the figure the launches give, far past a doubling, is not printed anywhere: words say what would see it
    means_a, means_b = _launch_means(A[1]), _launch_means(B[1])
    mde = power.minimum_detectable(means_a, means_b)["mde"]
    assert mde > 200
    need = power.launches_for(power.spread_of([means_a, means_b]), 5.0)
    assert 2 < need <= power.MAX_LAUNCHES
    words = f"needs {need} launches a side to detect +5.0 %"
    page = (out / "index.html").read_text(encoding="utf-8")
    for text in (done.stdout, page):
        assert f"{mde:+.1f} %" not in text and words in text
    assert "past +100.0 %" in done.stdout  # the console's narrow cell; the line under the table says the words
    assert f"mlp-s ws=1 repeats=2: its launches catch even +100.0 % less than 90 % of the time; {words}" in done.stdout
    # the gate's own: twice its threshold, at the medians' spread
    medians_a, medians_b = _launch_means(A[1], MEDIAN_SHIFT), _launch_means(B[1], MEDIAN_SHIFT)
    gate_need = power.launches_for(power.spread_of([medians_a, medians_b]), 10.0, 5.0)
    gate_words = f"detectable at 90 %: needs {gate_need} launches a side to detect +10.0 %"
    assert gate_words in done.stdout and gate_words in page
    gate_mde = power.minimum_detectable(medians_a, medians_b, 5.0)["mde"]
    assert f"{gate_mde:+.1f} %" not in done.stdout
    rows = {r["world_size"]: r for r in read_csv(out / "compare.csv")}
    assert rows["1"]["mde_needs"] == words and float(rows["1"]["mde_pct"]) == pytest.approx(mde)
    assert rows["1"]["gate_mde"] == f"median:5%: needs {gate_need} launches a side to detect +10.0 %"
    # three launches a side 1 % apart see a few percent: the figure stands
    three = power.minimum_detectable(_launch_means(A[2]), _launch_means(B[2]))["mde"]
    assert three < 10 and f"{three:+.1f} %" in done.stdout and rows["2"]["mde_needs"] == ""


def test_each_change_is_said_as_a_speedup_from_the_faster_side(compared):
    done, out, faster, back = compared
    for world in (1, 2):
        ratio = np.mean(_launch_means(B[world])) / np.mean(_launch_means(A[world]))  # B's time over A's
        rows = {r["world_size"]: r for r in read_csv(out / "compare.csv")}
        assert float(rows[str(world)]["speedup"]) == pytest.approx(1 / ratio, rel=1e-6)
        assert rows[str(world)]["change"].startswith(f"A {times(ratio)} as fast as B (95 % CI ")
        assert rows[str(world)]["change"] in (out / "index.html").read_text(encoding="utf-8")
        assert re.search(rf"{re.escape(times(1 / ratio))} \(\S+x to \S+x\)", done.stdout)  # B's speedup, below 1
        swapped = {r["world_size"]: r for r in read_csv(back / "compare.csv")}[str(world)]
        assert swapped["change"].startswith(f"B {times(ratio)} as fast as A (95 % CI ")
        assert float(swapped["speedup"]) == pytest.approx(ratio, rel=1e-6)
    assert faster.returncode == 0, faster.stderr
    for text in (done.stdout, (out / "index.html").read_text(encoding="utf-8")):
        assert "throughput change" not in text and "mean B/A" not in text


def test_counts_take_their_nouns(compared):
    done, out, _, _ = compared
    assert "gate failed (median:5%): 1 job slower than a threshold beyond noise" in done.stdout
    assert "job(s)" not in done.stdout
    assert "2 jobs compared" in (out / "index.html").read_text(encoding="utf-8")


def test_an_inconclusive_gate_s_line_counts_the_gates_past_a_doubling_not_their_figures(tmp_path):
    a, b = _folder(tmp_path / "a", {1: A[1]}), _folder(tmp_path / "b", {1: B[1]})
    done = run_main("compare", a, b, "--fail-on", "median:5%", "--out", tmp_path / "out")
    assert done.returncode == 0, done.stderr  # inconclusive: not failed
    medians_a, medians_b = _launch_means(A[1], MEDIAN_SHIFT), _launch_means(B[1], MEDIAN_SHIFT)
    gate_mde = power.minimum_detectable(medians_a, medians_b, 5.0)["mde"]
    assert gate_mde > 100 and f"{gate_mde:+.1f} %" not in done.stdout
    line = next(line for line in done.stdout.splitlines() if line.startswith("gate inconclusive"))
    assert line == ("gate inconclusive (median:5%): no job is slower beyond noise, but 1 job could not show it; "
                    "1 gate on 1 job could not detect even +100 % of A's step (each line says how many launches a "
                    "side would detect what it guards against)")
