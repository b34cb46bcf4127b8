"""Real sweeps for tests, and what their folders must hold: a sweep with a fault planted in its
middle job, a traced sweep's experiment and its check, and the shape one launcher's folder
shares with another's."""

from __future__ import annotations

import gzip
import json
import math
import os
import subprocess
import time

import pandas as pd

import ddpbench
from ddpbench.analysis.summary import summarize, trace_events
from ddpbench.results.tables import load, load_tables
from ddpbench.testing.cli import ROOT, cli_command
from ddpbench.testing.experiments import TINY_DEFAULTS, write_experiment
from ddpbench.testing.planted_faults import FAULTS
from ddpbench.testing.survivors import rank_processes


def wait_for_runs(path, count, timeout=120, process=None):
    """Waits until the results file ``path`` holds ``count`` run records; fails after ``timeout`` s, or as
    soon as ``process`` (the sweep writing them, where given) has ended without them."""
    start = time.monotonic()
    while time.monotonic() < start + timeout:
        if path.exists() and path.read_text().count('"kind": "run"') >= count:
            return
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the sweep ended (exit {process.returncode}) with fewer than {count} run records "
                                 f"in {path}")
        time.sleep(0.2)
    raise AssertionError(f"no {count} run records in {path} after {time.monotonic() - start:.0f} s")


def tables_shape(out):
    """What an interrupted-and-resumed sweep must share with an uninterrupted one: the job set,
    and the columns of every table and of the summary (values are measurements: they differ)."""
    steps, runs, ranks, _ = load_tables(out)
    summary = ddpbench.summarize(ddpbench.load(out))
    return (sorted(runs["key"]), sorted(summary["key"]), list(steps.columns), list(runs.columns),
            list(ranks.columns), list(summary.columns), sorted(set(steps["phase"])), len(steps))


def assert_stores_what_spawn_stores(out, spawned, launcher: str):
    """Another launcher's sweep against spawn's of the same file: same jobs and columns, every
    job ok with identical replicas, the launcher named, nothing left running. Returns its runs."""
    assert tables_shape(out) == tables_shape(spawned)
    _, runs, ranks, _ = load_tables(out)
    assert set(runs["launcher"]) == {launcher} and set(runs["status"]) == {"ok"}
    for _, job in ranks.groupby(["key", "repeat"]):
        assert job["checksum"].nunique() == 1
    assert not rank_processes(str(out))
    return runs


def faulty_sweep(tmp_path, fault: str, timeout_s: int = 60, launcher: str = "spawn"):
    """Three jobs in order: a good one, one with ``fault`` planted, another good one. Returns the
    finished sweep, its folder, and the seconds from the fault to its job's record being stored."""
    proc, out, recovery_s = faults_sweep(tmp_path, {"planted-fault": fault}, timeout_s, launcher)
    return proc, out, recovery_s["planted-fault"]


def faults_sweep(tmp_path, faults: dict[str, str], timeout_s: int = 60, launcher: str = "spawn",
                 flags: tuple[str, ...] = (), good: bool = True):
    """:func:`faulty_sweep` with several faults, one job each, in ``faults``'s order between the good
    ones (none without ``good``): strategy name -> fault (``KIND:RANK:STEP``). ``flags``: more of the
    sweep's flags. The recovery seconds are per strategy name."""
    exp = write_experiment(tmp_path / "faults.toml", f"""
        name = "faults"
        timeout_s = {timeout_s}
    """ + TINY_DEFAULTS.replace("steps = 4", "steps = 10") + ("""
        [[grid]]
        world_size = [1]""" if good else "") + f"""
        [[grid]]
        strategy = {json.dumps(list(faults))}""" + ("""
        [[grid]]
        world_size = [2]
        bucket_cap_mb = [1]""" if good else "") + "\n")
    out, stamp = tmp_path / "out", tmp_path / "fault.time"
    env = {**os.environ, "DDPBENCH_STRATEGIES": ",".join(f"{name}={FAULTS.split('=')[1]}" for name in faults),
           "PLANTED_FAULT": " ".join(f"{name}={fault}" for name, fault in faults.items()),
           "PLANTED_FAULT_STAMP": str(stamp), "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    sweep = subprocess.Popen(cli_command("sweep", str(exp), "--out", str(out), "--no-report", "--launcher", launcher,
                                         *flags),
                             cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    recorded: dict[str, float] = {}
    try:
        deadline = time.monotonic() + len(faults) * timeout_s + 120
        while sweep.poll() is None and time.monotonic() < deadline:
            if len(recorded) < len(faults) and (out / "results.jsonl").exists():
                lines = [line for line in (out / "results.jsonl").read_text().splitlines() if '"kind": "run"' in line]
                for name in faults:
                    if name not in recorded and any(f'"{name}"' in line for line in lines):
                        recorded[name] = time.time()
            time.sleep(0.05)
        stderr = sweep.communicate(timeout=5)[1]
    finally:
        if sweep.poll() is None:
            sweep.kill()
    stamps = {name: tmp_path / f"fault.time.{name}" for name in faults}
    recovery_s = {name: recorded[name] - float(stamps[name].read_text())
                  if name in recorded and stamps[name].exists() else None for name in faults}
    return subprocess.CompletedProcess(sweep.args, sweep.returncode, None, stderr), out, recovery_s


TRACED = """
    name = "traced"
    timeout_s = 120
""" + TINY_DEFAULTS + """
    bucket_cap_mb = 0.25
    check_steps = 0
    trace_steps = 2
    [grid]
    world_size = [1, 2]
"""


def check_traced_folder(out, ranks_of_ws2=2):
    """A traced sweep's folder: every rank's trace parses as Chrome trace JSON with the phases and
    gloo's all-reduces in it, the events are in the results, the traced steps are apart."""
    steps = load(out)
    runs = pd.DataFrame(steps.attrs["runs"])
    for _, run in runs.iterrows():
        files = run["traces"]
        assert [f["rank"] for f in files] == list(range(run["world_size"]))
        for f in files:
            path = out / f["path"]
            assert path.name == f"{run['key']}-r{run['repeat']}.rank{f['rank']}.json.gz"
            assert path.stat().st_size == f["bytes"] < 2e6
            trace = json.loads(gzip.decompress(path.read_bytes()))
            names = {e.get("name") for e in trace["traceEvents"]}
            assert {"ddpbench:align", "ddpbench:forward", "ddpbench:backward", "ddpbench:optimizer"} <= names
            assert "gloo:all_reduce" in names
            assert sum(e.get("name") == "ddpbench:step" for e in trace["traceEvents"]) == 2
    traced = steps[steps["phase"] == "trace"]
    assert len(traced) == 2 * 3 and set(traced["step"]) == {0, 1}  # 2 steps of 1 + 2 ranks
    table = summarize(steps).set_index("world_size")
    two = table.loc[2]
    assert two["trace_steps_read"] == 2 and two["trace_comm_ms"] > 0 and two["trace_mb"] > 0
    assert 0 <= two["trace_exposed_comm_ms"] <= two["trace_comm_ms"]
    assert math.isfinite(two["trace_overhead_pct"]) and math.isfinite(two["ddp_exposed_comm_ms"])
    events = trace_events(runs)
    buckets = events[(events["kind"] == "comm") & (events["key"] == two["key"])]
    assert buckets["bytes"].max() > 2.5e5  # mlp-xs's buckets of 0.25 MB or more, as gloo ran them
    return table
