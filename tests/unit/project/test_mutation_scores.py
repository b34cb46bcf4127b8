"""The stored mutation scores hold (benchmarks/mutation.py, a benchmark: the suite never runs mutmut).

Every module of benchmarks/mutation.toml's groups has a stored score from the one stored run (its command, date and
commit head benchmarks/mutation.md, which tests/examples/project/test_prose_figures.py holds to one run); it is at
its group's target, or listed below its target with a floor it does not fall under and why. A
module's score may not drop silently: a run that stores less fails here until the floor is lowered in a commit of
its own. Every equivalent mutant is listed with why, names a mutant the store knows, and is not one a test kills.
"""

from __future__ import annotations

import json

import pytest

from ddpbench.testing import ROOT
from ddpbench.testing.scripts import load_benchmark

mutation = load_benchmark("mutation")
STORED = json.loads((ROOT / "benchmarks" / "mutation.json").read_text())["modules"]
SETTINGS = mutation.settings()


@pytest.mark.parametrize("module", mutation.modules(SETTINGS))
def test_each_mutated_module_has_a_stored_score_at_its_target_or_floor(module):
    unmeasured = SETTINGS.get("unmeasured", {})
    if module in unmeasured:  # a debt said aloud: the stored run did not reach it
        assert module not in STORED and unmeasured[module].strip(), module
        return
    assert module in STORED, f"{module}: no stored score; run python benchmarks/mutation.py --module {module}"
    row = STORED[module]
    assert row["group"] == mutation.modules(SETTINGS)[module]
    assert row["mutants"] == row["killed"] + row["equivalent"] + row["survived"] > 0
    assert row["survived"] == len(row["survivors"])
    short = SETTINGS["below_target"].get(module)
    if short is None:
        assert row["score"] >= mutation.target(module, SETTINGS), f"{module}: {row['score']} % below its target"
    else:
        assert short["why"].strip() and short["floor"] < mutation.target(module, SETTINGS)
        assert row["score"] >= short["floor"], f"{module}: {row['score']} % below its floor {short['floor']} %"


def test_each_group_names_modules_and_tests_that_exist():
    for name, group in SETTINGS["groups"].items():
        assert group["modules"] and group["tests"] and 0 < group["target"] <= 100, name
        for path in group["modules"] + group["tests"]:
            assert (ROOT / path).exists(), f"{name}: {path}"
        assert not any("processes" in t for t in group["tests"]), f"{name}: a process test runs unmutated code"


def test_a_module_at_its_target_is_not_listed_below_it():
    """A floor is a debt: once a module reaches its target, its entry goes (else it could fall back unseen)."""
    for module in SETTINGS["below_target"]:
        assert module in STORED, module
        assert STORED[module]["score"] < mutation.target(module, SETTINGS), f"{module} reached its target"


def test_every_equivalent_mutant_says_why_and_still_survives():
    known = {key for row in STORED.values() for key in row["survivors"]}
    for key, why in SETTINGS["equivalent"].items():
        assert why.strip(), key
        assert mutation.module_of(key) in mutation.modules(SETTINGS), f"{key}: not a mutant of a mutated module"
        assert key not in known, f"{key}: listed as equivalent, stored as surviving"
        assert not any(key in row["killed_equivalents"] for row in STORED.values()), f"{key}: a test kills it"


def test_the_score_counts_equivalents_as_killed_and_untested_or_timed_out_as_surviving():
    """The score's arithmetic on planted statuses: what the stored table means."""
    found = {"ddpbench.analysis.core.stats.x_a__mutmut_1": "killed",
             "ddpbench.analysis.core.stats.x_a__mutmut_2": "timeout",
             "ddpbench.analysis.core.stats.x_a__mutmut_3": "survived",
             "ddpbench.analysis.core.stats.x_a__mutmut_4": "survived",
             "ddpbench.analysis.core.stats.x_a__mutmut_5": "no tests",
             "ddpbench.analysis.core.stats.xǁBandǁb__mutmut_1": "killed"}
    row = mutation.scores(found, {"ddpbench.analysis.core.stats.x_a__mutmut_4": "why"},
                          ["ddpbench/analysis/core/stats.py"])["ddpbench/analysis/core/stats.py"]
    assert (row["mutants"], row["killed"], row["timeout"], row["equivalent"], row["survived"], row["no_tests"]) \
        == (6, 2, 1, 1, 3, 1)
    assert row["score"] == pytest.approx(100 * 3 / 6, abs=0.05)
    assert row["survivors"] == [f"ddpbench.analysis.core.stats.x_a__mutmut_{n}" for n in (2, 3, 5)]


