"""Script jobs: an unchanged torchrun script measured through its DDP model (docs/scripts.md)."""

import json
import math
import shutil
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT, rank_processes, run_cli, script_experiment, write_experiment
from ddpbench.errors import InputError
from ddpbench.experiment.load import load_experiment
from ddpbench.experiment.spec import JobSpec, check_script_args, script_label
from ddpbench.rank.script import script_argv

EXAMPLE = ROOT / "experiments" / "scripts" / "train_cnn.py"
#: the example made small: a few hundred samples, narrow convolutions
SMALL_ARGS = '["--epochs", "3", "--samples", "256", "--batch-size", "8", "--width", "4", "--snapshot-every", "1"]'


# ---------------------------------------------------------------------------------------------
# fields and loading (no process started)
# ---------------------------------------------------------------------------------------------

def test_script_args_are_stored_as_json_text():
    assert check_script_args(["--epochs", 3]) == '["--epochs", "3"]'
    assert check_script_args("--epochs 3 --name 'a b'") == '["--epochs", "3", "--name", "a b"]'
    assert check_script_args('["--lr", "0.1"]') == '["--lr", "0.1"]'  # as stored: read back unchanged
    assert check_script_args([]) == "" and check_script_args("") == ""
    for bad in ([True], [["nested"]], {"a": 1}, "[not json"):
        with pytest.raises(ValueError):
            check_script_args(bad)
    assert script_label("scripts/train.py", '["--epochs", "3"]') == "train.py --epochs 3"


def test_the_script_folder_is_not_part_of_the_key():
    here = JobSpec(script="train.py", script_dir="/a/checkout")
    there = JobSpec(script="train.py", script_dir="/another/checkout")
    assert here.key == there.key != JobSpec(script="other.py", script_dir="/a/checkout").key
    assert here.model_label == "train.py"


def _experiment(tmp_path: Path, defaults: str, script: str | None = "train.py") -> Path:
    if script:
        (tmp_path / script).write_text("print('hi')\n")
    return write_experiment(tmp_path / "exp.toml", "[defaults]\n" + textwrap.dedent(defaults) +
                            "threads_per_rank = 1\n[grid]\nworld_size = [1, 2]\n")


def test_a_script_is_found_beside_the_experiment_file(tmp_path, cpu_machine):
    (tmp_path / "data").mkdir()
    exp = _experiment(tmp_path, 'script = "train.py"\nscript_args = ["--data", "data", "--out", "new"]\n')
    jobs = load_experiment(exp, cpu_machine).jobs
    assert [s.world_size for s in jobs] == [1, 2]
    spec = jobs[0]
    assert spec.script == "train.py" and spec.script_dir == str(tmp_path.resolve())
    # an argument naming something beside the experiment file is passed as its full path; others as written
    assert script_argv(spec) == [str(tmp_path.resolve() / "train.py"), "--data", str(tmp_path.resolve() / "data"),
                                 "--out", "new"]


@pytest.mark.parametrize("defaults, key, words", [
    ('script = "missing.py"\n', "script", "no such file"),
    ('script = "train.txt"\n', "script", "the path of a Python script"),
    ('script = "train.py"\nmodel = "cnn"\n', "model", "is the script's to decide"),
    ('script = "train.py"\noptimizer = "adam"\n', "optimizer", "is the script's to decide"),
    ('script = "train.py"\ngrad_accum = 2\n', "grad_accum", "is the script's to decide"),
    ('script = "train.py"\nprecision = "bf16"\n', "precision", "is the script's to decide"),
    ('script = "train.py"\nstrategy = "master"\n', "strategy", "allowed with script: 'ddp'"),
    ('script_args = ["--x"]\n', "script_args", "applies to a script job only"),
    ('script = "train.py"\ntrace_steps = 2\n', "trace_steps", "not available for a script job"),
])
def test_bad_script_fields_are_one_line(tmp_path, cpu_machine, defaults, key, words):
    exp = _experiment(tmp_path, defaults)
    with pytest.raises(InputError, match=words) as err:
        load_experiment(exp, cpu_machine)
    assert err.value.key.removeprefix("defaults.") == key and str(exp) in str(err.value) and "\n" not in str(err.value)


# ---------------------------------------------------------------------------------------------
# the example script through the sweep, compare and the report (slow: starts ranks)
# ---------------------------------------------------------------------------------------------

def _example_experiment(tmp_path: Path, extra: str = "") -> Path:
    scripts = tmp_path / "scripts"
    scripts.mkdir(exist_ok=True)
    shutil.copy(EXAMPLE, scripts / EXAMPLE.name)
    return write_experiment(tmp_path / "script.toml", f"""
        name = "script-small"
        timeout_s = 120
        [defaults]
        script = "scripts/{EXAMPLE.name}"
        script_args = {SMALL_ARGS}
        batch_size = 8
        backend = "gloo"
        device = "cpu"
        threads_per_rank = 1
        warmup_steps = 2
        steps = 5
        {extra}
        [grid]
        world_size = [1, 2]
    """)


def _records(out: Path) -> list[dict]:
    return [r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines()) if r["kind"] == "run"]


