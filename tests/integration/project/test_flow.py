"""Following an experiment from the command line to the report, call by call (issue 97's "crosses each package
once in order, without climbing back"): a tiny sweep runs in this process (``python -m ddpbench sweep``, its
launches handed back by :class:`ddpbench.testing.launchers.FakeLauncher`, the report written) under a call
profiler (:func:`sys.setprofile`), which records each module of ddpbench in the order the flow first calls a
function of it. A module entered in a stage above the one entered just before, where that stage was entered
and left already, is the flow climbing back to a stage it left (the stages in pyproject.toml's order, the
command line on top). The count is held where it stands: a change that makes the flow bounce more fails here."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from ddpbench.testing import ROOT, TINY, run_main, write_experiment

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

#: what the flow may climb back at most, as measured on this tree (24 before the one check and the one room of
#: the command line, issue 97; PYTHONPATH=TREE python tests/integration/project/test_flow.py prints a tree's)
MOST_CLIMBS = 23
#: stages left out: the test support (the fake launcher), and the leaves every stage calls (errors, the process
#: owner, the garbage collector's pause) which a flow enters and leaves at every level
LEFT_OUT = {"testing", "__main__", "errors", "owner", "collector"}


def stage_order() -> dict[str, int]:
    """Each stage's place in the first contract's layers (0: the top)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    return {name.strip(): place for place, layer in enumerate(config["layers"]) for name in layer.split("|")}


def first_entered(argv: list[str]) -> list[str]:
    """The modules of ddpbench whose functions ``python -m ddpbench ARGV`` calls, in the order it first calls
    each (module bodies run by an import are no call of the flow's)."""
    package = str(ROOT / "ddpbench") + os.sep
    seen: dict[str, None] = {}

    def profile(frame, event, arg):
        if event == "call":
            code = frame.f_code
            if code.co_filename.startswith(package) and code.co_name != "<module>":
                module = frame.f_globals.get("__name__", "")
                if module not in seen:
                    seen[module] = None

    sys.setprofile(profile)
    try:
        done = run_main(*argv)
    finally:
        sys.setprofile(None)
    assert done.returncode == 0, done.stderr
    return list(seen)


def climbs(modules: list[str], order: dict[str, int]) -> list[tuple[str, str]]:
    """(from, to) of each first entry into a stage above the one entered just before, that was left already."""
    stages = [m.split(".")[1] for m in modules if m.count(".") >= 1 and m.split(".")[1] not in LEFT_OUT]
    stages = [s for s in stages if s in order]
    found, visited = [], set()
    for before, after in zip([None, *stages], stages):
        if before is not None and after != before and order[after] < order[before] and after in visited:
            found.append((before, after))
        visited.add(after)
    return found


def measure(folder: Path) -> tuple[list[str], list[tuple[str, str]]]:
    """A tiny sweep from the command line to its report in ``folder``, its modules in first-call order and
    the climbs back."""
    from ddpbench.launch.options import LauncherOptions
    from ddpbench.testing.launchers import ENV, FakeLauncher

    experiment = write_experiment(folder / "tiny.toml", TINY)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LauncherOptions, "make_launcher", lambda self: FakeLauncher())
        patch.setattr("ddpbench.sweep.runner.collect_env", lambda *args, **kwargs: dict(ENV))
        patch.setenv("DDPBENCH_FORK_SERVER", "0")
        patch.setenv("DDPBENCH_REPORT_HELPER", "0")
        modules = first_entered(["sweep", str(experiment), "--out", str(folder / "out")])
    return modules, climbs(modules, stage_order())


def test_the_flow_climbs_back_no_more_than_it_does(tmp_path):
    modules, found = measure(tmp_path)
    assert (tmp_path / "out" / "index.html").is_file()  # the flow reached the report
    assert len(found) <= MOST_CLIMBS, found


def test_a_climb_back_is_counted_once_where_it_happens():
    order = {"cli": 0, "sweep": 1, "launch": 2, "results": 3}
    modules = ["ddpbench.cli.sweep", "ddpbench.sweep.runner", "ddpbench.launch.base", "ddpbench.sweep.plan",
               "ddpbench.results.store", "ddpbench.errors", "ddpbench.results.schema", "ddpbench.cli.report"]
    assert climbs(modules, order) == [("launch", "sweep"), ("results", "cli")]


if __name__ == "__main__":  # the figure for another tree: PYTHONPATH=TREE python tests/integration/project/test_flow.py
    with tempfile.TemporaryDirectory() as scratch:
        entered, back = measure(Path(scratch))
    print(f"{len(entered)} modules, {len(back)} climbs back")
    for pair in back:
        print("  " + " -> ".join(pair))
