"""``python -m ddpbench watch -- COMMAND`` as a user runs it: the command's own output and exit code pass
through, every rank's every step lands in the stream, and what cannot be watched says so in one line."""

import csv
import gzip
import json
import math
import os
import sys
import textwrap

import pytest

from ddpbench.rank.script.wire import STEP_COLUMNS
from ddpbench.testing.cli import ROOT, run_cli
from ddpbench.watch.stream import STREAM_FILE

LM = ROOT / "experiments" / "watch" / "train_lm.py"
ONE_RANK = {**os.environ, "OMP_NUM_THREADS": "1", "MASTER_ADDR": "127.0.0.1", "RANK": "0", "WORLD_SIZE": "1",
            "LOCAL_RANK": "0"}


def rows(out):
    with open(out / STREAM_FILE, newline="") as f:
        return list(csv.DictReader(f))


def script(tmp_path, body: str):
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(body))
    return path


def one_rank_env(port: int):
    return {**ONE_RANK, "MASTER_PORT": str(port)}


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: the steps of the watched torchrun run, and the step its straggler's fault starts at (as benchmarks/watch_alarms.py
#: plants it: the alarm's baseline and a look's window before it)
STEPS, FAULT_FROM = 700, 400


@pytest.fixture(scope="module")
def lm_watched(tmp_path_factory):
    """(the watch's completed process, its folder) of one ``watch -- torchrun`` of experiments/watch/train_lm.py on
    two ranks, rank 1 three times as slow from step :data:`FAULT_FROM` on (benchmarks/watch_faults, a user's own
    sitecustomize): what every watched torchrun streams, and the alarm its straggler raises, each looked at by a
    test of its own."""
    out = tmp_path_factory.mktemp("lm") / "watched"
    faults = ROOT / "benchmarks" / "watch_faults"
    done = run_cli("watch", "--out", out, "--", sys.executable, "-m", "torch.distributed.run", "--standalone",
                   "--nproc_per_node=2", LM, "--steps", STEPS, "--log-every", STEPS,
                   env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(faults),
                        "WATCH_FAULT": f"straggler:1:{FAULT_FROM}:3.0"}, timeout=400)
    return done, out


def test_every_step_of_both_torchrun_ranks_streams_and_the_output_passes_through(lm_watched):
    """Every step of both ranks; the steps before the alarms' baseline (which asks for every step's phases) as
    any watched run's: every tenth step's phases, the steps one after another on the wall clock."""
    from ddpbench.watch.alarms import BASELINE_FROM

    done, out = lm_watched
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"step {STEPS}: loss" in done.stdout  # the script's own line, where it would have gone
    got = rows(out)
    for rank in ("0", "1"):
        mine = [r for r in got if r["rank"] == rank]
        assert [int(r["step"]) for r in mine] == list(range(STEPS))
        first = mine[:BASELINE_FROM]
        sampled = [int(r["step"]) for r in first if r["forward_ms"]]
        assert sampled == list(range(0, BASELINE_FROM, 10))  # every tenth step's phases, from the first
        for r in first:
            if r["forward_ms"]:  # a sampled step's phases add up to it
                parts = sum(float(r[c]) for c in ("data_ms", "forward_ms", "backward_ms", "optimizer_ms"))
                assert math.isclose(parts, float(r["step_ms"]), rel_tol=1e-6)
        # a sampled step's wait for a CPU, within it (the first's began before the rank's DDP model was built)
        assert all(0 <= float(r["queued_ms"]) <= float(r["step_ms"]) for r in first[1:] if r["forward_ms"])
        assert not any(r["queued_ms"] for r in first if not r["forward_ms"]) and not first[0]["queued_ms"]
        ends = [float(r["end_s"]) for r in first]
        # each step ends one step after the one before, on the wall clock; where the hooks go on or off (a sampled
        # step, the one after it) ddpbench's own work between the two (hooking, handing rows over) is no step's
        for before, after, r, previous in zip(ends, ends[1:], first[1:], first):
            gap = after - before - float(r["step_ms"]) / 1e3
            changed = bool(r["forward_ms"]) or bool(previous["forward_ms"])
            assert -2e-3 <= gap <= (0.05 if changed else 2e-3), (r["step"], gap)
    assert list(got[0]) == ["rank", *STEP_COLUMNS, "host", "received_s"]
    assert "ended" in done.stderr and f"the stream: {out / STREAM_FILE}" in done.stderr


PLAIN = """
    import gc, sys, torch, torch.distributed as dist
    dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(12):
        opt.zero_grad(); model(torch.randn(8, 4)).sum().backward(); opt.step()
    print("trained", flush=True)
    del model, opt; gc.collect(); dist.barrier()  # gloo can abort at exit while DDP outlives its group
    dist.destroy_process_group()
    sys.exit(EXIT)
"""


