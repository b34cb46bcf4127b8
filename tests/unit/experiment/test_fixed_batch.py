"""A job at a fixed global batch (micro_batch): its accumulation at each world size, what it refuses of the rest
of the job in one line, and the strategies that cannot accumulate with one gradient exchange a step."""

import pytest

from ddpbench.errors import InputError
from ddpbench.experiment.load import parse_experiment
from ddpbench.experiment.spec import JobSpec
from ddpbench.launch.can_run import check_jobs
from ddpbench.workloads.data import loader_batch


def test_accumulation_and_micro_steps_at_each_world_size():
    for world, accumulation in ((1, 4), (2, 2), (4, 1)):
        spec = JobSpec(world_size=world, batch_size=128, scaling="strong", micro_batch=32)
        assert (spec.accumulation, spec.micro_step_batch, spec.global_batch) == (accumulation, 32, 128)
        assert loader_batch(spec, world) == 32
        assert f"accum={accumulation}" in spec.label() or accumulation == 1
    plain = JobSpec(world_size=2, batch_size=8, grad_accum=3)
    assert (plain.accumulation, plain.micro_step_batch, plain.global_batch) == (3, 8, 48)


def _job(cpu_machine, **fields):
    defaults = {"batch_size": 128, "scaling": "strong", "micro_batch": 32, "device": "cpu", "backend": "gloo",
                **fields}
    return parse_experiment({"defaults": defaults, "grid": {"world_size": [1, 2, 4]}}, "x.toml", machine=cpu_machine)


def test_a_fixed_global_batch_sweep_is_read(cpu_machine):
    jobs = _job(cpu_machine).jobs
    assert [j.accumulation for j in jobs] == [4, 2, 1]
    assert {j.global_batch for j in jobs} == {128}


@pytest.mark.parametrize("fields, words", [
    ({"scaling": "weak"}, 'x.toml: micro_batch: accumulates towards a fixed global batch: needs scaling = "strong"'),
    ({"grad_accum": 2}, "grad_accum: micro_batch 32 sets the accumulation"),
    ({"batch_size": 64}, "batch_size: the global batch 64 is smaller than micro_batch x world_size (32 x 4 = 128)"),
    ({"batch_size": 192}, "batch_size: the global batch 192 is not divisible by micro_batch x world_size "
                          "(32 x 4 = 128)"),
    ({"strategy": "fsdp"}, "micro_batch: strategy 'fsdp' does not accumulate towards a fixed global batch"),
])
def test_refused_in_one_line(cpu_machine, fields, words):
    with pytest.raises(InputError) as raised:  # the file's own refusals as it is read, the strategy's in the one check
        check_jobs(_job(cpu_machine, **fields).jobs, "x.toml")
    assert words in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.parametrize("strategy", ["ddp", "zero", "master", "allreduce-flat", "ring"])
def test_strategies_that_accumulate_take_it(cpu_machine, strategy):
    assert len(_job(cpu_machine, strategy=strategy).jobs) == 3
