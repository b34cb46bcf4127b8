"""Tests laid out like the code: every test module sits in ``tests/unit/<stage>/`` (starts no
process, quick: the inner loop), ``tests/integration/<stage>/`` (starts none, runs a stage whole:
marked slow by its folder), ``tests/examples/<stage>/`` (starts none, reads every committed example
folder: marked slow by its folder) or ``tests/processes/<stage>/`` (starts processes: marked slow by
its folder), never slow by hand, ``<stage>`` the package it is about, or ``<stage>/<room>`` where it is
about a room of the stage (a package of it: ``tests/unit/analysis/core/`` for ``ddpbench/analysis/core/``);
no test module imports another.

Each check runs on the real tests/ and on a planted tree that breaks it, so none can pass vacuously."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from ddpbench.testing import ROOT

TESTS = ROOT / "tests"
SPEEDS = ("unit", "integration", "examples", "processes")
#: the speeds marked slow, by their folder
SLOW = ("integration", "examples", "processes")
#: ddpbench's stages (its packages, read from the tree), and ``project`` (docs, layers, this layout)
STAGES = {path.parent.name for path in (ROOT / "ddpbench").glob("*/__init__.py")} | {"project"}
#: pytest's options for the planted trees, run in this process (pytest-benchmark's plugin would ask git
#: for the project's name in a subprocess)
INNER = ("-p", "no:cacheprovider", "-p", "no:benchmark", "--import-mode=importlib")


def is_test_module(path: Path) -> bool:
    """What pytest collects as a test module (its default ``python_files``)."""
    return path.suffix == ".py" and (path.name.startswith("test_") or path.stem.endswith("_test"))


def python_files(tests: Path) -> list[Path]:
    """Every Python file under ``tests``."""
    return sorted(p for p in tests.rglob("*.py") if "__pycache__" not in p.parts)


def is_room(stage: str, room: str) -> bool:
    """Whether ``ddpbench/<stage>/<room>/`` is a package: a room of the stage, which its tests may follow."""
    return (ROOT / "ddpbench" / stage / room / "__init__.py").is_file()


def misplaced(tests: Path) -> list[str]:
    """Test modules anywhere but tests/<speed>/<stage>/, tests/<speed>/<stage>/<room>/ or tests/benchmarks/."""
    found = []
    for path in python_files(tests):
        parts = path.relative_to(tests).parts
        placed = ((len(parts) in (3, 4) and parts[0] in SPEEDS and parts[1] in STAGES
                   and (len(parts) == 3 or is_room(parts[1], parts[2])))
                  or (len(parts) == 2 and parts[0] == "benchmarks"))
        if is_test_module(path) and not placed:
            found.append("/".join(parts))
    return found


def hand_set_slow(tests: Path) -> list[str]:
    """``pytest.mark.slow`` (or ``mark.slow``) written anywhere but tests/benchmarks: the folder sets it."""
    found = []
    for path in python_files(tests):
        if path.relative_to(tests).parts[0] == "benchmarks":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr == "slow" and (
                    isinstance(node.value, ast.Attribute) and node.value.attr == "mark"
                    or isinstance(node.value, ast.Name) and node.value.id == "mark"):
                found.append(f"{path.relative_to(tests)}:{node.lineno}")
    return found


def imports_of_test_modules(tests: Path) -> list[str]:
    """Imports of a test module (``test_*``, ``*_test``) or of a conftest by any module under tests/:
    what tests share lives in ddpbench.testing, fixtures in a conftest.py."""
    found = []
    for path in python_files(tests):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + ([alias.name for alias in node.names] if node.level else [])
            else:
                continue
            for name in names:
                last = name.rpartition(".")[2]
                if last.startswith("test_") or last.endswith("_test") or last == "conftest":
                    found.append(f"{path.relative_to(tests)}:{node.lineno} imports {name}")
    return found


def marks_off_their_folder(items, tests: Path) -> list[str]:
    """Collected tests whose slow mark is not their folder's: slow under tests/processes/,
    tests/examples/ and tests/integration/, not slow under tests/unit/."""
    found = []
    for item in items:
        parts = Path(item.path).resolve().relative_to(tests).parts
        slow = item.get_closest_marker("slow") is not None
        if parts[0] in SPEEDS and slow != (parts[0] in SLOW):
            found.append(item.nodeid)
    return found


def plant(tree: Path, files: dict[str, str]) -> Path:
    """A tree of test files under ``tree``: relative path -> text (dedented)."""
    for name, text in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(textwrap.dedent(text))
    return tree


def test_every_test_module_sits_in_a_speed_and_a_stage_folder(tmp_path):
    assert misplaced(TESTS) == []
    names = ["test_flat.py", "unit/nostage/test_x.py", "processes/report/deeper/test_y.py", "unit/report/test_fine.py",
             "processes/sweep/test_fine.py", "benchmarks/test_bench.py", "unit/report/helper.py",
             "unit/analysis/core/test_room.py", "unit/analysis/core/deeper/test_z.py", "unit/analysis/rooms/test_w.py"]
    planted = plant(tmp_path, dict.fromkeys(names, ""))
    assert misplaced(planted) == ["processes/report/deeper/test_y.py", "test_flat.py",
                                  "unit/analysis/core/deeper/test_z.py", "unit/analysis/rooms/test_w.py",
                                  "unit/nostage/test_x.py"]


def test_no_slow_mark_is_set_by_hand(tmp_path):
    assert hand_set_slow(TESTS) == []
    planted = plant(tmp_path, {
        "unit/report/test_a.py": """
            import pytest
            from pytest import mark
            pytestmark = pytest.mark.slow
            @mark.slow
            def test_a(): pass
            @pytest.mark.parametrize("x", [pytest.param(1, marks=pytest.mark.slow)])
            def test_b(x): pass
            """,
        "benchmarks/test_bench.py": "import pytest\npytestmark = pytest.mark.slow\n"})
    assert hand_set_slow(planted) == ["unit/report/test_a.py:4", "unit/report/test_a.py:5", "unit/report/test_a.py:7"]


def test_no_test_module_imports_another(tmp_path):
    assert imports_of_test_modules(TESTS) == []
    planted = plant(tmp_path, {"unit/report/test_a.py": """
        import test_b
        from test_sweep import helper
        from conftest import ROOT
        from . import test_c
        from ddpbench.testing import run_cli
        import ddpbench.testing.records
        """})
    assert imports_of_test_modules(planted) == [
        "unit/report/test_a.py:2 imports test_b", "unit/report/test_a.py:3 imports test_sweep",
        "unit/report/test_a.py:4 imports conftest", "unit/report/test_a.py:5 imports test_c"]


def test_each_test_is_slow_exactly_when_its_folder_starts_processes(request, pytester):
    """On the tests this run collected (the inner loop: none under integration/, examples/ or
    processes/), and on a planted tree run with this suite's conftest.py, where ``-m "not slow"`` must
    pick exactly the unit tests."""
    assert marks_off_their_folder(request.session.items, TESTS) == []
    pytester.makeconftest((TESTS / "conftest.py").read_text())
    for name in ("unit/report/test_u.py", "processes/report/test_p.py", "unit/sweep/test_v.py",
                 "examples/audit/test_e.py", "integration/cli/test_i.py"):
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("def test_it():\n    pass\n")
    fast = pytester.inline_run("-m", "not slow", *INNER)
    assert sorted(r.nodeid for r in fast.getreports("pytest_runtest_logreport") if r.when == "call") == [
        "unit/report/test_u.py::test_it", "unit/sweep/test_v.py::test_it"]
    items, _ = pytester.inline_genitems(*INNER)
    assert sorted(i.nodeid for i in items if i.get_closest_marker("slow")) == [
        "examples/audit/test_e.py::test_it", "integration/cli/test_i.py::test_it",
        "processes/report/test_p.py::test_it"]
    assert marks_off_their_folder(items, pytester.path) == []
    unit = next(i for i in items if i.nodeid.startswith("unit/report/"))
    unit.add_marker("slow")  # as a hand-set mark would
    assert marks_off_their_folder(items, pytester.path) == [unit.nodeid]


@pytest.mark.parametrize("speed", ["unit", "integration", "examples"])
def test_a_test_that_must_start_no_process_fails_if_it_does(pytester, speed):
    """tests/unit/, tests/integration/ and tests/examples/ (their conftest.py) refuse every way of
    starting a process, in a test's call or in a fixture it needs, and fail the test even where the code
    caught the refusal; ruff, the one program let through, leaves every other start refused."""
    pytester.makeconftest("")
    (pytester.path / speed).mkdir()
    (pytester.path / speed / "conftest.py").write_text((TESTS / speed / "conftest.py").read_text())
    plant(pytester.path, {f"{speed}/report/test_starts.py": """
        import multiprocessing, os, subprocess, sys
        import pytest

        @pytest.fixture(scope="module")
        def started():
            return subprocess.run([sys.executable, "-c", "pass"])

        def test_popen():
            subprocess.run([sys.executable, "-c", "pass"])

        def test_system_caught():
            try:
                os.system("true")
            except BaseException:
                pass

        def test_fork():
            if os.fork() == 0:
                os._exit(0)

        def test_multiprocessing():
            multiprocessing.get_context("spawn").Process(target=print).start()

        def test_in_a_fixture(started):
            pass

        def test_nothing_started():
            pass

        def test_ruff_alone():
            from ddpbench.testing.one_process import ruff
            assert ruff("--stdin-filename", "x.py", cwd=".", stdin="x = 1\\n").returncode == 0

        def test_ruff_then_popen():
            from ddpbench.testing.one_process import ruff
            ruff("--stdin-filename", "x.py", cwd=".", stdin="x = 1\\n")
            subprocess.run([sys.executable, "-c", "pass"])
        """})
    result = pytester.inline_run(*INNER)
    failed = {r.nodeid.rpartition("::")[2] for r in result.getreports("pytest_runtest_logreport") if r.failed}
    assert failed == {"test_popen", "test_system_caught", "test_fork", "test_multiprocessing", "test_in_a_fixture",
                      "test_ruff_then_popen"}
    passed = [r.nodeid for r in result.getreports("pytest_runtest_logreport") if r.when == "call" and r.passed]
    assert passed == [f"{speed}/report/test_starts.py::test_nothing_started",
                      f"{speed}/report/test_starts.py::test_ruff_alone"]


def test_every_run_takes_every_core_but_a_run_of_process_tests_alone(pytester, monkeypatch):
    """``-n auto`` (pyproject's addopts) gives xdist's count of cores to any run with unit tests (the
    tests that start processes then run on one worker alone: test_scheduling.py), and no worker (this
    process alone) to a run of tests/processes/ or tests/benchmarks/ only."""
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "7")  # xdist's own count, whatever this machine has
    pytester.makeconftest((TESTS / "conftest.py").read_text())
    for name in ("unit/report/test_u.py", "processes/report/test_p.py", "benchmarks/test_b.py"):
        plant(pytester.path, {name: "def test_it():\n    pass\n"})

    def workers(*args) -> int:
        config = pytester.parseconfig(*INNER, *args)
        return config.hook.pytest_xdist_auto_num_workers(config=config)

    assert workers("-m", "not slow") == workers("-m", "not slow and not gpu") == workers("unit") == 7
    assert workers("unit/report/test_u.py::test_it") == workers(str(pytester.path / "unit" / "report")) == 7
    assert workers() == workers("unit", "processes") == workers("-m", "slow or not slow") == 7
    assert workers("-m", "slow") == workers("processes") == workers("processes", "benchmarks") == 0
    assert workers("processes/report/test_p.py::test_it") == 0
