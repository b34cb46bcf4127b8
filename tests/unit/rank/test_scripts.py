"""Script jobs: an unchanged torchrun script measured through its DDP model (docs/scripts.md)."""

import textwrap
from pathlib import Path

import pytest

from ddpbench.errors import InputError
from ddpbench.experiment.load import load_experiment
from ddpbench.experiment.script_names import script_label
from ddpbench.experiment.spec import JobSpec, check_script_args
from ddpbench.rank.script.rank import script_argv
from ddpbench.testing import write_experiment

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
    from ddpbench.rank.script.instrument import Instrument
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

    from ddpbench.rank.script.steps import StopScript

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


# ---------------------------------------------------------------------------------------------
# where a script's rank is on its fast path (no process started)
# ---------------------------------------------------------------------------------------------

def test_on_the_fast_path_the_step_under_way_is_the_steps_counted_and_the_spans_taken_since():
    from types import SimpleNamespace

    from ddpbench.rank.script.instrument import Instrument

    first = {"measure": 4, "nosync": 7}.__getitem__
    on_it = SimpleNamespace(kind="measure", _spans=[(0, 1), (1, 2)], _fast=object(), counted=4, first_of=first)
    assert Instrument.fast_at(on_it) == ("measure", 2)  # steps 4 and 5 ended: measure step 2 under way
    assert Instrument.fast_at(SimpleNamespace(**{**vars(on_it), "_fast": None})) is None  # off it: its own lines


def test_a_script_rank_says_its_step_once_a_pulse_where_it_moved_and_never_where_it_did_not(monkeypatch):
    import threading

    from ddpbench.rank.protocol import Tracked
    from ddpbench.rank.script import rank as script_rank

    monkeypatch.setattr(script_rank, "PULSE_S", 0.005)
    stop = threading.Event()
    seen = [None, ("measure", 0), ("measure", 0), ("measure", 2), None, ("nosync", 0), ("nosync", 0)]
    said = []

    class Rank(Tracked):
        instrument = None

        def at(self, phase, step=-1):
            said.append((phase, step))

    def fast_at():
        if len(seen) == 1:
            stop.set()
        return seen.pop(0)

    rank = Rank()
    rank.instrument = type("Instrument", (), {"fast_at": staticmethod(fast_at)})()
    script_rank.ScriptRank.pulse(rank, stop)
    assert said == [("script measure", 0), ("script measure", 2), ("script nosync", 0)]
