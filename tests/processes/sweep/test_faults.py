"""Faults injected for real into a running sweep: a rank killed with SIGKILL, a rank hung so that
its peer waits inside a collective. The sweep records why, goes on, keeps every finished result
and leaves no process behind."""

import errno
import os
import subprocess
import time
import warnings

import pytest

from ddpbench.results.store import DamagedRecord
from ddpbench.results.tables import load_tables
from ddpbench.testing import ROOT, TINY, cli_command, rank_processes, run_cli, run_main, write_experiment
from ddpbench.testing.sweeps import faults_sweep
from ddpbench.testing.sweeps import wait_for_runs as _wait_for_runs


def outcomes(out):
    _, runs, _, _ = load_tables(out)
    return {row["strategy"] + f"-ws{row['world_size']}": row for _, row in runs.iterrows()}


LAUNCHERS = pytest.mark.parametrize("launcher", ["spawn", "torchrun"])


@LAUNCHERS
def test_a_rank_killed_or_hung_fails_or_times_out_its_job_with_the_cause_and_the_sweep_goes_on(tmp_path, launcher):
    """Both faults planted in one sweep, each in its own job: SIGKILL, and a rank that sleeps so
    that its peer waits inside a collective. Under spawn a good job runs before and after them, and the
    hung job waits out its timeout; under torchrun (5-7 s a launch) the sweep going on is the hung job run
    after the killed one, and its stall limit (``--stall``: no rank moved for that long) ends it."""
    # spawn's hung job waits out its timeout: a few times what a job of this sweep takes idle (1-2 s); torchrun's
    # is ended by the stall, long before its timeout, and after a rank's longest still spell of a launch
    timeout_s, stall_s = (12, None) if launcher == "spawn" else (120, 10)
    good = launcher == "spawn"
    # step 5 = the 1 warmup step + measure steps 0..3: the fault comes after measure step 3's backward
    proc, out, recovery_s = faults_sweep(tmp_path, {"planted-kill": "kill:1:5", "planted-hang": "hang:1:5"},
                                         timeout_s=timeout_s, launcher=launcher, good=good,
                                         flags=("--stall", str(stall_s)) if stall_s else ())
    assert proc.returncode == 1, proc.stderr  # a job failed
    runs = outcomes(out)
    faulty = ["planted-kill-ws2", "planted-hang-ws2"]
    assert list(runs) == (["ddp-ws1", *faulty, "ddp-ws2"] if good else faulty)
    print(f"{launcher}, kill -9: the job recorded as failed {recovery_s['planted-kill']:.1f} s after the kill")
    killed = runs["planted-kill-ws2"]
    assert killed["status"] == "failed"
    assert killed["error"] == "rank 1 killed by SIGKILL in measure step 3"
    hung = runs["planted-hang-ws2"]
    assert hung["status"] == "timed_out"
    # rank 1 sleeps after measure step 3; rank 0 went on and waits in step 4's all-reduce
    ended = (f"no rank moved for {stall_s} s (the stall limit)" if stall_s
             else f"no result within the {timeout_s} s timeout")
    assert hung["error"] == f"{ended} (rank 0 at measure step 4; rank 1 at measure step 3)"
    if stall_s:  # ended by the stall: within a look (a second) of the limit, counted from the hang
        assert stall_s <= recovery_s["planted-hang"] < stall_s + 10
        print(f"{launcher}, hang: the job recorded as hung {recovery_s['planted-hang']:.1f} s after the hang began "
              f"(stall limit {stall_s} s)")
    else:
        assert hung["wall_s"] <= timeout_s + 10
        print(f"{launcher}, hang: the job recorded as timed out {hung['wall_s'] - timeout_s:.1f} s past its "
              f"{timeout_s} s timeout ({recovery_s['planted-hang']:.1f} s after the hang began)")
    if good:
        assert runs["ddp-ws1"]["status"] == runs["ddp-ws2"]["status"] == "ok"
        steps, _, _, _ = load_tables(out)
        assert set(steps["strategy"]) == {"ddp"} and len(steps[steps["phase"] == "measure"]) == 10 * (1 + 2)
    assert not rank_processes(str(out))


@pytest.fixture
def small_disk(tmp_path):
    """A 16 MB tmpfs: a disk that can really fill up (mounting needs root, as CI runs)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16M", "tmpfs", str(disk)],
                             capture_output=True, text=True)
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(path):
    """Write zeros to ``path`` until the disk is full, to the last byte."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for chunk in (1 << 20, 1 << 12, 1):
            try:
                while True:
                    os.write(fd, b"\0" * chunk)
            except OSError as err:
                assert err.errno == errno.ENOSPC
    finally:
        os.close(fd)


