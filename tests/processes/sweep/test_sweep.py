"""Real multi-process sweeps on CPU with gloo: end to end, replicas, resume, no orphans."""

import json
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

import ddpbench
from ddpbench.experiment.machine import Machine, resolve
from ddpbench.experiment.spec import JobSpec
from ddpbench.launch.spawn import SpawnLauncher
from ddpbench.results.schema import SCHEMA_VERSION
from ddpbench.results.tables import load_tables
from ddpbench.testing import (
    ROOT,
    TINY,
    as_from_a_terminal,
    cli_command,
    rank_processes,
    run_cli,
    run_main,
    write_experiment,
)
from ddpbench.testing.sweeps import assert_stores_what_spawn_stores, tables_shape
from ddpbench.testing.sweeps import wait_for_runs as _wait_for_runs


@pytest.fixture(scope="module")
def tiny_sweep(tmp_path_factory):
    """One real 2-rank sweep shared by the checks below (4 jobs, about 15 s), priced by flags."""
    tmp = tmp_path_factory.mktemp("sweep")
    exp = write_experiment(tmp / "tiny.toml", TINY)
    out = tmp / "out"
    proc = run_cli("sweep", exp, "--out", out, "--price-per-device-hour", "2.5", "--price-source", "test",
                   "--price-date", "2026-11-25", "--verbose")
    return proc, out


def test_sweep_end_to_end(tiny_sweep):
    proc, out = tiny_sweep
    assert proc.returncode == 0, proc.stderr
    steps = ddpbench.load(out)
    jobs = ddpbench.summarize(steps)
    assert len(jobs) == 4 and set(jobs["status"]) == {"ok"}
    for col in ("strategy", "backend", "device", "world_size", "bucket_cap_mb", "model", "params", "batch_size",
                "repeat", "rank", "step", "step_ms", "forward_ms", "backward_ms", "optimizer_ms", "samples_per_s"):
        assert col in steps.columns, col
    for col in ("step_ms_median", "step_ms_iqr", "samples_per_s", "speedup", "efficiency", "exposed_comm_ms",
                "ddp_comm_ms", "overlap_pct", "peak_rss_mb", "oversubscribed", "noisy", "status", "error"):
        assert col in jobs.columns, col
    # every rank, every step of every phase, for each job: ws * (warmup + steps + nosync steps)
    counts = steps.groupby(["world_size", "bucket_cap_mb"]).size()
    assert set(counts[1]) == {1 * (1 + 4 + 4)} and set(counts[2]) == {2 * (1 + 4 + 4)}
    assert set(steps["phase"]) == {"warmup", "measure", "nosync"}
    measured = steps[steps["phase"] == "measure"]
    assert (measured["step_ms"] > 0).all()
    # phases add up to the step (the rest is the timer's own cost)
    parts = measured[["data_ms", "forward_ms", "backward_ms", "comm_ms", "optimizer_ms"]].sum(axis=1)
    assert ((measured["step_ms"] - parts).abs() < 1e-6 + 0.01 * measured["step_ms"]).all()
    two = jobs[jobs["world_size"] == 2]
    assert (two["allreduce_bytes_per_step"] == steps["params"].iloc[0] * 4).all()
    one = jobs[jobs["world_size"] == 1].set_index("bucket_cap_mb")["samples_per_s"]
    for _, job in two.iterrows():  # baseline: the world-size-1 job with the same bucket size
        assert job["speedup"] == pytest.approx(job["samples_per_s"] / one[job["bucket_cap_mb"]])
    assert (jobs.loc[jobs["world_size"] == 1, "speedup"] == 1.0).all()
    small = two[two["bucket_cap_mb"] == 0.25].iloc[0]
    large = two[two["bucket_cap_mb"] == 25].iloc[0]
    assert small["buckets"] > large["buckets"] == 1  # DDP really used the bucket size asked for
    # standard output ends with the verdict drawn from the report's diagnosis: its answer table, then (with
    # --verbose) its sentences, one line each
    table = proc.stdout[:proc.stdout.index("verdict in sentences:")]
    assert "what to change" in table and "how sure" in table
    tail = proc.stdout[proc.stdout.index("verdict in sentences:"):].splitlines()
    assert [line.split(":")[0].strip() for line in tail[1:]][:1] in (["scaling"], ["no verdict"])
    assert any(line.startswith("  top cause: ") for line in tail) and "report: " in proc.stderr


