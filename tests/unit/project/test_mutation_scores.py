"""The stored mutation scores hold (benchmarks/mutation.py, a benchmark: the suite never runs mutmut).

Every module of benchmarks/mutation.toml's groups has a stored score from the run its row names (each run's command,
date and commit under its heading in benchmarks/mutation.md, which tests/examples/project/test_prose_figures.py
holds to one command and one commit a run); it is at
its group's target, or listed below its target with a floor it does not fall under and why. A
module's score may not drop silently: a run that stores less fails here until the floor is lowered in a commit of
its own. Every equivalent mutant is listed with why, names a mutant the store knows, and is not one a test kills.
"""

from __future__ import annotations

import ast
import fnmatch
import json
import re

import pytest

from ddpbench.testing import ROOT
from ddpbench.testing.scripts import load_benchmark

mutation = load_benchmark("mutation")
STORE = json.loads((ROOT / "benchmarks" / "mutation.json").read_text())
STORED = STORE["modules"]
SETTINGS = mutation.settings()


@pytest.mark.parametrize("module", mutation.units(SETTINGS))
def test_each_mutated_module_has_a_stored_score_at_its_target_or_floor(module):
    unmeasured = SETTINGS.get("unmeasured", {})
    if module in unmeasured:  # a debt said aloud: the stored run did not reach it
        assert module not in STORED and unmeasured[module].strip(), module
        return
    assert module in STORED, f"{module}: no stored score; run python benchmarks/mutation.py --module {module}"
    row = STORED[module]
    assert row["group"] == mutation.units(SETTINGS)[module]
    run = STORE["runs"][row["run"] - 1]  # the run that measured it, and said so
    assert f"ddpbench at {row['commit']}" in " ".join(run) or "resumed:" in " ".join(run), (module, run)
    assert re.search(rf"groups measured: .*\b{re.escape(row['group'])}\b", " ".join(run)), (module, run)
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
        groups = [g for g in SETTINGS["groups"].values() if mutation.in_group(key, g)]
        assert len(groups) == 1, f"{key}: a mutant of no measured module or part, or of several"
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
    row = mutation.scores(found, {"ddpbench.analysis.core.stats.x_a__mutmut_4": "why"}, "statistics",
                          {"modules": ["ddpbench/analysis/core/stats.py"]})["ddpbench/analysis/core/stats.py"]
    assert (row["mutants"], row["killed"], row["timeout"], row["equivalent"], row["survived"], row["no_tests"]) \
        == (6, 2, 1, 1, 3, 1)
    assert row["score"] == pytest.approx(100 * 3 / 6, abs=0.05)
    assert row["survivors"] == [f"ddpbench.analysis.core.stats.x_a__mutmut_{n}" for n in (2, 3, 5)]