def test_a_resumed_group_goes_on_in_its_copy_at_its_own_commit(tmp_path):
    """``--resume``: a group staged before is used as it stands (its checked mutants kept by mutmut), at the commit
    it was staged from, never restaged from HEAD."""
    (tmp_path / "compare").mkdir()
    (tmp_path / f"compare.{mutation.COMMIT}").write_text("ed930cd\n")
    assert mutation.staged(ROOT, tmp_path / "compare", {"modules": [], "tests": []}) == (tmp_path / "compare",
                                                                                         "ed930cd")
    assert list((tmp_path / "compare").iterdir()) == []  # nothing archived into it


def test_a_group_a_resumed_run_finished_is_read_not_run_again_and_keeps_its_time(tmp_path, monkeypatch):
    """``--resume`` over a group whose every mutant is checked: its scores are read from mutmut's results, mutmut is
    not started again, and the time stored is the time it took (a rerun's start-up is not added to it)."""
    pytest.importorskip("mutmut", reason="mutmut is not installed (the mutation extra)")
    meta = tmp_path / "compare" / "mutants" / "ddpbench" / "analysis" / "history" / "compare.py.meta"
    meta.parent.mkdir(parents=True)
    name = "ddpbench.analysis.history.compare.x_f__mutmut_{}".format
    meta.write_text(json.dumps({"exit_code_by_key": {name(1): 1, name(2): 0}}))
    (tmp_path / f"compare.{mutation.COMMIT}").write_text("ed930cd\n")
    (tmp_path / f"compare.{mutation.SECONDS}").write_text("1876\n")
    monkeypatch.setattr(mutation.subprocess, "run", lambda *a, **k: pytest.fail(f"mutmut started again: {a}"))
    group = {"modules": ["ddpbench/analysis/history/compare.py"], "tests": []}
    scored, wall, commit = mutation.run_group("compare", group, {"equivalent": {}}, 1, tmp_path)
    assert (wall, commit) == (1876.0, "ed930cd")
    assert scored["ddpbench/analysis/history/compare.py"]["mutants"] == 2
    assert scored["ddpbench/analysis/history/compare.py"]["killed"] == 1
    assert (tmp_path / f"compare.{mutation.SECONDS}").read_text() == "1876\n"


def test_a_group_left_part_way_is_run_on(tmp_path, monkeypatch):
    """A group with an unchecked mutant is handed to mutmut again, from its own copy."""
    pytest.importorskip("mutmut", reason="mutmut is not installed (the mutation extra)")
    meta = tmp_path / "compare" / "mutants" / "ddpbench" / "analysis" / "history" / "compare.py.meta"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"exit_code_by_key": {"ddpbench.analysis.history.compare.x_f__mutmut_1": None}}))
    (tmp_path / f"compare.{mutation.COMMIT}").write_text("ed930cd\n")
    started = []

    def mutmut(args, cwd, **kwargs):
        started.append(cwd)
        meta.write_text(json.dumps({"exit_code_by_key": {"ddpbench.analysis.history.compare.x_f__mutmut_1": 1}}))
        return mutation.subprocess.CompletedProcess(args, 0, "", "")

    monkeypatch.setattr(mutation.subprocess, "run", mutmut)
    scored, _, _ = mutation.run_group("compare", {"modules": ["ddpbench/analysis/history/compare.py"], "tests": []},
                                      {"equivalent": {}}, 1, tmp_path)
    assert started == [tmp_path / "compare"]
    assert scored["ddpbench/analysis/history/compare.py"]["killed"] == 1