def test_a_priced_sweep_costs_every_job_and_says_why_there_is_no_energy(tiny_sweep):
    """Cost per sample is price x devices x step time / samples for every job; energy is a measured
    figure or one line why not, never a zero, and the report says so (docs/cost-and-energy.md)."""
    proc, out = tiny_sweep
    _, runs, ranks, sweeps = load_tables(out)
    assert sweeps.iloc[-1]["experiment_cost"] == {"price_per_device_hour": 2.5, "price_per_node_hour": 0.0,
                                                  "currency": "USD", "source": "test", "date": "2026-11-25"}
    jobs = ddpbench.summarize(ddpbench.load(out)).set_index("key")
    steps = ddpbench.load(out)
    # a launch's step: its slowest rank's mean over its measured steps (its window over them)
    measured = steps[steps["phase"] == "measure"].groupby(["key", "repeat", "rank"])["step_ms"].mean()
    for key, job in jobs.iterrows():
        step_ms = measured.loc[key].groupby(level="repeat").max().mean()
        expected = 2.5 * job["world_size"] * step_ms / 3.6e6 / job["global_batch"]
        assert job["cost_per_sample"] == pytest.approx(expected, rel=1e-9)
    assert "cheapest: " in proc.stdout and "fastest: " in proc.stdout
    for _, rank in ranks.iterrows():  # a figure, or why not: never 0 J for want of a counter
        assert (rank["energy_j"] > 0) if not pd.isna(rank["energy_j"]) else \
            (rank["energy_note"] and "\n" not in rank["energy_note"])
    page = (out / "index.html").read_text()
    assert "Cost and energy" in page and "2.5 USD a device-hour (test, 2026-11-25)" in page
    if not Path("/sys/class/powercap").exists():  # this project's machines: said once, in one line
        assert jobs["energy_j_per_sample"].isna().all() and "J per sample" not in page
        assert page.count("this machine has no /sys/class/powercap") == 1


def test_replicas_identical_and_env_stored(tiny_sweep):
    _, out = tiny_sweep
    _, runs, ranks, sweeps = load_tables(out)
    for _, job in ranks.groupby(["key", "repeat"]):
        assert job["checksum"].nunique() == 1
    assert len(ranks[ranks["world_size"] == 2]) == 2 * 2
    env = sweeps.iloc[0]
    for key in ("torch_version", "cpu_model", "cores_usable", "hostname", "python", "ddpbench_version",
                "git_commit", "git_dirty", "utc"):
        assert key in sweeps.columns, key
    assert env["torch_version"].startswith("2.")
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {r["schema_version"] for r in records} == {SCHEMA_VERSION}


def test_report_written_and_no_gloo_abort(tiny_sweep):
    _, out = tiny_sweep
    assert (out / "index.html").is_file()
    assert list(out.glob("*.png"))
    logs = list(out.glob("logs/*/*.log"))  # logs/<sweep id>/
    assert len(logs) == 2 + 2 * 2
    for log in logs:
        text = log.read_text()
        assert "terminate called" not in text and "Traceback" not in text, log
    assert not rank_processes(str(out))


def test_run_one_job_from_flags(tmp_path):
    proc = run_main("run", "--world-size", "2", "--model-size", "xs", "--steps", "3", "--warmup-steps", "1",
                    "--threads-per-rank", "1", "--batch-size", "8", "--out", tmp_path / "one")
    assert proc.returncode == 0, proc.stderr
    jobs = ddpbench.summarize(ddpbench.load(tmp_path / "one"))
    assert len(jobs) == 1 and jobs.iloc[0]["world_size"] == 2 and jobs.iloc[0]["status"] == "ok"


