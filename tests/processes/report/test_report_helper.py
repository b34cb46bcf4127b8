"""The report written by two processes (ddpbench.report.workers): the page one process writes, a
helper that ends early, hangs or loses its owner costs time and nothing else, and no process
outlives the report."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from ddpbench.experiment.spec import JobSpec
from ddpbench.report import build, workers
from ddpbench.report.plots.common import guarded
from ddpbench.testing.records import ResultsFolder, rank_entry, row, training_result

CPU = dict(backend="gloo", device="cpu", threads_per_rank=1, warmup_steps=1, steps=6)


def _folder(path: Path, launches: int = 1) -> Path:
    """Two models at world sizes 1 and 2, two bucket caps: the scaling, breakdown and bucket figures."""
    folder = ResultsFolder(path)
    for size, step_ms in (("xs", 10.0), ("s", 20.0)):
        for world, bucket in ((1, 25.0), (2, 25.0), (2, 1.0)):
            spec = JobSpec(world_size=world, model_size=size, bucket_cap_mb=bucket, **CPU)
            for repeat in range(launches):
                rows = [row(r, phase, s, step_ms * (1 + 0.2 * (world - 1)) + 0.1 * s + 0.01 * repeat,
                            data_ms=0.5, forward_ms=3.0, backward_ms=5.0, optimizer_ms=1.0)
                        for r in range(world) for phase in ("warmup", "measure", "nosync") for s in range(6)]
                folder.launch(spec, repeat, result=training_result(
                    spec, rows, [rank_entry(r, peak_rss_mb=300.0 + r, threads=1) for r in range(world)],
                    repeat=repeat))
    return path


def _writers(monkeypatch, tmp_path) -> Path:
    """Have every section say which process wrote it, one line each in the file returned."""
    log = tmp_path / "writers.txt"
    original = build._section

    def traced(fn, ctx):
        with open(log, "a") as out:
            out.write(f"{os.getpid()} {fn.__name__}\n")
        return original(fn, ctx)

    monkeypatch.setattr(build, "_section", traced)
    return log


@pytest.fixture
def reaped():
    """Whether the report left no process of its own: this process's children are those it had
    before the test (a test run in one process may hold another test's fork server as its child)."""
    before = {child.pid for child in psutil.Process().children()}
    return lambda: {child.pid for child in psutil.Process().children()} <= before


def _pngs(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.png"))


def test_two_processes_write_the_page_one_process_writes(reaped, tmp_path, monkeypatch):
    folder = _folder(tmp_path / "results", launches=2)
    one = build.write_report(folder, tmp_path / "one", processes=1)
    log = _writers(monkeypatch, tmp_path)
    two = build.write_report(folder, tmp_path / "two", processes=2)
    assert two.read_bytes() == one.read_bytes()
    assert _pngs(tmp_path / "two") == _pngs(tmp_path / "one") and "throughput.png" in _pngs(tmp_path / "one")
    writers = [line.split()[0] for line in log.read_text().splitlines()]
    assert len(writers) == len(build.SECTIONS)  # each section written once, by one process or the other
    assert str(os.getpid()) in writers and {w for w in writers if w != str(os.getpid())}  # both wrote some
    assert reaped()  # the helper was reaped


def test_the_sweep_s_own_report_is_written_by_two_processes_and_is_the_same_page(reaped, tmp_path, monkeypatch):
    """The sweep forks its helper once its ranks are gone (cli.sweeping.finish_report), with torch
    loaded in its process: the page one process writes, and the same summary on standard output."""
    import torch  # noqa: F401  (the sweep's process has it loaded as it forks)
    from rich.console import Console

    from ddpbench.cli.shared.running import finish_report

    folder = _folder(tmp_path / "results", launches=2)
    monkeypatch.setenv("DDPBENCH_REPORT_HELPER", "0")
    assert finish_report(folder, Console(quiet=True)) == 0
    one, one_pngs = (folder / "index.html").read_bytes(), _pngs(folder)
    log = _writers(monkeypatch, tmp_path)
    monkeypatch.setenv("DDPBENCH_REPORT_HELPER", "1")
    assert finish_report(folder, Console(quiet=True)) == 0  # the same folder again: the page names it
    assert (folder / "index.html").read_bytes() == one
    assert _pngs(folder) == one_pngs and "throughput.png" in one_pngs
    writers = [line.split()[0] for line in log.read_text().splitlines()]
    assert len(writers) == len(build.SECTIONS) and {w for w in writers if w != str(os.getpid())}
    # the sweep computed the verdict for its console: it writes the verdict's section, and the helper
    # draws from the bottom of the page meanwhile rather than computing the verdict again
    by = dict(reversed(line.split()) for line in log.read_text().splitlines())
    assert by["verdict_section"] == str(os.getpid())
    assert reaped()


def test_what_the_helper_froze_is_given_back_and_a_callers_own_freeze_is_kept(tmp_path):
    """The report freezes what is alive before the fork (gc.freeze) and gives it back after; in a
    process that froze objects of its own it freezes nothing, and leaves theirs frozen."""
    import gc

    folder = _folder(tmp_path / "results")
    assert gc.get_freeze_count() == 0
    build.write_report(folder, tmp_path / "a", processes=2)
    assert gc.get_freeze_count() == 0
    gc.freeze()  # as a process that froze its own objects (the sweep's fork server does)
    try:
        build.write_report(folder, tmp_path / "b", processes=2)
        assert gc.get_freeze_count() > 0  # still frozen (objects freed meanwhile leave the count, not all)
    finally:
        gc.unfreeze()


def test_a_helper_that_ends_at_once_leaves_every_section_to_the_report_process(reaped, tmp_path, monkeypatch):
    folder = _folder(tmp_path / "results")
    one = build.write_report(folder, tmp_path / "one", processes=1)
    log = _writers(monkeypatch, tmp_path)
    monkeypatch.setattr(workers.Helper, "_work", lambda self, feed, ticks: os._exit(0))
    two = build.write_report(folder, tmp_path / "two", processes=2)
    assert two.read_bytes() == one.read_bytes()
    assert _pngs(tmp_path / "two") == _pngs(tmp_path / "one")
    assert {line.split()[0] for line in log.read_text().splitlines()} == {str(os.getpid())}
    assert reaped()


def test_a_helper_that_hangs_is_killed_and_its_sections_written_here(reaped, tmp_path, monkeypatch):
    folder = _folder(tmp_path / "results")
    one = build.write_report(folder, tmp_path / "one", processes=1)
    monkeypatch.setattr(workers, "STALL_S", 1.0)
    monkeypatch.setattr(workers.Helper, "_work", lambda self, feed, ticks: time.sleep(120))
    start = time.monotonic()
    two = build.write_report(folder, tmp_path / "two", processes=2)
    assert time.monotonic() - start < 60
    assert two.read_bytes() == one.read_bytes()
    assert reaped()


def test_an_error_in_a_section_is_the_report_s_error_and_the_helper_is_reaped(reaped, tmp_path, monkeypatch):
    folder = _folder(tmp_path / "results")

    def broken(ctx):
        raise ValueError("a section that cannot be written")

    with pytest.raises(ValueError, match="cannot be written"):
        build.write_report(folder, tmp_path / "out", sections=[*build.SECTIONS[:3], broken, *build.SECTIONS[3:]],
                           processes=2)
    assert reaped()


def test_no_report_process_outlives_a_kill_9_of_the_report(tmp_path):
    folder = _folder(tmp_path / "results", launches=3)
    report = subprocess.Popen([sys.executable, "-m", "ddpbench", "report", str(folder)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env={**os.environ, "DDPBENCH_REPORT_HELPER": "1"})
    parent = psutil.Process(report.pid)
    deadline = time.monotonic() + 60
    while not parent.children() and time.monotonic() < deadline:
        time.sleep(0.02)
    helpers = parent.children()
    assert helpers, "the report never started its helper"
    os.kill(report.pid, signal.SIGKILL)
    report.wait()
    gone, alive = psutil.wait_procs(helpers, timeout=10)
    assert alive == []


def test_the_report_command_imports_neither_torch_nor_scipy_stats_nor_the_checker(tmp_path):
    folder = _folder(tmp_path / "results")
    probe = ("import runpy, sys\n"
             f"sys.argv = ['ddpbench', 'report', {str(folder)!r}]\n"
             "try:\n    runpy.run_module('ddpbench', run_name='__main__')\nexcept SystemExit as end:\n"
             "    assert not end.code, end.code\n"
             "print(sorted(m for m in ('torch', 'scipy.stats', 'ddpbench.audit') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert (folder / "index.html").is_file()



def test_python_m_ddpbench_report_ends_as_the_report_is_written(tmp_path):
    """``python -m ddpbench report`` ends its process as the command returns (cli.program.exit_now):
    the index's path it printed (stdout a pipe: buffered) is flushed, the exit code is the command's,
    the exit handlers run, and the interpreter's teardown is skipped: an object held by a module
    would be finalised in it. Run as the program itself: runpy with ``alter_sys``, as ``python -m``
    runs it, an exit handler and the object planted before."""
    folder = _folder(tmp_path / "results")
    probe = ("import atexit, os, runpy, sys\n"
             "class Held:\n    def __del__(self):\n        os.write(1, b'torn down\\n')\n"
             "held = Held()\n"
             "atexit.register(print, 'exit handler')\n"
             f"sys.argv = ['ddpbench', 'report', {str(folder)!r}]\n"
             "runpy.run_module('ddpbench', run_name='__main__', alter_sys=True)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [str(folder / "index.html"), "exit handler"]
    assert (folder / "index.html").is_file()
    # a problem planted in the checker's answer (this folder's sentences hold): its exit code 1 comes through, its
    # lines too
    planted = ("import ddpbench.analysis.diagnosis.claims as claims\n"
               "from ddpbench.audit.problem import Problem\n"
               "real = claims.audit_findings\n"
               "claims.audit_findings = lambda *a, **k: [*real(*a, **k), "
               "Problem('figure', None, 'planted', 'planted')]\n")
    checked = subprocess.run([sys.executable, "-c", planted + probe.replace("'report', ", "'report', '--check', ")],
                             capture_output=True, text=True, timeout=300)
    assert checked.returncode == 1, checked.stderr[-2000:]
    assert checked.stdout.splitlines()[-1] == "exit handler"
    assert checked.stdout.splitlines()[-2].endswith("1 problem(s) against the figures re-derived from the records")
    assert "planted" in checked.stdout
    # the same object torn down where the process exits as Python ends it (the check of the probe itself)
    without_report = probe.replace("runpy.run_module('ddpbench', run_name='__main__', alter_sys=True)\n", "")
    plain = subprocess.run([sys.executable, "-c", without_report], capture_output=True, text=True, timeout=60)
    assert plain.stdout.splitlines() == ["exit handler", "torn down"], plain.stderr[-2000:]


@guarded
def _unplaceable(path):
    raise ValueError("planted: nothing here can be placed")


def test_figures_left_out_in_either_process_close_the_page(tmp_path, monkeypatch):
    """Every section also draws a figure that cannot be placed: the helper hands its sections' lines
    back with them, so the page of two processes lists every one, as the page of one does."""
    folder = _folder(tmp_path / "results")
    original = build._section

    def planted(fn, ctx):
        def with_a_figure_left_out(ctx):
            _unplaceable(ctx.image(f"{fn.__name__}-left-out.png"))
            return fn(ctx)
        return original(with_a_figure_left_out, ctx)

    monkeypatch.setattr(build, "_section", planted)
    log = _writers(monkeypatch, tmp_path)
    one = build.write_report(folder, tmp_path / "one", processes=1)
    log.unlink()
    two = build.write_report(folder, tmp_path / "two", processes=2)
    assert {line.split()[0] for line in log.read_text().splitlines()} != {str(os.getpid())}  # the helper wrote some
    page = two.read_text(encoding="utf-8")
    assert page.count("-left-out.png</code>: planted: nothing here can be placed") == len(build.SECTIONS)
    assert two.read_bytes() == one.read_bytes()
