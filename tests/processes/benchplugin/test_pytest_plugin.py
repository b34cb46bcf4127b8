"""The ddp_group fixture in a user's own suite, run by pytest in a subprocess (pytester, monkeypatch): it is
found through the pytest11 entry point, saves a baseline with this machine's fingerprint (filed by
``history add`` under the machine of this machine's sweeps), and a planted 9x slowdown fails
pytest-benchmark's --benchmark-compare-fail gate that the same code passes; the group is closed
before a test that does not use it."""

import json

from ddpbench.results.history import entries, fingerprint, machine_id
from ddpbench.sweep.environment import collect_env
from ddpbench.testing import run_main

USER_SUITE = '''
import os

import torch

from ddpbench.tasks import ModelStep

#: planted regression: each timed call runs this many DDP steps (the test plants 9: nine times the work)
STEPS_PER_CALL = int(os.environ.get("PLANTED_STEPS_PER_CALL", "1"))


def make_model():
    return torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))


def make_batch(rank, world_size):
    gen = torch.Generator().manual_seed(rank)
    return torch.randn(64, 256, generator=gen), torch.randint(0, 10, (64,), generator=gen)


def test_my_ddp_step(benchmark, ddp_group):
    step = ddp_group.prepare(ModelStep(make_model, make_batch, world_size=2, backend="gloo", device="cpu",
                                       ddp={"bucket_cap_mb": 1}))

    def timed():
        for _ in range(STEPS_PER_CALL):
            step()

    benchmark(timed)
'''

#: enough rounds for a clean fastest round of a few-ms step (a 1 MB model: steps of 1 ms scatter more)
ROUNDS = ("--benchmark-min-rounds=50", "--benchmark-max-time=1", "--benchmark-warmup=on")


#: one gate for the same code and the planted run: the fastest round against the baseline's. A shared machine's
#: noise only adds time, so the fastest round drifts least between identical runs: sixteen runs of this suite on
#: the 2-core VM, every other one beside a busy core, gave fastest rounds of 3.81-7.32 ms (1.92x) and medians of
#: 6.70-20.03 ms (2.99x) (benchmarks/measured.md). Nine steps a call cannot run faster
#: than nine clean steps, so a gate at three times the baseline's fastest round (the square root of nine) holds
#: either way while the machine drifts less than 3x: the same code passes it (retried below for a run past it),
#: and the planted run fails it.
PLANTED = 9
GATE = ("--benchmark-compare=0001", "--benchmark-compare-fail=min:200%")


#: a test after the user's: the group owns the default process group, and a later test may need to make its own
OWN_GROUP = '''
import torch.distributed as dist

def test_own_process_group(tmp_path):
    assert not dist.is_initialized()
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/pg", rank=0, world_size=1)
    dist.destroy_process_group()
'''


def run_suite(pytester, monkeypatch, *args, steps_per_call=1):
    pytester.makepyfile(test_user_suite=USER_SUITE, test_z_own_group=OWN_GROUP)
    # a subprocess, like a user's own pytest run: the plugin must come from the installed entry point
    monkeypatch.setenv("PLANTED_STEPS_PER_CALL", str(steps_per_call))
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *ROUNDS, *args, timeout=300)


def test_the_fixture_times_a_users_ddp_step_saves_it_and_a_planted_9x_slowdown_fails_the_gate(pytester, monkeypatch):
    """One user's suite, run three to five times (each run starts pytest, torch and two ranks: one test, not three).

    The first saves what it measured, and the group is closed before a test that does not use it
    (``test_own_process_group`` makes its own); the second, the same code again, passes the compare gate;
    the last, with every timed call doing nine steps, fails it."""
    result = run_suite(pytester, monkeypatch, "--benchmark-autosave")
    result.assert_outcomes(passed=2)
    saved = list(pytester.path.glob(".benchmarks/*/0001_*.json"))
    assert len(saved) == 1
    bench = json.loads(saved[0].read_text())["benchmarks"]
    assert len(bench) == 1
    bench = bench[0]
    info = bench["extra_info"]
    assert info["model_fn"] == "test_user_suite.make_model"
    assert info["world_size"] == 2 and info["backend"] == "gloo" and info["device"] == "cpu"
    assert info["ddp"] == {"bucket_cap_mb": 1} and info["params"] == 256 * 1024 + 1024 + 1024 * 10 + 10
    assert bench["stats"]["rounds"] >= 50 and bench["stats"]["median"] > 0
    # the plugin's fingerprint: a sweep's environment block's fields, so the run files with this machine's sweeps
    env = collect_env()
    machine = json.loads(saved[0].read_text())["machine_info"]["ddpbench"]
    assert machine == fingerprint(env) and machine["cpu_model"] == env["cpu_model"]
    store = pytester.path / "history"
    filed = run_main("history", "add", saved[0], "--store", store, "--commit", "1a2b3c4", "--repo", pytester.path)
    assert filed.returncode == 0, filed.stderr
    [entry] = entries(store)
    assert entry.kind == "benchmark" and entry.machine == machine_id(fingerprint(env)) and entry.commit == "1a2b3c4"
    assert (entry.path / "benchmark.json").read_bytes() == saved[0].read_bytes()

    # the same code again passes the gate, in one of three runs: it is not just always failing. (A gate of 60 % on
    # the median failed it on a fresh clone and in CI: the VM's own drift, 2.2x once, with no other test running.)
    # Only the gate's own verdict is tried again, and each such try is printed with its figures.
    for attempt in range(1, 4):
        same = run_suite(pytester, monkeypatch, *GATE)
        if same.ret == 0:
            break
        same.stdout.fnmatch_lines(["test_user_suite.py .*", "test_z_own_group.py .*"])
        same.stderr.fnmatch_lines(["Performance has regressed:", "*test_my_ddp_step*Field 'min' has failed*"])
        print(f"the same code failed the gate, try {attempt}:",
              *[line for line in same.stderr.lines if "has failed" in line])
    assert same.ret == 0, same.stderr.str()
    same.assert_outcomes(passed=2)

    slower = run_suite(pytester, monkeypatch, *GATE, steps_per_call=PLANTED)
    assert slower.ret != 0
    slower.stderr.fnmatch_lines(["Performance has regressed:",
                                 "*test_my_ddp_step*Field 'min' has failed PercentageRegressionCheck*"])
