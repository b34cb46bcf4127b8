"""Following an experiment from the command line to the report, call by call (issue 97's "crosses each package
once in order, without climbing back"): a tiny sweep runs in this process (``python -m ddpbench sweep``, its
launches handed back by :class:`ddpbench.testing.launchers.FakeLauncher`, the report written) under a call
profiler (:func:`sys.setprofile`).

Two figures come of it:

* **calls up**: a function of one stage calling a function of a stage above it (the stages in pyproject.toml's
  order, the command line on top). import-linter forbids a stage to import one above it, so such a call can only
  go through something handed down: a function passed as an argument or a value's property. Each place that
  does is declared in :data:`HANDED_DOWN` with why; any other fails here.
* **returns to a stage left** (held where it stands, :data:`MOST_RETURNS`): each module of ddpbench in the order
  the flow first calls a function of it, and each first entry into a stage above the one entered just before,
  where that stage was entered and left already. It counts a command calling the stages below it in turn (the
  command's own next helper after ``launch`` returned is one), so it is no climb back, but it grows when the
  flow bounces between stages more, and a change that does is caught.
"""

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

#: returns to a stage left, at most, as measured on this tree (24 before the one check and the one room of the
#: command line, issue 97; PYTHONPATH=TREE python tests/integration/project/test_flow.py prints a tree's)
MOST_RETURNS = 23
#: the only calls up a stage the flow makes, each through what the stage above handed down: (the calling
#: module, the stage called) and why
HANDED_DOWN = {
    ("ddpbench.show.tables", "report"): "a table's cells are made by the functions its section declares them with",
    ("ddpbench.results.strings", "analysis"): "python_strings is a decorator: it runs the analysis function it "
                                              "wraps",
    ("ddpbench.workloads.data", "experiment"): "the job's spec is handed down; its global_batch is a property",
}
#: stages left out: the test support (the fake launcher), and the leaves every stage calls (errors, the process
#: owner, the garbage collector's pause) which a flow enters and leaves at every level
LEFT_OUT = {"testing", "__main__", "errors", "owner", "collector"}


def stage_order() -> dict[str, int]:
    """Each stage's place in the first contract's layers (0: the top)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    return {name.strip(): place for place, layer in enumerate(config["layers"]) for name in layer.split("|")}


def stage_of(module: str) -> str | None:
    """The stage of a module of ddpbench (``ddpbench.sweep.runner``: ``sweep``), or None outside ddpbench."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "ddpbench" else None


def profiled(argv: list[str]) -> tuple[list[str], set[tuple[str, str]]]:
    """What ``python -m ddpbench ARGV`` calls: the modules of ddpbench whose functions it calls, in the order it
    first calls each (module bodies run by an import are no call of the flow's), and each (calling module,
    called module) pair of its calls from one function of ddpbench to another."""
    package = str(ROOT / "ddpbench") + os.sep
    seen: dict[str, None] = {}
    pairs: set[tuple[str, str]] = set()

    def profile(frame, event, arg):
        if event == "call":
            code = frame.f_code
            if code.co_filename.startswith(package) and code.co_name != "<module>":
                module = frame.f_globals.get("__name__", "")
                seen.setdefault(module, None)
                caller = frame.f_back  # the nearest function of ddpbench's below it (torch, pandas between)
                while caller is not None and not caller.f_code.co_filename.startswith(package):
                    caller = caller.f_back
                if caller is not None:
                    pairs.add((caller.f_globals.get("__name__", ""), module))

    sys.setprofile(profile)
    try:
        done = run_main(*argv)
    finally:
        sys.setprofile(None)
    assert done.returncode == 0, done.stderr
    return list(seen), pairs


def calls_up(pairs: set[tuple[str, str]], order: dict[str, int]) -> set[tuple[str, str]]:
    """(calling module, stage called) of each call into a stage above the caller's."""
    found = set()
    for caller, callee in pairs:
        below, above = stage_of(caller), stage_of(callee)
        if {below, above} & LEFT_OUT or below not in order or above not in order:
            continue
        if order[above] < order[below]:
            found.add((caller, above))
    return found