def _functions(module: str) -> list[str]:
    """Every function and method ``module`` defines, as mutmut names their mutants' functions (``f``, ``Class.f``)."""
    tree = ast.parse((ROOT / module).read_text())
    out = [node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for cls in (node for node in tree.body if isinstance(node, ast.ClassDef)):
        out += [f"{cls.name}.{node.name}" for node in cls.body
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return out


def test_a_module_measured_in_parts_has_each_function_in_one_part():
    """A module is measured whole by one group, or in parts by groups that name its functions: each function in
    exactly one part (a function in none would never be measured, one in two counted twice)."""
    whole, parts = [], {}
    for name, group in SETTINGS["groups"].items():
        for module in group["modules"]:
            if group.get("functions"):
                parts.setdefault(module, []).append(name)
            else:
                whole.append(module)
    assert len(whole) == len(set(whole)) and not set(whole) & set(parts)
    for module, groups in parts.items():
        for function in _functions(module):
            named = [g for g in groups
                     if any(fnmatch.fnmatchcase(function, p) for p in SETTINGS["groups"][g]["functions"])]
            assert len(named) == 1, f"{module}: {function} is in the parts {named}"
        for g in groups:  # and each pattern names a function there (mutmut refuses a pattern that matches nothing)
            for pattern in SETTINGS["groups"][g]["functions"]:
                assert any(fnmatch.fnmatchcase(f, pattern) for f in _functions(module)), f"{g}: {pattern}"


def test_a_part_measures_its_functions_mutants_and_asks_mutmut_for_them_alone():
    figures = "ddpbench.audit.figures.{}".format
    group = {"modules": ["ddpbench/audit/figures.py"], "functions": ["derive", "_add_*", "Figures.*"]}
    assert mutation.function_of(figures("x_derive__mutmut_3")) == "derive"
    assert mutation.function_of(figures("x__add_costs__mutmut_12")) == "_add_costs"
    assert mutation.function_of(figures("xǁFiguresǁok_keys__mutmut_1")) == "Figures.ok_keys"
    found = {figures("x_derive__mutmut_1"): "killed", figures("x__add_costs__mutmut_2"): "survived",
             figures("xǁFiguresǁok__mutmut_1"): "killed", figures("x_derive_more__mutmut_1"): "survived",
             figures("x__compute__mutmut_1"): "survived", "ddpbench.audit.records.x_read__mutmut_1": "survived"}
    assert [k for k in found if mutation.in_group(k, group)] == list(found)[:3]
    row = mutation.scores(found, {}, "figures-part", group)
    assert list(row) == ["ddpbench/audit/figures.py (figures-part)"]
    assert row["ddpbench/audit/figures.py (figures-part)"]["mutants"] == 3
    assert row["ddpbench/audit/figures.py (figures-part)"]["survivors"] == [figures("x__add_costs__mutmut_2")]
    # before mutmut made them: patterns; a whole module: nothing named, mutmut runs what it has not checked
    assert mutation.selected(group, {}) == [figures("x_derive__mutmut_*"), figures("x__add_*__mutmut_*"),
                                            figures("xǁFiguresǁ*__mutmut_*")]
    assert mutation.selected({"modules": ["ddpbench/audit/figures.py"]}, found) == []
    assert fnmatch.fnmatchcase(figures("x__add_costs__mutmut_2"), mutation.selected(group, {})[1])
    # resumed: only what it has left (mutmut runs again whatever it is named, checked or not)
    left = {**found, figures("x_derive__mutmut_1"): "not checked", figures("xǁFiguresǁok__mutmut_2"): "not checked"}
    assert mutation.selected(group, {k: s for k, s in left.items() if mutation.in_group(k, group)}) == [
        figures("x_derive__mutmut_1"), figures("xǁFiguresǁok__mutmut_2")]


def test_a_part_s_run_asks_mutmut_for_its_functions_and_scores_them_alone(tmp_path, monkeypatch):
    """On the path the benchmark takes: a part's copy holds every mutant of its module (mutmut makes them all); the
    part's run hands mutmut its functions' names, and is finished once they are checked, whatever the others'."""
    pytest.importorskip("mutmut", reason="mutmut is not installed (the mutation extra)")
    meta = tmp_path / "part" / "mutants" / "ddpbench" / "audit" / "figures.py.meta"
    meta.parent.mkdir(parents=True)
    name = "ddpbench.audit.figures.{}".format
    mine, other = name("x_derive__mutmut_1"), name("x__compute__mutmut_1")
    meta.write_text(json.dumps({"exit_code_by_key": {mine: None, other: None}}))
    (tmp_path / f"part.{mutation.COMMIT}").write_text("ed930cd\n")
    asked = []

    def mutmut(args, cwd, **kwargs):
        asked.append(args[4:])
        meta.write_text(json.dumps({"exit_code_by_key": {mine: 1, other: None}}))

    monkeypatch.setattr(mutation.ended, "run", mutmut)
    group = {"modules": ["ddpbench/audit/figures.py"], "functions": ["derive"], "tests": []}
    scored, _, _ = mutation.run_group("part", group, {"equivalent": {}}, 2, tmp_path)
    assert asked == [[mine, "--max-children", "2"]]  # its mutant not checked, by name: not the other part's
    assert scored == {"ddpbench/audit/figures.py (part)": {**scored["ddpbench/audit/figures.py (part)"],
                                                           "mutants": 1, "killed": 1, "survived": 0}}
    # resumed with one checked and one not: mutmut is named the one not checked alone
    second = name("x_derive__mutmut_2")
    meta.write_text(json.dumps({"exit_code_by_key": {mine: 1, second: None, other: None}}))
    asked.clear()
    mutation.run_group("part", group, {"equivalent": {}}, 2, tmp_path)
    assert asked[0] == [second, "--max-children", "2"]


@pytest.fixture(autouse=True)
def at_its_own_commit(monkeypatch):
    """A resumed copy stays at its commit: bringing one to HEAD asks git (a process; on a real repository in
    tests/processes/project/test_mutation_resume.py)."""
    monkeypatch.setattr(mutation, "brought_up", lambda root, into, commit: commit)


def test_a_resumed_group_goes_on_in_its_copy_at_its_own_commit(tmp_path, monkeypatch):
    """``--resume``: a group staged before is used as it stands (its checked mutants kept by mutmut), at the commit
    it was staged from or the one ``brought_up`` moves it to (on a real repository:
    tests/processes/project/test_mutation_resume.py), never restaged from HEAD."""
    asked = []
    monkeypatch.setattr(mutation, "brought_up", lambda root, into, commit: asked.append((into, commit)) or commit)
    (tmp_path / "compare").mkdir()
    (tmp_path / f"compare.{mutation.COMMIT}").write_text("ed930cd\n")
    assert mutation.staged(ROOT, tmp_path / "compare", {"modules": [], "tests": []}) == (tmp_path / "compare",
                                                                                         "ed930cd")
    assert list((tmp_path / "compare").iterdir()) == []  # nothing archived into it
    assert asked == [(tmp_path / "compare", "ed930cd")]


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
    (tmp_path / f"compare.{mutation.ALONE}").write_text(name(2) + "\n")  # its survivor already run alone
    monkeypatch.setattr(mutation.ended, "run", lambda *a, **k: pytest.fail(f"mutmut started again: {a}"))
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

    monkeypatch.setattr(mutation.ended, "run", mutmut)
    scored, _, _ = mutation.run_group("compare", {"modules": ["ddpbench/analysis/history/compare.py"], "tests": []},
                                      {"equivalent": {}}, 1, tmp_path)
    assert started == [tmp_path / "compare"]
    assert scored["ddpbench/analysis/history/compare.py"]["killed"] == 1


def test_a_group_s_survivors_are_run_again_alone_and_a_kill_then_counts(tmp_path, monkeypatch):
    """The group's run recorded as surviving mutants that a run of each alone kills: at a group's end (or on
    --resume of a group finished before), each survivor is run again by name, and only those."""
    pytest.importorskip("mutmut", reason="mutmut is not installed (the mutation extra)")
    meta = tmp_path / "compare" / "mutants" / "ddpbench" / "analysis" / "history" / "compare.py.meta"
    meta.parent.mkdir(parents=True)
    name = "ddpbench.analysis.history.compare.x_f__mutmut_{}".format
    meta.write_text(json.dumps({"exit_code_by_key": {name(1): None, name(2): None, name(3): None}}))
    (tmp_path / f"compare.{mutation.COMMIT}").write_text("ed930cd\n")
    asked = []

    def mutmut(args, cwd, **kwargs):
        asked.append(args[4:])  # after python -m mutmut run
        if args[4:5] == ["--max-children"]:  # the group's run: 1 killed, 2 and 3 recorded as surviving
            meta.write_text(json.dumps({"exit_code_by_key": {name(1): 1, name(2): 0, name(3): 0}}))
        else:  # alone, 2 is killed and 3 survives
            meta.write_text(json.dumps({"exit_code_by_key": {name(1): 1, name(2): 1, name(3): 0}}))

    monkeypatch.setattr(mutation.ended, "run", mutmut)
    scored, _, _ = mutation.run_group("compare", {"modules": ["ddpbench/analysis/history/compare.py"], "tests": []},
                                      {"equivalent": {}}, 2, tmp_path)
    assert asked == [["--max-children", "2"], [name(2), name(3)]]
    # one listed as equivalent is not run again (an equivalent survives whatever the run)
    (tmp_path / f"compare.{mutation.ALONE}").unlink()
    meta.write_text(json.dumps({"exit_code_by_key": {name(1): 1, name(2): 0, name(3): 0}}))
    asked.clear()
    mutation.run_group("compare", {"modules": ["ddpbench/analysis/history/compare.py"], "tests": []},
                       {"equivalent": {name(2): "why"}}, 2, tmp_path)
    assert asked == [[name(3)]]
    meta.write_text(json.dumps({"exit_code_by_key": {name(1): 1, name(2): 1, name(3): 0}}))
    asked.clear()
    row = scored["ddpbench/analysis/history/compare.py"]
    assert (row["killed"], row["survived"]) == (2, 1)
    asked.clear()  # resumed, the group is read as it stands
    mutation.run_group("compare", {"modules": ["ddpbench/analysis/history/compare.py"], "tests": []},
                       {"equivalent": {}}, 2, tmp_path)
    assert asked == []
    # a group finished by a run that did not run its survivors alone (or was stopped while it did): only those
    (tmp_path / f"compare.{mutation.ALONE}").unlink()
    meta.write_text(json.dumps({"exit_code_by_key": {name(1): 1, name(2): 0, name(3): 0}}))
    mutation.run_group("compare", {"modules": ["ddpbench/analysis/history/compare.py"], "tests": []},
                       {"equivalent": {}}, 2, tmp_path)
    assert asked == [[name(2), name(3)]]


def stored_table(tmp_path, runs, modules):
    (tmp_path / "mutation.json").write_text(json.dumps({"runs": runs, "modules": modules}))
    return tmp_path / "mutation.md"


def test_a_run_keeps_the_rows_of_the_groups_it_did_not_measure_with_their_own_run(tmp_path):
    """A session measures the groups it has time for: the others' rows stay as the run that measured them stored
    them, each with that run's lines; a run no kept row names is dropped, and the runs are renumbered in order."""
    stats, compare, ab = ("ddpbench/analysis/core/stats.py", "ddpbench/analysis/history/compare.py",
                          "ddpbench/analysis/history/ab.py")
    row = {"mutants": 2, "killed": 2, "equivalent": 0, "survived": 0, "no_tests": 0, "timeout": 0, "score": 100.0,
           "commit": "8b0c378", "group_seconds": 9}
    out = stored_table(tmp_path, [["run one"], ["run two"], ["run three"]],
                       {stats: {**row, "group": "statistics", "run": 1}, compare: {**row, "group": "compare", "run": 3},
                        ab: {**row, "group": "ab-race", "run": 2}})
    runs, rows = mutation.kept(out, ["ab-race"], SETTINGS)
    assert runs == [["run one"], ["run three"]]
    assert {m: r["run"] for m, r in rows.items()} == {stats: 1, compare: 2}
    every, stored = mutation.joined(runs, rows, ["run four"], {ab: {**row, "group": "ab-race"}}, SETTINGS)
    assert every == [["run one"], ["run three"], ["run four"]]
    assert [(m, r["run"]) for m, r in stored.items()] == [(stats, 1), (compare, 2), (ab, 3)]  # declared order
    page = mutation.markdown(stored, SETTINGS, every)
    assert page.index("### Run 1\n\nrun one") < page.index("### Run 3\n\nrun four")
    assert ("| `ddpbench/analysis/history/ab.py` | 2 | 2 | 0 | 0 (0, 0) | 100.0 % | 90 % | ab-race, run 3, 8b0c378, "
            "9 s |") in page.splitlines()


def test_a_table_of_one_run_as_stored_before_is_read_as_run_one_and_a_stray_row_is_not_kept(tmp_path):
    """The table stored before runs were kept (``run``: one run's lines, rows without ``run``); a row whose module
    is no longer declared, or is declared in another group now, is not kept."""
    stats = "ddpbench/analysis/core/stats.py"
    row = {"mutants": 2, "killed": 2, "equivalent": 0, "survived": 0}
    (tmp_path / "mutation.json").write_text(json.dumps({"run": ["the run"], "modules": {
        stats: {**row, "group": "statistics"}, "ddpbench/gone.py": {**row, "group": "statistics"},
        "ddpbench/analysis/history/gates.py": {**row, "group": "statistics"}}}))
    assert mutation.kept(tmp_path / "mutation.md", ["compare"], SETTINGS) == ([["the run"]], {stats: {**row,
                                                                                 "group": "statistics", "run": 1}})
    assert mutation.kept(tmp_path / "none.md", ["compare"], SETTINGS) == ([], {})
    assert mutation.kept(None, ["compare"], SETTINGS) == ([], {})


F = """def f(x):
    return x + 1 if x > 2 else x * 3
"""
G = """def g(items):
    return [i for i in items if i != "a"]
"""
H = """class Box:
    def size(self, n):
        return n - 4
"""


def _made(tmp_path, name: str, code: str) -> int:
    """How many mutants mutmut makes of ``code`` as a module of its own."""
    from mutmut.mutation.file_mutation import mutate_file_contents

    return len(mutate_file_contents(name, code).mutant_names)


def test_count_gives_each_module_s_and_each_part_s_mutants_as_mutmut_makes_them_now(tmp_path):
    pytest.importorskip("mutmut")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(F + "\n\n" + G + "\n\n" + H)
    (tmp_path / "pkg" / "n.py").write_text(G)
    table = {"groups": {"whole": {"modules": ["pkg/n.py"]},
                        "one": {"modules": ["pkg/m.py"], "functions": ["f", "Box.*"]},
                        "two": {"modules": ["pkg/m.py"], "functions": ["g"]}}}
    f, g, h = (_made(tmp_path, "x.py", code) for code in (F, G, H))
    assert min(f, g, h) > 0
    assert mutation.counted(table, tmp_path) == {"pkg/n.py": g, "pkg/m.py (one)": f + h, "pkg/m.py (two)": g}
    stored = {"pkg/n.py": {"mutants": g, "commit": "abc1234"}, "pkg/m.py (one)": {"mutants": f, "commit": "def5678"}}
    assert mutation.count_lines(table, stored, tmp_path) == [
        f"pkg/n.py: {g} mutants now; stored {g} at abc1234",
        f"pkg/m.py (one): {f + h} mutants now; stored {f} at def5678, differs",
        f"pkg/m.py (two): {g} mutants now; not stored"]
