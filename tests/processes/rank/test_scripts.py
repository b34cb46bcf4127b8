"""Script jobs: an unchanged torchrun script measured through its DDP model (docs/scripts.md).

The example script's sweep runs as a user runs it (``python -m ddpbench``, a new process); the other
sweeps and the readers run the command line's ``main()`` in this process (``run_main``): what they
test is what was stored and said, and a sweep here starts no interpreter of its own (nor, under the
spawn launcher, a fork server: its ranks are forked from this process' server)."""

import json
import math
import shutil
import textwrap
from pathlib import Path

from ddpbench.analysis.summary.table import summarize
from ddpbench.results.tables import load
from ddpbench.testing import ROOT, rank_processes, run_cli, run_main, script_experiment, write_experiment

EXAMPLE = ROOT / "experiments" / "scripts" / "train_cnn.py"
#: the example made small: a few hundred samples, narrow convolutions
SMALL_ARGS = '["--epochs", "3", "--samples", "256", "--batch-size", "8", "--width", "4", "--snapshot-every", "1"]'


# ---------------------------------------------------------------------------------------------
# the example script through the sweep, compare and the report (slow: starts ranks)
# ---------------------------------------------------------------------------------------------

def _example_experiment(tmp_path: Path, extra: str = "") -> Path:
    scripts = tmp_path / "scripts"
    scripts.mkdir(exist_ok=True)
    shutil.copy(EXAMPLE, scripts / EXAMPLE.name)
    return script_experiment(tmp_path / "script.toml", f"""
        script = "scripts/{EXAMPLE.name}"
        script_args = {SMALL_ARGS}
        {extra}
        [grid]
        world_size = [1, 2]
    """, timeout_s=120, name="script-small")


def _records(out: Path) -> list[dict]:
    return [r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines()) if r["kind"] == "run"]


def test_the_example_script_through_sweep_compare_and_report(tmp_path):
    exp = _example_experiment(tmp_path)
    out = tmp_path / "out"
    done = run_cli("sweep", exp, "--out", out)
    assert done.returncode == 0, done.stderr[-3000:]
    records = _records(out)
    assert [r["status"] for r in records] == ["ok", "ok"]
    for record in records:
        result, ws = record["result"], record["spec"]["world_size"]
        script = result["script"]
        assert script["ended"] == "stopped" and script["samples_per_step"] == [8]
        # DDP's own all-reduce ran unwrapped: no bucket timing, no late-completion check
        assert script["unseen"] == {} and script["late_comm_steps"] is None and script["comm"] == "builtin"
        assert script["ddp"]["bucket_cap_mb"] == 25.0
        assert script["nosync_allreduced"] == 0 and script["skipped_steps"] == [] and script["optimizers"] == ["SGD"]
        rows = [dict(zip(result["step_columns"], row)) for row in result["steps"]]
        assert {(r["phase"]) for r in rows} == {"warmup", "phases", "measure", "nosync"}
        assert len(rows) == ws * (2 + 5 + 5 + 5)
        for row in rows:
            if row["phase"] == "warmup" and row["step"] == 0:
                continue  # its data phase starts at its own forward
            if row["phase"] in ("measure", "nosync"):  # timed by their end alone
                assert row["step_ms"] > 0 and row["forward_ms"] is None and math.isnan(row["ready_ms"])
                continue
            if row["phase"] == "phases":  # the last gradient of the step, inside its backward
                assert row["data_ms"] + row["forward_ms"] < row["ready_ms"] <= (
                    row["data_ms"] + row["forward_ms"] + row["backward_ms"])
            assert row["forward_ms"] > 0 and row["backward_ms"] > 0 and row["optimizer_ms"] > 0
            assert row["data_ms"] > 0 and row["comm_ms"] == 0
            parts = sum(row[p] for p in ("data_ms", "forward_ms", "backward_ms", "comm_ms", "optimizer_ms"))
            assert math.isclose(parts, row["step_ms"], rel_tol=1e-6)
        ranks = result["ranks"]
        assert len({r["checksum"] for r in ranks}) == 1
        assert all(r["bucket_comm_ms"] is None and len(r["bucket_bytes"]) >= 1 for r in ranks)
        assert all(r["peak_rss_mb"] > 0 and r["rank_memory_mb"] > 0 for r in ranks)  # read before the snapshot
        assert result["compute"]["workload"].startswith("train_cnn.py")
        assert result["check"]["skipped"]
    # the script wrote its snapshots in the launch's scratch folder, which went with it
    assert not (tmp_path / "scripts" / "snapshots").exists() and not (out / ".work").exists()
    assert "train_cnn.py" in done.stdout
    assert (out / "index.html").is_file()

    again = tmp_path / "again"
    shutil.copytree(out, again)
    compared = run_main("compare", out, again)
    assert compared.returncode == 0, compared.stderr[-2000:]
    assert "train_cnn.py" in compared.stdout
    exported = run_main("export-benchmark", out, "--out", tmp_path / "bench.json")
    assert exported.returncode == 0, exported.stderr[-2000:]

    table = summarize(load(out)).set_index("world_size")
    assert table.loc[2, "speedup"] > 0 and table.loc[2, "exposed_comm_ms"] == table.loc[2, "exposed_comm_ms"]
    assert table.loc[1, "nosync_step_ms"] > 0


