"""One results folder, one sweep (:mod:`ddpbench.files.folders`): the lock, the folder rules, no
writes through links, and work and log paths of one sweep that no other sweep shares."""

import json
import os
import subprocess
import time

from ddpbench.results.tables import load_tables
from ddpbench.testing import ROOT, TINY, cli_command, rank_processes, write_experiment

# ---------------------------------------------------------------------------------------------
# two real sweeps into one folder
# ---------------------------------------------------------------------------------------------

def test_two_sweeps_into_one_folder_the_second_is_refused_or_waits_and_the_first_completes(tmp_path):
    # long enough that two more interpreters start and meet its lock before it ends, on a loaded machine
    long = write_experiment(tmp_path / "tiny-long.toml", TINY.replace("steps = 4", "steps = 600"))
    # the sweeps after it: the lock is the folder's, whatever they run; the waiting one need not be long
    short = write_experiment(tmp_path / "tiny.toml", TINY)
    out = tmp_path / "out"

    def sweep(exp, *flags, stderr=subprocess.PIPE):
        return subprocess.Popen(cli_command("sweep", str(exp), "--out", str(out), "--no-report",
                                            *flags), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr, text=True)

    first = sweep(long)
    waiting_log = tmp_path / "waiting.err"
    try:
        deadline = time.monotonic() + 90
        while not rank_processes(str(out)) and time.monotonic() < deadline:  # its first launch in flight
            time.sleep(0.1)
        assert rank_processes(str(out)), "the first sweep never launched"
        refused = sweep(short)  # both start while the first runs: neither waits for the other's start-up
        with open(waiting_log, "w") as log:
            waiting = sweep(short, "--wait", stderr=log)
        refused_err = refused.communicate(timeout=60)[1]
        while "waiting for" not in waiting_log.read_text() and waiting.poll() is None:
            time.sleep(0.1)
        assert first.poll() is None, "the first sweep ended before the second could wait for it"
        first_err = first.communicate(timeout=300)[1]
        waiting.wait(timeout=300)
        waiting_err = " ".join(waiting_log.read_text().split())  # as one line: the console wraps it
    finally:
        for proc in (first, locals().get("refused"), locals().get("waiting")):
            if proc is not None and proc.poll() is None:
                proc.kill()
    assert refused.returncode == 2, refused_err
    since = refused_err.split("running since ")[1].split(")")[0]
    assert refused_err.strip().splitlines() == [
        f"error: command line: --out: {out} is in use by another writer (sweep, pid {first.pid} on "
        f"{os.uname().nodename}, running since {since}); wait for it to end, pass --wait to start when it does, or "
        "give another folder"], refused_err
    assert first.returncode == 0, first_err
    assert waiting.returncode == 0 and f"pid {first.pid}" in waiting_err, waiting_err
    # the first's results are complete, kept aside whole when the waiting one started afresh
    kept = next(out.glob("results.*.jsonl"))
    _, runs, _, _ = load_tables(kept.parent)  # the waiting sweep's own
    assert len(runs) == 4 and set(runs["status"]) == {"ok"}
    first_runs = [json.loads(line) for line in kept.read_text().splitlines() if '"kind": "run"' in line]
    assert len(first_runs) == 4 and {r["status"] for r in first_runs} == {"ok"}
    assert all(os.path.exists(path) for r in first_runs for path in r["logs"])