#: what the one-rank script of :func:`one_rank` prints after its group is destroyed: its DDP models still alive, and
#: whether the user's own sitecustomize ran in its process (not only in watch's, whose environment it inherits)
AFTER_GROUP = """    dist.destroy_process_group()
    ddp = torch.nn.parallel.DistributedDataParallel
    print("models alive:", sum(isinstance(o, ddp) for o in gc.get_objects()), flush=True)
    import os; print("site:", os.environ.get("USER_SITE_RAN") == str(os.getpid()), flush=True)
"""


@pytest.fixture(scope="module")
def one_rank(tmp_path_factory):
    """(the watch's completed process, its folder) of one watched script of one rank (:data:`PLAIN`), a user's own
    sitecustomize on its ``PYTHONPATH``: it trains its 12 steps, sleeps a second, drops its DDP model before its
    group ends, says what is left of it (:data:`AFTER_GROUP`) and exits 3. Its exit code, the user's
    sitecustomize and the model let go are each a test's."""
    tmp = tmp_path_factory.mktemp("one-rank")
    mine = tmp / "site"
    mine.mkdir()
    (mine / "sitecustomize.py").write_text("import os\nos.environ['USER_SITE_RAN'] = str(os.getpid())\n")
    body = PLAIN.replace("EXIT", "3").replace("    dist.destroy_process_group()\n", AFTER_GROUP).replace(
        'print("trained"', 'import time; time.sleep(1.0); print("trained"')
    done = run_cli("watch", "--out", tmp / "w", "--", sys.executable, script(tmp, body),
                   env={**one_rank_env(free_port()), "PYTHONPATH": str(mine)}, timeout=120)
    return done, tmp / "w"


def test_the_command_s_exit_code_is_watch_s(one_rank):
    """...and the steps end where they ended, not where the script tore its group down a second later."""
    done, out = one_rank
    assert done.returncode == 3 and "trained" in done.stdout, done.stderr[-2000:]
    got = rows(out)
    assert [int(r["step"]) for r in got] == list(range(12))
    ends = [float(r["end_s"]) for r in got]
    assert ends[-1] - ends[0] == pytest.approx(sum(float(r["step_ms"]) for r in got[1:]) / 1e3, abs=0.01)
    assert ends[-1] < float(got[-1]["received_s"]) - 0.5  # sent at the teardown, after the sleep


def test_the_user_s_own_sitecustomize_still_runs(one_rank):
    done, out = one_rank
    assert "site: True" in done.stdout, done.stderr[-2000:]
    # ...and the watch's ran before it: the rank was watched (without its sitecustomize, no row)
    assert [int(r["step"]) for r in rows(out)] == list(range(12))


def test_the_watch_lets_go_of_the_model_before_its_group_ends(one_rank):
    """A script that drops its DDP model before the group ends (gloo's abort at exit) finds it freed: the watch
    holds it no longer once the group is destroyed."""
    done, out = one_rank
    assert "models alive: 0" in done.stdout, done.stdout + done.stderr[-2000:]
    assert [int(r["step"]) for r in rows(out)] == list(range(12))


@pytest.fixture(scope="module")
def unwatched(tmp_path_factory):
    """(the watch's completed process, its folder) of one watched script that trains without DDP, then ends itself
    by SIGTERM: what ``watch`` says of a command it could not watch, and the exit code of one a signal ended."""
    tmp = tmp_path_factory.mktemp("unwatched")
    body = """
        import os, signal, torch
        model = torch.nn.Linear(4, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad(); model(torch.randn(8, 4)).sum().backward(); opt.step()
        print("trained", flush=True)
        os.kill(os.getpid(), signal.SIGTERM)
    """
    done = run_cli("watch", "--out", tmp / "w", "--", sys.executable, script(tmp, body),
                   env=one_rank_env(free_port()), timeout=120)
    return done, tmp / "w"


def test_a_command_ended_by_a_signal_exits_as_a_shell_says(unwatched):
    done, _ = unwatched
    assert done.returncode == 128 + 15, done.stderr[-2000:]


def test_a_script_without_ddp_trains_and_is_said_unwatched(unwatched):
    done, out = unwatched
    assert "trained" in done.stdout, done.stderr[-2000:]
    assert "no rank was watched: the command built no DistributedDataParallel model" in done.stderr
    assert rows(out) == []


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    """As a user meets it, in a new process (the other refusals through the command's ``main()`` in this
    process: tests/integration/watch/test_watch_refusals.py)."""
    done = run_cli("watch", "--out", tmp_path / "w", "--", "no-such-program-xyz", timeout=60)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "'no-such-program-xyz': not found on PATH" in done.stderr, done.stderr
    assert not (tmp_path / "w").exists()