def returns(modules: list[str], order: dict[str, int]) -> list[tuple[str, str]]:
    """(from, to) of each first entry into a stage above the one entered just before, that was left already."""
    stages = [m.split(".")[1] for m in modules if m.count(".") >= 1 and m.split(".")[1] not in LEFT_OUT]
    stages = [s for s in stages if s in order]
    found, visited = [], set()
    for before, after in zip([None, *stages], stages):
        if before is not None and after != before and order[after] < order[before] and after in visited:
            found.append((before, after))
        visited.add(after)
    return found


def measure(folder: Path) -> tuple[list[str], list[tuple[str, str]], set[tuple[str, str]]]:
    """A tiny sweep from the command line to its report in ``folder``: its modules in first-call order, the
    returns to a stage left, and the calls up a stage."""
    from ddpbench.launch.options import LauncherOptions
    from ddpbench.testing.launchers import ENV, FakeLauncher

    experiment = write_experiment(folder / "tiny.toml", TINY)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LauncherOptions, "make_launcher", lambda self: FakeLauncher())
        patch.setattr("ddpbench.sweep.runner.collect_env", lambda *args, **kwargs: dict(ENV))
        patch.setenv("DDPBENCH_FORK_SERVER", "0")
        patch.setenv("DDPBENCH_REPORT_HELPER", "0")
        modules, pairs = profiled(["sweep", str(experiment), "--out", str(folder / "out")])
    order = stage_order()
    return modules, returns(modules, order), calls_up(pairs, order)


def test_the_flow_calls_up_only_through_what_was_handed_down_and_bounces_no_more(tmp_path):
    modules, back, up = measure(tmp_path)
    assert (tmp_path / "out" / "index.html").is_file()  # the flow reached the report
    # (a subset: where an earlier test in this process built the workload already, its spec is not read again)
    assert up <= set(HANDED_DOWN), f"undeclared: {up - set(HANDED_DOWN)}"
    assert up, "the profiler saw no call up at all: the cells' functions at least are called up"
    assert len(back) <= MOST_RETURNS, back


def test_a_return_to_a_stage_left_is_counted_once_where_it_happens():
    order = {"cli": 0, "sweep": 1, "launch": 2, "results": 3}
    modules = ["ddpbench.cli.sweep", "ddpbench.sweep.runner", "ddpbench.launch.base", "ddpbench.sweep.plan",
               "ddpbench.results.store", "ddpbench.errors", "ddpbench.results.schema", "ddpbench.cli.report"]
    assert returns(modules, order) == [("launch", "sweep"), ("results", "cli")]


def test_a_call_up_is_a_callee_above_its_caller_and_the_leaves_are_left_out():
    order = {"cli": 0, "sweep": 1, "launch": 2, "errors": 3}
    pairs = {("ddpbench.cli.sweep", "ddpbench.sweep.runner"), ("ddpbench.launch.base", "ddpbench.sweep.plan"),
             ("ddpbench.launch.base", "ddpbench.launch.options"), ("ddpbench.errors", "ddpbench.cli.sweep"),
             ("ddpbench.sweep.runner", "torch.nn"), ("ddpbench.launch.base", "ddpbench.cli.sweep")}
    assert calls_up(pairs, order) == {("ddpbench.launch.base", "sweep"), ("ddpbench.launch.base", "cli")}


if __name__ == "__main__":  # another tree's: PYTHONPATH=TREE python tests/integration/project/test_flow.py
    with tempfile.TemporaryDirectory() as scratch:
        entered, back, up = measure(Path(scratch))
    print(f"{len(entered)} modules, {len(back)} returns to a stage left, {len(up)} calls up a stage")
    for pair in back:
        print("  return: " + " -> ".join(pair))
    for caller, stage in sorted(up):
        print(f"  call up: {caller} -> {stage}: {HANDED_DOWN.get((caller, stage), 'undeclared')}")
