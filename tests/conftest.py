"""The suite's fixtures and hooks. What tests share besides fixtures (running the command line, tiny
experiments, survivor scans, results-folder writers, planted faults) is in :mod:`ddpbench.testing`.

Tests are laid out like the code (tests/unit/project/test_test_layout.py holds them to it):
``tests/unit/<stage>/`` starts no process and is quick; ``tests/integration/<stage>/`` starts none
either but runs a stage whole (a report page drawn, a command in this process: half a second or more a test);
``tests/examples/<stage>/`` starts none but re-derives figures from every committed example folder;
``tests/processes/<stage>/`` starts processes. The last three are marked slow here, by their folder --
so ``pytest -m "not slow"`` (the inner loop) runs exactly the quick tests that start none."""

import json
import os
from pathlib import Path

import pytest
from hypothesis import settings

from ddpbench.experiment.load import parse_experiment
from ddpbench.experiment.machine import Machine
from ddpbench.testing import ROOT, run_main
from ddpbench.testing.fuzzing import INNER_PROFILE  # registers the profile, for --hypothesis-profile too
from ddpbench.testing.scheduling import SHARED, SharedLaunchAgain, Starts, quickest_files_first

pytest_plugins = ("pytester",)  # tests/processes/benchplugin/test_pytest_plugin.py runs pytest on a user's suite

TESTS = Path(__file__).resolve().parent
#: the tests that start processes (ranks, the command line, a Slurm cluster, ...): all slow
PROCESSES = TESTS / "processes"
#: the benchmarks, smoke-run once each in the plain run (below): they start processes too
BENCHMARKS = TESTS / "benchmarks"
#: the tests that read every committed example folder (reports/examples/): no process, but slow
EXAMPLES = TESTS / "examples"
#: the tests that run a stage whole in this process (a report page, a command): no process, but slow
INTEGRATION = TESTS / "integration"
#: the folders whose every test is slow (no test sets the mark by hand)
SLOW_FOLDERS = (PROCESSES, EXAMPLES, INTEGRATION)


#: mutmut's record of each test's seconds, in the folder it runs a mutant's tests from (benchmarks/mutation.py)
MUTMUT_STATS = Path("mutmut-stats.json")


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by the marks
def pytest_collection_modifyitems(config, items):
    """Every test under :data:`SLOW_FOLDERS` is slow, by its folder; no test sets the mark by hand. Under mutmut
    (benchmarks/mutation.py), a mutant's tests run by file, the quickest files first by the seconds mutmut
    recorded for their tests (:func:`ddpbench.testing.scheduling.quickest_files_first`)."""
    for item in items:
        if any(folder in Path(item.path).parents for folder in SLOW_FOLDERS):
            item.add_marker("slow")
    if os.environ.get("MUTANT_UNDER_TEST") and MUTMUT_STATS.is_file():
        items[:] = quickest_files_first(items, json.loads(MUTMUT_STATS.read_text()).get("duration_by_test", {}))


def _inner_loop(config) -> bool:
    """Whether this run deselects the slow tests (``-m "not slow"``): the inner loop."""
    return " ".join((config.getoption("markexpr") or "").split()) == "not slow"


def pytest_ignore_collect(collection_path, config):
    """A run that deselects the slow tests (``-m "not slow"``, the inner loop) does not collect the
    folders that are slow as a whole (:data:`SLOW_FOLDERS`): every xdist worker would import and
    assertion-rewrite each of their modules only to deselect every test in it."""
    if _inner_loop(config) and collection_path in SLOW_FOLDERS:
        return True
    return None


def _starts_processes(path: Path) -> bool:
    """Whether ``path`` (a test file, or a folder of them) is under tests/processes/ or tests/benchmarks/:
    tests that start processes, which :mod:`ddpbench.testing.scheduling` runs alone, beside the unit tests
    or one at a time beside them."""
    return any(folder == path or folder in path.parents for folder in (PROCESSES, BENCHMARKS))


