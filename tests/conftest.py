import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from ddpbench.experiment.machine import Machine

pytest_plugins = ("pytester",)  # tests/test_pytest_plugin.py runs pytest on a user's suite

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def cpu_machine():
    """A 2-core machine without GPUs, whatever this one is."""
    return Machine(cores=2, cuda_devices=0)


def run_cli(*args, cwd=None, timeout=300, env=None, **kw):
    """python -m ddpbench ... in a subprocess, as a user runs it."""
    env = {**(env or os.environ), "COLUMNS": "160"}
    return subprocess.run([sys.executable, "-m", "ddpbench", *map(str, args)], cwd=cwd or ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, **kw)


def as_from_a_terminal() -> None:
    """``preexec_fn`` of a sweep a test interrupts with SIGINT: Ctrl-C at its default, as a terminal
    starts a command. A shell without job control (``cmd &``, ``nohup``, as a CI runner may start
    the suite) starts its children with SIGINT ignored, and Python keeps it ignored."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def write_experiment(path: Path, body: str) -> Path:
    path.write_text(textwrap.dedent(body))
    return path


def script_experiment(path: Path, more: str, timeout_s: int = 60, warmup_steps: int = 2, steps: int = 5) -> Path:
    """An experiment file of script jobs (docs/scripts.md) with the defaults every script test shares
    (batch 8 a rank, gloo on the CPU, one thread a rank), then ``more``: further defaults and the grids."""
    return write_experiment(path, f"""
timeout_s = {timeout_s}
[defaults]
batch_size = 8
backend = "gloo"
device = "cpu"
threads_per_rank = 1
warmup_steps = {warmup_steps}
steps = {steps}
""" + textwrap.dedent(more))


#: the smallest real job: a 1 MB MLP, one thread per rank, a few steps
TINY_DEFAULTS = """
    [defaults]
    backend = "gloo"
    device = "cpu"
    model = "mlp"
    model_size = "xs"
    batch_size = 8
    threads_per_rank = 1
    warmup_steps = 1
    steps = 4
"""

TINY = """
    name = "tiny"
    timeout_s = 60
""" + TINY_DEFAULTS + """
    [grid]
    world_size = [1, 2]
    bucket_cap_mb = [0.25, 25]
"""


def rank_processes(marker: str):
    """Live ddpbench rank processes whose command line or open files mention ``marker`` (a results
    folder): ranks started as ``python -m ddpbench.rank --job ...``, and ranks forked from the warm
    server (ddpbench.launch.forked), whose command line is the server's but whose output is their
    log in the folder's ``logs/``."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = " ".join(proc.info.get("cmdline") or [])
        if "ddpbench.rank" in cmd and marker in cmd:
            found.append(proc)
        elif "multiprocessing.forkserver" in cmd:
            try:
                if any(marker in f.path for f in proc.open_files()):
                    found.append(proc)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
    return found


# ---------------------------------------------------------------------------------------------
# tests/benchmarks: timed when asked for, smoke-run (once each, untimed) in the plain test run
# ---------------------------------------------------------------------------------------------

BENCHMARKS = ROOT / "tests" / "benchmarks"
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
    ``pytest tests/benchmarks`` or any pytest-benchmark option that asks for timings times them."""
    asked = any(config.getoption(option, None) for option in TIMING_OPTIONS)
    if not asked and not any(_names_benchmarks(arg) for arg in config.invocation_params.args):
        config.option.benchmark_disable = True


#: the environment variable tests mark the processes of one sweep with, to find them after a kill -9
#: has reparented them
MARK = "DDPBENCH_TEST_MARK"


def marked(mark: str) -> list[psutil.Process]:
    """Live processes (not zombies) whose environment, as /proc/PID/environ holds it, has ``MARK=mark``."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and proc.environ().get(MARK) == mark:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def wait_for(check, timeout_s: float, what: str):
    """What ``check()`` returns once it is truthy, polled every 0.1 s; fails after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"never saw {what}")


@pytest.fixture
def group_of_one():
    """A gloo process group of one rank in this process (an in-memory store), destroyed after."""
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()