SPAWNED = """
    import gc, os, sys, torch, torch.distributed as dist, torch.multiprocessing as mp

    def train(rank, world, port):
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        dist.init_process_group("gloo", rank=rank, world_size=world)
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(STEPS):
            opt.zero_grad(); model(torch.randn(8, 4)).sum().backward(); opt.step()
            KILL
        del model, opt; gc.collect(); dist.barrier()  # gloo can abort at exit while DDP outlives its group
        dist.destroy_process_group()

    if __name__ == "__main__":
        mp.spawn(train, args=(2, sys.argv[1]), nprocs=2)
        print("spawned ranks done", flush=True)
"""


def test_the_ranks_an_mp_spawn_script_starts_are_watched(tmp_path):
    body = SPAWNED.replace("STEPS", "15").replace("KILL", "pass")
    done = run_cli("watch", "--out", tmp_path / "w", "--", sys.executable, script(tmp_path, body), free_port(),
                   env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=180)
    assert done.returncode == 0 and "spawned ranks done" in done.stdout, done.stderr[-3000:]
    got = rows(tmp_path / "w")
    assert sorted({r["rank"] for r in got}) == ["0", "1"]
    assert all([int(r["step"]) for r in got if r["rank"] == k] == list(range(15)) for k in ("0", "1"))


def test_a_rank_killed_is_said_lost_and_its_steps_until_then_are_kept(tmp_path):
    # rank 1 kills itself (SIGKILL) at its 12th step: mp.spawn then ends rank 0 and fails
    kill = "if rank == 1 and _ == 11: os.kill(os.getpid(), 9)"
    body = SPAWNED.replace("STEPS", "400").replace("KILL", kill)
    done = run_cli("watch", "--out", tmp_path / "w", "--every", "1", "--", sys.executable, script(tmp_path, body),
                   free_port(), env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=180)
    assert done.returncode != 0
    table = [line.split() for line in done.stderr.splitlines() if line.split()[:1] == ["1"]]
    assert table and table[-1][-1] == "lost", done.stderr[-3000:]
    killed = [int(r["step"]) for r in rows(tmp_path / "w") if r["rank"] == "1"]
    assert killed == list(range(len(killed))) and len(killed) <= 11


def test_watch_killed_leaves_the_command_training_to_its_end(tmp_path):
    import signal
    import subprocess
    import time

    from ddpbench.testing.cli import cli_command

    marker = tmp_path / "finished"
    body = PLAIN.replace("for _ in range(12):", "import time\n    for _ in range(60):").replace(
        "opt.step()", "opt.step(); time.sleep(0.05)").replace(
        "sys.exit(EXIT)", f"open({str(marker)!r}, 'w').write('done')")
    watch = subprocess.Popen(cli_command("watch", "--out", tmp_path / "w", "--", sys.executable,
                                         script(tmp_path, body)), env=one_rank_env(free_port()),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not rows_so_far(tmp_path / "w"):
        assert time.monotonic() < deadline and watch.poll() is None
        time.sleep(0.1)
    watch.send_signal(signal.SIGKILL)  # watch and its collector gone: the training never waits on them
    watch.wait(10)
    deadline = time.monotonic() + 90
    while not marker.exists():
        assert time.monotonic() < deadline, "the command did not train to its end"
        time.sleep(0.2)
    assert marker.read_text() == "done"


def rows_so_far(out):
    try:
        return rows(out)
    except FileNotFoundError:
        return []


def test_an_alarm_traces_every_rank_and_the_traces_are_answered(lm_watched):
    from ddpbench.traces.kinds import INPUT
    from ddpbench.watch.traced import TRACE_STEPS

    done, out = lm_watched
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out / "alarms.csv", newline="") as f:
        alarms = list(csv.DictReader(f))
    assert alarms and alarms[0]["trace"] == "traces/alarm-1"  # inside the run's folder, wherever it moves
    assert sorted(p.name for p in (out / "traces" / "alarm-1").iterdir()) == ["rank0.json.gz", "rank1.json.gz"]
    assert (out / "traces" / "alarm-1-answer" / "index.html").is_file()
    assert f"alarm 1's trace, 2 ranks: {out.resolve() / 'traces' / 'alarm-1-answer' / 'index.html'}" in done.stderr
    answer = (out / "traces" / "alarm-1-answer.txt").read_text()
    assert f"2 of 2 ranks, {TRACE_STEPS} steps" in answer
    # each traced step's data phase is a range of its own: the input pipeline, where a generator leaves none
    for rank in (0, 1):
        with gzip.open(out / "traces" / "alarm-1" / f"rank{rank}.json.gz", "rt") as f:
            events = json.load(f)["traceEvents"]
        assert sum(e.get("name") == INPUT for e in events) == TRACE_STEPS, rank
    # the traced steps carry every step's phases in the stream too
    traced = [int(r["step"]) for r in rows(out) if r["rank"] == "0" and r["forward_ms"]]
    assert any(b - a == 1 for a, b in zip(traced, traced[1:]))
