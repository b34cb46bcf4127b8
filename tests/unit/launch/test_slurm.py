"""The Slurm launcher: its scripts, and (the slow tests) runs against a real Slurm on this machine
(scripts/slurm-local.sh): slurmctld and two slurmd nodes, n1 and n2, both at 127.0.0.1. Those need
root and Debian's slurm-wlm and munge, which .ci/run installs."""

import pytest

from ddpbench.experiment.load import load_experiment
from ddpbench.experiment.spec import JobSpec
from ddpbench.launch.base import Launch
from ddpbench.launch.slurm import array_script, batch_script, task_exits
from ddpbench.sweep.plan import work_dir
from ddpbench.testing import TINY, write_experiment

TWO_JOBS = TINY.replace("bucket_cap_mb = [0.25, 25]", "bucket_cap_mb = [25]")


def test_srun_task_report_gives_each_rank_its_exit():
    log = ("srun: error: n2: task 1: Killed\nsrun: Terminating StepId=7.0\n"
           "srun: error: n1: task 0: Exited with exit code 1\n")
    assert task_exits(log) == {1: -9, 0: 1}


def launches_of(tmp_path, body: str, repeats=(0,)) -> list[Launch]:
    """Every launch of the experiment ``body``, as a sweep plans them."""
    exp = load_experiment(write_experiment(tmp_path / "exp.toml", body))
    return [Launch(spec, repeat, work_dir(tmp_path, spec, repeat)) for spec in exp.jobs for repeat in repeats]


def test_an_array_refuses_launches_of_different_shapes(tmp_path):
    items = [(spec, work / "job.json", work) for spec, _, work in launches_of(tmp_path, TWO_JOBS)]
    assert {spec.processes for spec, _, _ in items} == {1, 2}
    with pytest.raises(ValueError, match="processes"):
        array_script(items, tmp_path / "logs", 60, nodes=1, partition=None)


@pytest.mark.parametrize("fields, nodes, gpus", [
    ({"world_size": 2}, 1, 2),
    ({"world_size": 8}, 2, 4),  # four ranks on each node
    ({"world_size": 4, "strategy": "dp"}, 2, 4),  # one task driving four GPUs
    ({"world_size": 2, "device": "cpu", "backend": "gloo"}, 1, None),
])
def test_a_cuda_job_asks_slurm_for_a_gpu_per_rank_on_each_node(tmp_path, fields, nodes, gpus):
    spec = JobSpec(**{"device": "cuda", "backend": "nccl", "threads_per_rank": 1, **fields})
    lines = batch_script(spec, tmp_path / "job.json", tmp_path, tmp_path / "log", 60, nodes).splitlines()
    asked = [line for line in lines if line.startswith("#SBATCH --gpus-per-node=")]
    assert asked == ([f"#SBATCH --gpus-per-node={gpus}"] if gpus else [])