def _runs_alone_only(config) -> bool:
    """Whether this run holds only tests that start processes: ``-m slow``, or every path it names."""
    if " ".join((config.getoption("markexpr") or "").split()) == "slow":
        return True
    here = Path(config.invocation_params.dir)
    return bool(config.args) and all(_starts_processes((here / arg.split("::")[0]).resolve()) for arg in config.args)


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (pyproject's addopts): a worker a core, the tests that start processes run alone
    on one of them after the others (:func:`pytest_xdist_make_scheduler`); a run of those tests
    only runs in this one process, as without xdist."""
    return 0 if _runs_alone_only(config) else None


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` (pyproject's addopts), with the files of tests that start processes held
    back until the unit tests have run, then run on one worker alone -- but for those that mostly wait,
    which run one at a time beside the unit tests (:class:`ddpbench.testing.scheduling.UnitsThenAlone`)."""
    if config.getvalue("dist") == "loadfile":
        from ddpbench.testing.scheduling import UnitsThenAlone

        return UnitsThenAlone(config, log)
    return None


#: each start of a shared launch (a sweep, a cluster, a browser) in this pytest process
STARTS = Starts()


@pytest.hookimpl(tryfirst=True)
def pytest_fixture_setup(fixturedef, request):
    """A shared launch (:data:`ddpbench.testing.scheduling.SHARED`) started a second time in the scope it is
    started once in fails the test that asked for it, before it starts (:class:`ddpbench.testing.scheduling.Starts`)."""
    where = Path(getattr(getattr(fixturedef.func, "__code__", None), "co_filename", "/")).resolve()
    if ROOT not in where.parents or (where.relative_to(ROOT).as_posix(), fixturedef.argname) not in SHARED:
        return None
    test_file = "" if request.scope == "session" else Path(request.path).resolve().relative_to(ROOT).as_posix()
    try:
        STARTS.start(where.relative_to(ROOT).as_posix(), fixturedef.argname, test_file, getattr(request, "param", None))
    except SharedLaunchAgain as again:  # an error of the fixture's, as pytest records one it raised
        fixturedef.cached_result = (None, fixturedef.cache_key(request), (again, again.__traceback__))
        raise
    return None


#: what pytest-xdist puts in a worker's environment (pytest-benchmark, in a user's pytest run that a test
#: starts, would read it and time nothing)
XDIST_ENVIRONMENT = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


#: the measure-once cache (ddpbench.sweep.measured_once): one folder for the whole run, never the user's. The first
#: sweep that needs a figure (the matmul peak of a thread count, a collectives curve) measures it and every
#: later sweep of the run reuses it, as a user's second sweep does (0.4 s of a tiny sweep's 3 s, over about a
#: hundred sweeps). A test that needs a cache of its own asks for ``fresh_measure_once_cache``: the figure is
#: then measured by its own sweep.
CACHE_ENV = "DDPBENCH_CACHE_DIR"
os.environ[CACHE_ENV] = "off"  # what runs outside a test (collection, session fixtures) keeps nothing


@pytest.fixture(autouse=True)
def _measure_once_cache(tmp_path_factory, monkeypatch):
    """The run's measure-once cache (its processes inherit it): a folder beside every xdist worker's
    temporary folder, shared by them (an entry is written to a new file and renamed into place)."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "measured-once"
    shared.mkdir(exist_ok=True)
    monkeypatch.setenv(CACHE_ENV, str(shared))


@pytest.fixture
def fresh_measure_once_cache(tmp_path_factory, monkeypatch):
    """A measure-once cache of this test's own, empty: its sweeps measure every figure themselves."""
    folder = tmp_path_factory.mktemp("measured-once")
    monkeypatch.setenv(CACHE_ENV, str(folder))
    return folder


@pytest.fixture(autouse=True)
def _processes_start_as_without_xdist(request, monkeypatch):
    """A test that starts processes runs alone (``ddpbench.testing.scheduling``) and starts them as it
    would without xdist: with none of xdist's environment."""
    if _starts_processes(Path(request.node.path)):
        for name in XDIST_ENVIRONMENT:
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
def cpu_machine():
    """A 2-core machine without GPUs, whatever this one is."""
    return Machine(cores=2, cuda_devices=0)


#: the modules ddpbench's optional extras install that it looks for before a job or a launcher can run
#: (the framework strategies' ``requires``, TensorFlow's two, Ray Train's)
EXTRA_MODULES = ("accelerate", "lightning", "tensorflow", "tf_keras", "ray", "ray.train")


@pytest.fixture
def extras_found(monkeypatch):
    """Every optional extra's module found, installed or not: for tests of what an experiment or a
    command line expands to and refuses, which run on a plain ``.[test]`` install too (nothing here
    imports the modules; the tests that run them are under tests/processes/)."""
    import importlib.machinery
    import importlib.util

    real = importlib.util.find_spec

    def find_spec(name, *args):
        try:
            found = real(name, *args)
        except ModuleNotFoundError:  # a submodule's parent that is not installed (ray.train without ray)
            found = None
        return found if found is not None or name not in EXTRA_MODULES else importlib.machinery.ModuleSpec(name, None)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


@pytest.fixture(scope="module")
def one_intra_op_thread():
    """One intra-op thread for a module's tests, as a rank of a CPU sweep has: the suite shares its cores
    (``pytestmark = pytest.mark.usefixtures("one_intra_op_thread")``)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def runner_probe(tmp_path_factory, monkeypatch):
    """The command line's runner replaced by a probe that says a command line reached it, run in a work
    folder of the files a user might pass (:func:`ddpbench.testing.cli.runner_probed`): the folder."""
    from ddpbench.testing.cli import make_workdir, runner_probed

    workdir = make_workdir(tmp_path_factory.mktemp("fuzz"))
    with runner_probed(monkeypatch, workdir):
        yield workdir


@pytest.fixture
def no_gpu_here(monkeypatch):
    """The command line, run in this process, sees no GPU on this machine, whatever it has: a test
    of what a CPU-only machine answers passes on a GPU machine too ("auto" picks the CPU and gloo)."""
    monkeypatch.setattr("ddpbench.experiment.machine.cuda_device_count", lambda: 0)


@pytest.fixture
def experiment(cpu_machine):
    """Three world sizes (1, 2, 4) of mlp-xs, two launches each: a sweep for the fake launcher
    (ddpbench.testing.launchers)."""
    data = {"defaults": {"model_size": "xs", "steps": 3, "warmup_steps": 1, "repeats": 2, "threads_per_rank": 1},
            "grid": {"world_size": [1, 2, 4]}}
    return parse_experiment(data, "exp.toml", default_name="exp", machine=cpu_machine)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(output path, document, stdout, stderr) of one ``export-benchmark`` of reports/examples/quick-cpu."""
    out = tmp_path_factory.mktemp("export") / "quick.json"
    done = run_main("export-benchmark", ROOT / "reports" / "examples" / "quick-cpu", "--out", out)
    assert done.returncode == 0, done.stderr
    return out, json.loads(out.read_text()), done.stdout, done.stderr


@pytest.fixture(scope="session")
def traced_spawn_sweep(tmp_path_factory):
    """(experiment file, folder) of one traced sweep (``ddpbench.testing.sweeps.TRACED``) with the spawn
    launcher, and its report: run once, then only read, by tests/processes/rank/test_trace.py and as the
    reference of tests/processes/launch/test_slurm.py's sweeps."""
    from ddpbench.testing import run_main, write_experiment
    from ddpbench.testing.sweeps import TRACED

    tmp = tmp_path_factory.mktemp("traced-spawn")
    exp = write_experiment(tmp / "traced.toml", TRACED)
    proc = run_main("sweep", exp, "--out", tmp / "out")
    assert proc.returncode == 0, proc.stderr
    return exp, tmp / "out"


@pytest.fixture
def rendezvous(monkeypatch):
    """The environment a launcher gives a rank of one, its store hosted here (as the spawn launcher's)."""
    from torch.distributed import TCPStore

    store = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    for name, value in {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(store.port), "RANK": "0", "WORLD_SIZE": "1",
                        "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1", "TORCHELASTIC_USE_AGENT_STORE": "True"}.items():
        monkeypatch.setenv(name, value)
    yield store
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


@pytest.fixture
def shapes(rendezvous):
    """The shapes of a script's start and end (ddpbench.rank.script.shapes) patched in, in a rank of one."""
    from ddpbench.rank.script.shapes import Shapes

    patched = Shapes()
    patched.install()
    yield patched
    patched.uninstall()


# ---------------------------------------------------------------------------------------------
# tests/benchmarks: timed when asked for, smoke-run (once each, untimed) in the plain test run
# ---------------------------------------------------------------------------------------------

#: pytest-benchmark options that ask for timings
TIMING_OPTIONS = ("benchmark_enable", "benchmark_only", "benchmark_autosave", "benchmark_save", "benchmark_json",
                  "benchmark_compare", "benchmark_compare_fail", "benchmark_histogram")


def _names_benchmarks(arg: str) -> bool:
    path = Path(arg.split("::")[0])
    try:
        path = (Path(os.getcwd()) / path).resolve()
    except OSError:
        return False
    return path == BENCHMARKS or BENCHMARKS in path.parents


def pytest_configure(config):
    """``pytest`` (the whole suite) runs each benchmark once, untimed, so they cannot rot;
    ``pytest tests/benchmarks`` or any pytest-benchmark option that asks for timings times them.
    The inner loop draws a fifth of each hypothesis test's examples (the profile ``inner``,
    :mod:`ddpbench.testing.fuzzing`), the whole suite every one; ``--hypothesis-profile`` picks another."""
    if _inner_loop(config) and not config.getoption("hypothesis_profile", None):
        settings.load_profile(INNER_PROFILE)
    asked = any(config.getoption(option, None) for option in TIMING_OPTIONS)
    if not asked and not any(_names_benchmarks(arg) for arg in config.invocation_params.args):
        config.option.benchmark_disable = True


def pytest_sessionstart(session):
    """matplotlib's font cache is built here, before any test runs: its first build (a fresh machine,
    or a new matplotlib) asks fontconfig's ``fc-list`` for the fonts, a process start that
    tests/unit/ refuses. Each xdist worker starts its session too; the cache is on disk after the first."""
    import matplotlib.font_manager  # noqa: F401


@pytest.fixture
def group_of_one():
    """A gloo process group of one rank in this process (an in-memory store), destroyed after."""
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()