def test_a_script_left_to_run_to_its_end(tmp_path):
    exp = _example_experiment(tmp_path, "script_to_end = true")
    out = tmp_path / "out"
    # a results folder given relative to the current folder: the ranks hand back there after the script ran
    # in a folder of its own
    done = run_main("sweep", exp.name, "--out", "out", "--no-report", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    for record in _records(out):
        assert record["result"]["script"]["ended"] == "ended"
        assert record["result"]["script"]["destroy_deferred"] is True
        log = (tmp_path / record["logs"][0]).read_text()
        assert "epoch 2:" in log  # every epoch ran, and the script printed its own timing


# ---------------------------------------------------------------------------------------------
# scripts that break the rules: one line each, nothing left running
# ---------------------------------------------------------------------------------------------

PREAMBLE = """
import sys, time, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
def model():
    return torch.nn.Linear(4, 2)
def step(ddp, opt):
    opt.zero_grad()
    ddp(torch.randn(8, 4)).sum().backward()
    opt.step()
"""
BAD_SCRIPTS = {
    "no_ddp.py": ("m = model(); opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
                  "for _ in range(20):\n    m(torch.randn(8, 4)).sum().backward(); opt.step()\n",
                  "stepped an optimizer before it built DistributedDataParallel"),
    "never_ddp.py": ("print('nothing to train')\n", "ended without building DistributedDataParallel"),
    "two_ddp.py": ("a = DDP(model()); b = DDP(model())\n", "builds a second DistributedDataParallel"),
    "no_step.py": ("ddp = DDP(model())\nfor _ in range(20):\n    ddp(torch.randn(8, 4)).sum().backward()\n",
                   "without stepping an optimizer"),
    "early.py": ("ddp = DDP(model()); opt = torch.optim.SGD(ddp.parameters(), lr=0.1)\n"
                 "for _ in range(3):\n    step(ddp, opt)\nsys.exit(0)\n",
                 "exited after 3 optimizer steps; the job needs 17"),
    "crash.py": ("ddp = DDP(model()); opt = torch.optim.SGD(ddp.parameters(), lr=0.1)\n"
                 "step(ddp, opt)\nraise ValueError('bad data')\n",
                 "the script raised ValueError: bad data (after 1 optimizer steps)"),
    "exit3.py": ("sys.exit(3)\n", "the script exited with code 3 after 0 optimizer steps"),
    "gpu.py": ("ddp = DDP(model().cuda())\n", "the script needs a GPU"),
    "batch.py": ("ddp = DDP(model()); opt = torch.optim.SGD(ddp.parameters(), lr=0.1)\n"
                 "for _ in range(20):\n    opt.zero_grad(); ddp(torch.randn(5, 4)).sum().backward(); opt.step()\n",
                 "took 5 samples in its first optimizer step on rank 0, and the job counts 8 per rank"),
}


def test_bad_scripts_fail_with_their_reason(tmp_path):
    grids = []
    for name, (body, _) in BAD_SCRIPTS.items():
        (tmp_path / name).write_text(PREAMBLE + body)
        grids.append(f'[[grid]]\nscript = ["{name}"]\nworld_size = [{2 if name == "early.py" else 1}]\n')
    exp = script_experiment(tmp_path / "bad.toml", "\n".join(grids))
    out = tmp_path / "out"
    done = run_main("sweep", exp, "--out", out, "--no-report")
    assert done.returncode == 1
    errors = {Path(r["spec"]["script"]).name: r for r in _records(out)}
    for name, (_, words) in BAD_SCRIPTS.items():
        record = errors[name]
        assert record["status"] == "failed", (name, record["error"])
        assert words in record["error"], (name, record["error"])
        assert "\n" not in record["error"]
    assert rank_processes(str(out)) == []


def test_a_script_that_hangs_times_out_and_leaves_nothing(tmp_path):
    (tmp_path / "hang.py").write_text(PREAMBLE + "ddp = DDP(model()); opt = torch.optim.SGD(ddp.parameters(), lr=0.1)\n"
                                      "step(ddp, opt)\nwhile True:\n    time.sleep(0.1)\n")
    exp = write_experiment(tmp_path / "hang.toml", """
        timeout_s = 12  # time enough for warmup step 1 (3-4 s idle), short: the test waits it out
        [defaults]
        script = "hang.py"
        batch_size = 8
        backend = "gloo"
        device = "cpu"
        threads_per_rank = 1
        [grid]
        world_size = [2]
    """)
    out = tmp_path / "out"
    done = run_main("sweep", exp, "--out", out, "--no-report")
    assert done.returncode == 1
    (record,) = _records(out)
    assert record["status"] == "timed_out"
    assert "no result within the 12 s timeout" in record["error"] and "script warmup step 1" in record["error"]
    assert rank_processes(str(out)) == []


def test_a_script_whose_measured_steps_outlast_the_stall_limit_is_not_taken_for_hung(tmp_path):
    """A script's measured steps write nothing each step (the fast path); its rank says which step it is at
    once a second, so steps of a second each, three of them, run past a stall limit of 2.5 s unharmed."""
    (tmp_path / "slow.py").write_text(PREAMBLE + "ddp = DDP(model()); opt = torch.optim.SGD(ddp.parameters(), lr=0.1)\n"
                                      "while True:\n    time.sleep(1.0)\n    step(ddp, opt)\n")
    exp = write_experiment(tmp_path / "slow.toml", """
        timeout_s = 120
        stall_s = 2.5
        [defaults]
        script = "slow.py"
        batch_size = 8
        backend = "gloo"
        device = "cpu"
        threads_per_rank = 1
        warmup_steps = 1
        steps = 3
        [grid]
        world_size = [2]
    """)
    out = tmp_path / "out"
    done = run_main("sweep", exp, "--out", out, "--no-report")
    (record,) = _records(out)
    assert done.returncode == 0 and record["status"] == "ok", record["error"]
    rows = [dict(zip(record["result"]["step_columns"], row)) for row in record["result"]["steps"]]
    assert min(r["step_ms"] for r in rows if r["phase"] == "measure") > 900  # each measured step took its second


def test_a_missing_script_is_bad_input(tmp_path):
    exp = write_experiment(tmp_path / "exp.toml", '[defaults]\nscript = "nope.py"\n')
    done = run_main("sweep", exp, "--out", tmp_path / "out")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "script: no such file" in done.stderr


def test_a_script_under_torchrun_gets_the_sweeps_bucket_caps(tmp_path):
    (tmp_path / "mlp.py").write_text(PREAMBLE + textwrap.dedent("""
        torch.manual_seed(0)
        ddp = DDP(torch.nn.Sequential(torch.nn.Linear(4, 256), torch.nn.ReLU(), torch.nn.Linear(256, 64)))
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        for _ in range(40):
            step(ddp, opt)
        dist.destroy_process_group()
    """))
    exp = script_experiment(tmp_path / "caps.toml", """
        script = "mlp.py"
        [grid]
        world_size = [2]
        bucket_cap_mb = [0.02, 25]
    """, timeout_s=120)
    out = tmp_path / "out"
    done = run_main("sweep", exp, "--out", out, "--launcher", "torchrun", "--no-report")
    assert done.returncode == 0, done.stderr[-3000:]
    buckets = {r["spec"]["bucket_cap_mb"]: r["result"]["ranks"][0]["bucket_bytes"] for r in _records(out)}
    assert len(buckets[25.0]) == 1 and len(buckets[0.02]) > 1  # the job's cap, not DDP's default
    assert all(r["launcher"] == "torchrun"
               and r["result"]["script"]["ddp"]["bucket_cap_mb"] == r["spec"]["bucket_cap_mb"] for r in _records(out))
    assert rank_processes(str(out)) == []