# two jobs, one rank then two, long enough to interrupt the second mid-launch (at 40 steps the second
# launch could end within the test's look for its ranks and the 0.3 s it waits into their steps)
LONGER = TINY.replace("steps = 4", "steps = 120").replace("bucket_cap_mb = [0.25, 25]", "bucket_cap_mb = [25]")


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The sweep the interrupted ones are held against, run once without a break."""
    tmp = tmp_path_factory.mktemp("whole")
    out = tmp / "out"
    proc = run_main("sweep", write_experiment(tmp / "tiny.toml", LONGER), "--out", out, "--no-report")
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM])
def test_interrupted_sweep_keeps_results_and_resume_equals_an_uninterrupted_one(tmp_path, how, uninterrupted):
    exp = write_experiment(tmp_path / "tiny.toml", LONGER)
    out = tmp_path / "out"
    sweep = subprocess.Popen(cli_command("sweep", str(exp), "--out", str(out), "--no-report"),
                             cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             preexec_fn=as_from_a_terminal)
    try:
        _wait_for_runs(out / "results.jsonl", 1)
        deadline = time.monotonic() + 15
        while not rank_processes(str(out)) and time.monotonic() < deadline:  # the next launch in flight
            time.sleep(0.05)
        time.sleep(0.3)  # and into its steps
        assert rank_processes(str(out)), "no launch in flight to interrupt"
        sweep.send_signal(how)
        signalled = time.monotonic()
        sweep.wait(timeout=15)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    stderr = sweep.stderr.read()
    if how != signal.SIGKILL:  # Ctrl-C and SIGTERM: the sweep ends its ranks and says how to go on
        assert sweep.returncode == 128 + how and "--resume" in stderr, stderr
    # SIGKILL: the kernel ends the ranks with their launcher (ddpbench.owner: the parent-death signal)
    while rank_processes(str(out)) and time.monotonic() - signalled < 10:
        time.sleep(0.1)
    ended_s = time.monotonic() - signalled
    assert not rank_processes(str(out))
    print(f"{how.name}: every rank gone {ended_s:.1f} s after the signal")
    _, runs, _, _ = load_tables(out)
    finished = set(runs["key"])
    assert len(finished) == 1 and set(runs["status"]) == {"ok"}

    proc = run_main("sweep", exp, "--out", out, "--resume", "--no-report")
    assert proc.returncode == 0, proc.stderr
    _, runs, _, sweeps = load_tables(out)
    assert len(runs) == 2 and runs["key"].is_unique and set(runs["status"]) == {"ok"}
    assert len(sweeps) == 2 and finished <= set(runs["key"])
    assert tables_shape(out) == tables_shape(uninterrupted)


def test_sweep_without_resume_keeps_earlier_results(tiny_sweep, tmp_path):
    _, out = tiny_sweep
    exp = write_experiment(tmp_path / "one.toml", TINY.replace("world_size = [1, 2]", "world_size = [1]")
                           .replace("bucket_cap_mb = [0.25, 25]", "bucket_cap_mb = [25]"))
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(out), str(copy)], check=True)
    proc = run_main("sweep", exp, "--out", copy, "--no-report")
    assert proc.returncode == 0, proc.stderr
    kept = list(copy.glob("results.*.jsonl"))
    assert len(kept) == 1 and kept[0].read_text() == (out / "results.jsonl").read_text()
    assert len(load_tables(copy)[1]) == 1


def test_spawn_timeout_ends_every_process_and_ignores_stale_hand_backs(tmp_path):
    """A launch past its timeout is recorded as timed_out, and its ranks and their DataLoader
    workers are gone; a hand-back left by an earlier interrupted launch is never read."""
    import psutil

    spec = resolve(JobSpec(world_size=2, model_size="xs", batch_size=8, steps=100_000, threads_per_rank=1,
                           loader_workers=1), Machine.here())
    work = tmp_path / "work"
    work.mkdir()
    (work / "error.rank0.json").write_text('{"rank": 0, "phase": "measure", "step": 1, "time": 0, "error": "stale"}')
    start = time.monotonic()
    outcome = SpawnLauncher().launch(spec, 0, work, tmp_path / "logs", timeout_s=8)
    assert time.monotonic() - start < 8 + 10
    assert outcome.status == "timed_out" and "8 s timeout" in outcome.error and "stale" not in outcome.error
    leftovers = [p for p in psutil.process_iter(["cmdline"]) if str(work) in " ".join(p.info["cmdline"] or [])]
    assert not leftovers and not rank_processes(str(tmp_path))  # forked ranks and their loader workers too


def test_the_torchrun_launcher_gives_what_spawn_gives(uninterrupted, tmp_path):
    """The same experiment through `torchrun --standalone`: the same jobs and the same columns in
    every table, every replica identical, the launcher named in each run record. (Held against the
    uninterrupted sweep's two jobs, one of each world size, already run with spawn.)"""
    spawned = uninterrupted
    exp = write_experiment(tmp_path / "tiny.toml", LONGER)
    out = tmp_path / "out"
    proc = run_main("sweep", exp, "--out", out, "--no-report", "--launcher", "torchrun")
    assert proc.returncode == 0, proc.stderr
    runs = assert_stores_what_spawn_stores(out, spawned, "torchrun")
    assert sorted(p.name for p in out.glob("logs/*/*.log")) == sorted(f"{k}-r0.torchrun.log" for k in runs["key"])