def test_a_full_disk_stops_the_sweep_with_one_line_and_keeps_what_was_stored(small_disk):
    exp = write_experiment(small_disk.parent / "tiny.toml", TINY.replace("steps = 4", "steps = 40"))
    out = small_disk / "out"
    sweep = subprocess.Popen(cli_command("sweep", str(exp), "--out", str(out), "--no-report"),
                             cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_runs(out / "results.jsonl", 1)
        fill(small_disk / "filler")  # the next launch cannot be stored
        filled = time.monotonic()
        _, stderr = sweep.communicate(timeout=120)
        print(f"full disk: the sweep stopped {time.monotonic() - filled:.1f} s after the disk filled")
    finally:
        if sweep.poll() is None:
            sweep.kill()
    assert sweep.returncode == 1, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "No space left on device" in errors[0] and "--resume" in errors[0], stderr
    assert "Traceback" not in stderr
    assert not rank_processes(str(out))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no damaged record: the store never leaves half a line
        _, runs, _, _ = load_tables(out)
    stored = set(runs["key"])
    assert 1 <= len(stored) < 4 and set(runs["status"]) == {"ok"}, runs[["status", "error"]].to_string()

    (small_disk / "filler").unlink()
    proc = run_main("sweep", exp, "--out", out, "--resume", "--no-report")
    assert proc.returncode == 0, proc.stderr
    _, runs, _, _ = load_tables(out)
    assert len(runs) == 4 and set(runs["status"]) == {"ok"} and stored <= set(runs["key"])


def test_a_results_file_cut_mid_write_loses_one_record_and_resume_measures_it_again(tmp_path):
    """A crash mid-write, simulated on a real sweep's file: its last record is cut in half."""
    exp = write_experiment(tmp_path / "two.toml", TINY.replace("world_size = [1, 2]", "world_size = [1]")
                           .replace("bucket_cap_mb = [0.25, 25]", "bucket_cap_mb = [1, 25]"))
    out = tmp_path / "out"
    assert run_main("sweep", exp, "--out", out, "--no-report").returncode == 0
    results = out / "results.jsonl"
    lines = results.read_bytes().splitlines(keepends=True)
    assert b'"kind": "run"' in lines[-1]
    whole = len(b"".join(lines[:-1]))
    os.truncate(results, whole + len(lines[-1]) // 2)
    damaged = f"results.jsonl:{len(lines)}: damaged record skipped"

    with pytest.warns(DamagedRecord, match=damaged):
        _, runs, _, _ = load_tables(out)
    assert len(runs) == 1 and set(runs["status"]) == {"ok"}  # the other launch is intact

    report = run_main("report", out)
    assert report.returncode == 0, report.stderr
    assert report.stderr.count(damaged) == 1 and report.stderr.startswith("warning: "), report.stderr
    page = (out / "index.html").read_text()
    assert "Damaged records</strong>" in page and damaged in page

    started = time.monotonic()
    # a new process, as a user resumes: the warning is said once a process, and the report above said it here
    resumed = run_cli("sweep", exp, "--out", out, "--resume", "--no-report")
    assert resumed.returncode == 0, resumed.stderr
    print(f"cut record: measured again by --resume in {time.monotonic() - started:.1f} s")
    assert resumed.stderr.count(damaged) == 1, resumed.stderr
    with pytest.warns(DamagedRecord, match=damaged):  # the cut line stays, for the record
        _, runs, _, sweeps = load_tables(out)
    assert len(runs) == 2 and set(runs["status"]) == {"ok"} and len(sweeps) == 2
    assert len(results.read_bytes().splitlines()) == len(lines) + 2  # new sweep and run, each on its own line


def test_two_sweeps_at_once_both_complete(tmp_path):
    """Each launch's rendezvous is on a port the OS gave it: two sweeps side by side never clash.
    Two jobs of two ranks each: every launch meets in a rendezvous."""
    exp = write_experiment(tmp_path / "tiny.toml", TINY.replace("world_size = [1, 2]", "world_size = [2]"))
    sweeps = [subprocess.Popen(cli_command("sweep", str(exp), "--out", str(tmp_path / f"out{i}"), "--no-report"),
                               cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
              for i in range(2)]
    started = time.monotonic()
    try:
        errors = [s.communicate(timeout=300)[1] for s in sweeps]
    finally:
        for s in sweeps:
            if s.poll() is None:
                s.kill()
    print(f"two sweeps at once: both done in {time.monotonic() - started:.1f} s")
    for sweep, stderr in zip(sweeps, errors):
        assert sweep.returncode == 0, stderr
    for i in range(2):
        _, runs, _, _ = load_tables(tmp_path / f"out{i}")
        assert len(runs) == 2 and set(runs["status"]) == {"ok"}, runs[["status", "error"]].to_string()
        assert not rank_processes(str(tmp_path / f"out{i}"))