@pytest.mark.slow
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
    compared = run_cli("compare", out, again)
    assert compared.returncode == 0, compared.stderr[-2000:]
    assert "train_cnn.py" in compared.stdout
    exported = run_cli("export-benchmark", out, "--out", tmp_path / "bench.json")
    assert exported.returncode == 0, exported.stderr[-2000:]

    from ddpbench.analysis.summary import summarize
    from ddpbench.results.tables import load

    table = summarize(load(out)).set_index("world_size")
    assert table.loc[2, "speedup"] > 0 and table.loc[2, "exposed_comm_ms"] == table.loc[2, "exposed_comm_ms"]
    assert table.loc[1, "nosync_step_ms"] > 0


@pytest.mark.slow
def test_a_script_left_to_run_to_its_end(tmp_path):
    exp = _example_experiment(tmp_path, "script_to_end = true")
    out = tmp_path / "out"
    # a results folder given relative to the current folder: the ranks hand back there after the script ran
    # in a folder of its own
    done = run_cli("sweep", exp.name, "--out", "out", "--no-report", cwd=tmp_path)
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
                 "for _ in range(3):\n    step(ddp, opt)\nsys.exit(0)\n", "exited after 3 optimizer steps; the job needs 17"),
    "crash.py": ("ddp = DDP(model()); opt = torch.optim.SGD(ddp.parameters(), lr=0.1)\n"
                 "step(ddp, opt)\nraise ValueError('bad data')\n",
                 "the script raised ValueError: bad data (after 1 optimizer steps)"),
    "exit3.py": ("sys.exit(3)\n", "the script exited with code 3 after 0 optimizer steps"),
    "gpu.py": ("ddp = DDP(model().cuda())\n", "the script needs a GPU"),
    "batch.py": ("ddp = DDP(model()); opt = torch.optim.SGD(ddp.parameters(), lr=0.1)\n"
                 "for _ in range(20):\n    opt.zero_grad(); ddp(torch.randn(5, 4)).sum().backward(); opt.step()\n",
                 "took 5 samples in its first optimizer step on rank 0, and the job counts 8 per rank"),
}


@pytest.mark.slow
def test_bad_scripts_fail_with_their_reason(tmp_path):
    grids = []
    for name, (body, _) in BAD_SCRIPTS.items():
        (tmp_path / name).write_text(PREAMBLE + body)
        grids.append(f'[[grid]]\nscript = ["{name}"]\nworld_size = [{2 if name == "early.py" else 1}]\n')
    exp = script_experiment(tmp_path / "bad.toml", "\n".join(grids))
    out = tmp_path / "out"
    done = run_cli("sweep", exp, "--out", out, "--no-report")
    assert done.returncode == 1
    errors = {Path(r["spec"]["script"]).name: r for r in _records(out)}
    for name, (_, words) in BAD_SCRIPTS.items():
        record = errors[name]
        assert record["status"] == "failed", (name, record["error"])
        assert words in record["error"], (name, record["error"])
        assert "\n" not in record["error"]
    assert rank_processes(str(out)) == []


