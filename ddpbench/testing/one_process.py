"""The promise of the folders whose tests start no process (tests/unit/, tests/integration/ and
tests/examples/), kept by their conftest.py, which imports these hooks: while such a test runs (its
setup with every fixture it needs, its call, its teardown), every way of starting one -- subprocess,
os.fork, os.system, os.posix_spawn, a multiprocessing start -- is refused and fails the test, naming
what it tried. Such a test belongs in tests/processes/<stage>/, or runs the command line in this
process (ddpbench.testing.run_main).

One program is let through, by name: ruff (:func:`ruff`), the linter the inner loop holds the code to
(tests/unit/project/test_lint.py). It has no Python API, runs none of the project's code and lints
every tree in a fraction of a second; every other start stays refused while it runs and after."""


import _posixsubprocess
import multiprocessing.process
import os
import subprocess

import pytest

#: (owner, attribute) of every way a test could start a process
STARTS = [(subprocess.Popen, "_execute_child"), (_posixsubprocess, "fork_exec"),
          (multiprocessing.process.BaseProcess, "start"),
          *((os, name) for name in ("fork", "forkpty", "system", "posix_spawn", "posix_spawnp", "spawnv", "spawnve",
                                    "spawnvp", "spawnvpe") if hasattr(os, name))]
#: what each test tried to start, until reported
TRIED = pytest.StashKey[list]()
#: each way of starting a process as it was before any test's refusal (this module is imported by a
#: conftest.py, before any test runs): what :func:`ruff` starts its one process through
UNREFUSED = [(owner, name, getattr(owner, name)) for owner, name in STARTS]


class StartsAProcess(BaseException):
    """A process start refused (a BaseException: no ``except Exception`` hides it)."""


def _refusal(what: str, tried: list):
    def refuse(*args, **kwargs):
        tried.append(what)
        raise StartsAProcess(f"{what}: a test under tests/unit/, tests/integration/ or tests/examples/ starts no "
                             "process (move it to tests/processes/, or run the command line in this process: "
                             "ddpbench.testing.run_main)")
    return refuse


def _refusing(item):
    """Runs one phase of ``item`` with every process start refused (a generator for the hook wrappers)."""
    tried = item.stash.setdefault(TRIED, [])
    saved = [(owner, name, getattr(owner, name)) for owner, name in STARTS]
    for owner, name, _ in saved:
        setattr(owner, name, _refusal(f"{getattr(owner, '__name__', owner)}.{name}", tried))
    try:
        return (yield)
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def ruff(*args: str, cwd, stdin: str | None = None) -> subprocess.CompletedProcess:
    """``ruff check --no-cache ARGS`` in ``cwd`` (``stdin``: the text of a file named by
    ``--stdin-filename``), by the ruff of this environment (the test extra): the one process a test
    that starts none may start. Skips the test where ruff is not installed."""
    linter = pytest.importorskip("ruff", reason="ruff is in the test extra: pip install -e '.[test]'")
    current = [(owner, name, getattr(owner, name)) for owner, name, _ in UNREFUSED]  # a test's refusals
    for owner, name, start in UNREFUSED:
        setattr(owner, name, start)
    try:
        return subprocess.run([linter.find_ruff_bin(), "check", "--no-cache", *args], cwd=cwd, input=stdin,
                              capture_output=True, text=True, timeout=120)
    finally:
        for owner, name, refused in current:
            setattr(owner, name, refused)


@pytest.fixture(autouse=True)
def _in_one_process(monkeypatch):
    """A sweep's command starts its fork server as it starts (ddpbench.cli.sweep), before it has read
    the experiment: a unit test of its bad input would start one; no unit test forks a rank. The
    report command forks a helper to draw beside it (ddpbench.report.workers): here the report
    process draws every figure itself (the helper's own tests start it: test_report_workers)."""
    monkeypatch.setenv("DDPBENCH_FORK_SERVER", "0")
    monkeypatch.setenv("DDPBENCH_REPORT_HELPER", "0")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    return (yield from _refusing(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    return (yield from _refusing(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    return (yield from _refusing(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A test that tried to start a process fails, also where the code it ran caught the refusal
    (reported once: by its call, or by the phase that tried)."""
    report = yield
    tried = item.stash.get(TRIED, [])
    if tried and report.passed and call.when != "setup":
        report.outcome = "failed"
        report.longrepr = f"tried to start a process in a test that starts none: {', '.join(dict.fromkeys(tried))}"
    if tried and (report.failed or call.when != "setup"):
        tried.clear()
    return report