@pytest.mark.slow
def test_a_script_that_hangs_times_out_and_leaves_nothing(tmp_path):
    (tmp_path / "hang.py").write_text(PREAMBLE + "ddp = DDP(model()); opt = torch.optim.SGD(ddp.parameters(), lr=0.1)\n"
                                      "step(ddp, opt)\nwhile True:\n    time.sleep(0.1)\n")
    exp = write_experiment(tmp_path / "hang.toml", """
        timeout_s = 30
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
    done = run_cli("sweep", exp, "--out", out, "--no-report")
    assert done.returncode == 1
    (record,) = _records(out)
    assert record["status"] == "timed_out"
    assert "no result within the 30 s timeout" in record["error"] and "script warmup step 1" in record["error"]
    assert rank_processes(str(out)) == []


@pytest.mark.slow
def test_a_missing_script_is_bad_input(tmp_path):
    exp = write_experiment(tmp_path / "exp.toml", '[defaults]\nscript = "nope.py"\n')
    done = run_cli("sweep", exp, "--out", tmp_path / "out")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "script: no such file" in done.stderr


def test_trace_steps_from_the_command_line_is_refused_for_a_script(tmp_path, cpu_machine):
    from ddpbench.experiment.overrides import with_job_flags

    experiment = load_experiment(_experiment(tmp_path, 'script = "train.py"\n'), cpu_machine)
    with pytest.raises(InputError, match="not available for a script job") as err:
        with_job_flags(experiment, {"trace_steps": 2})
    assert err.value.key == "--trace-steps"


# ---------------------------------------------------------------------------------------------
# the hooks in this process: a gloo group of one
# ---------------------------------------------------------------------------------------------

def _instrumented(**fields):
    from ddpbench.rank.instrument import Instrument
    from ddpbench.rank.timing import HostClock

    spec = JobSpec(script="x.py", batch_size=8, world_size=1, backend="gloo", device="cpu", warmup_steps=1,
                   steps=2, threads_per_rank=1, **fields)
    instrument = Instrument(spec, 0, HostClock())
    instrument.install()
    return instrument


def test_the_hooks_time_each_phase_and_stop_at_a_step_boundary(group_of_one):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from ddpbench.rank.instrument import StopScript

    instrument = _instrumented(bucket_cap_mb=0.5)
    try:
        ddp = DistributedDataParallel(torch.nn.Linear(4, 2), bucket_cap_mb=100)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        other = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)  # not the DDP model's: not counted
        measured = None
        with pytest.raises(StopScript):
            for step in range(100):
                opt.zero_grad()
                ddp(torch.randn(8, 4)).sum().backward()
                with torch.no_grad():
                    ddp(torch.randn(3, 4))  # evaluation: no step's forward, no samples
                ddp.eval()
                ddp(torch.randn(3, 4))  # nor in eval mode, even with gradients on
                ddp.train()
                opt.step()
                other.step()
                if step == 4:  # the last measured step (1 warm-up + 2 with the phase hooks + 2 measured)
                    measured = [p.detach().clone() for p in ddp.parameters()]
    finally:
        instrument.uninstall()
    assert step == 6 and instrument.steps_done == 7
    assert [(r[1], r[2]) for r in instrument.rows] == [("warmup", 0), ("phases", 0), ("phases", 1), ("measure", 0),
                                                        ("measure", 1), ("nosync", 0), ("nosync", 1)]
    assert instrument.step_samples == [8] * 3 and instrument.unseen == {}  # the steps with the phase hooks
    assert instrument.ddp_settings["bucket_cap_mb"] == 0.5  # the job's, not the script's 100
    hooked = [r for r in instrument.rows if r[1] in ("warmup", "phases")]
    assert all(r[4] > 0 and r[5] > 0 and r[6] == 0 and r[7] > 0 for r in hooked)
    # the measured steps carry the step boundary alone: their time, no phases
    assert all(r[3:8] == [None] * 5 and r[8] > 0 for r in instrument.rows if r not in hooked)
    # the no-sync steps are undone: the model is as the measured steps left it
    assert all(torch.equal(a, b) for a, b in zip(measured, ddp.parameters()))
    assert ddp.require_backward_grad_sync and instrument.nosync_allreduced == 0
    assert instrument.comm == "builtin" and instrument.bucket_comm_ms() is None  # DDP's own all-reduce, untouched
    assert type(ddp) is DistributedDataParallel and ddp.__dict__["require_backward_grad_sync"] is True
    assert DistributedDataParallel.__init__.__name__ == "__init__" and dist.is_initialized()


def test_a_phase_that_cannot_be_seen_is_unknown(group_of_one):
    import torch
    from torch.nn.parallel import DistributedDataParallel

    instrument = _instrumented(script_to_end=True)
    try:
        ddp = DistributedDataParallel(torch.nn.Linear(4, 2))
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        for _ in range(8):
            opt.zero_grad()
            loss = ddp(torch.randn(8, 4)).sum()
            loss.backward()
            opt.step()
            opt.step()  # a step without a forward of its own
    finally:
        instrument.uninstall()
    assert instrument.steps_done == 7 and instrument.done  # run to its end: steps after ddpbench's not counted
    # each step without a forward of its own is unseen; only the steps with the phase hooks can tell
    assert instrument.unseen == {"an optimizer step without a forward of the DDP model": 1}
    unseen = [r for r in instrument.rows if r[1] in ("warmup", "phases") and r[4] is None]
    assert len(unseen) == 1 and all(r[5] is None and r[6] is None and r[7] is None and r[8] > 0 for r in unseen)


@pytest.mark.slow
def test_a_script_under_torchrun_gets_the_sweeps_bucket_caps(tmp_path):
    (tmp_path / "mlp.py").write_text(PREAMBLE + textwrap.dedent("""
        torch.manual_seed(0)
        ddp = DDP(torch.nn.Sequential(torch.nn.Linear(4, 256), torch.nn.ReLU(), torch.nn.Linear(256, 64)))
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        for _ in range(40):
            step(ddp, opt)
        dist.destroy_process_group()
    """))
    exp = write_experiment(tmp_path / "caps.toml", """
        timeout_s = 120
        [defaults]
        script = "mlp.py"
        batch_size = 8
        backend = "gloo"
        device = "cpu"
        threads_per_rank = 1
        warmup_steps = 2
        steps = 5
        [grid]
        world_size = [2]
        bucket_cap_mb = [0.02, 25]
    """)
    out = tmp_path / "out"
    done = run_cli("sweep", exp, "--out", out, "--launcher", "torchrun", "--no-report")
    assert done.returncode == 0, done.stderr[-3000:]
    buckets = {r["spec"]["bucket_cap_mb"]: r["result"]["ranks"][0]["bucket_bytes"] for r in _records(out)}
    assert len(buckets[25.0]) == 1 and len(buckets[0.02]) > 1  # the job's cap, not DDP's default
    assert all(r["launcher"] == "torchrun" and r["result"]["script"]["ddp"]["bucket_cap_mb"] == r["spec"]["bucket_cap_mb"]
               for r in _records(out))
    assert rank_processes(str(out)) == []
