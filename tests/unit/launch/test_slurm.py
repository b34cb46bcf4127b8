"""The Slurm launcher: its scripts, and (the slow tests) runs against a real Slurm on this machine
(scripts/slurm-local.sh): slurmctld and two slurmd nodes, n1 and n2, both at 127.0.0.1. Those need
root and Debian's slurm-wlm and munge, which .ci/run installs."""

import os
import subprocess
import time
from pathlib import Path

import pytest

from ddpbench.experiment.load import load_experiment
from ddpbench.experiment.spec import JobSpec
from ddpbench.launch import slurm
from ddpbench.launch.base import Launch
from ddpbench.launch.slurm import SlurmLauncher, array_script, batch_script, task_exits
from ddpbench.rank.protocol import Progress, progress_path
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


class FakeSlurm:
    """Slurm's commands as the launcher calls them (``_run``), for jobs that run until cancelled: each
    submitted job's (or array task's) ranks have said where they are, long ago (their progress files'
    times are set an hour back), so that only a stall limit can end them before the timeout."""

    def __init__(self, monkeypatch, work_dirs):
        self.work_dirs, self.cancelled, self.running = work_dirs, [], set()
        monkeypatch.setattr(slurm, "_run", self.run)
        monkeypatch.setattr(slurm, "POLL_S", 0.01)

    def run(self, cmd):
        done = subprocess.CompletedProcess(cmd, 0, "", "")
        if cmd[0] == "sbatch":
            ids = [f"7_{i}" for i in range(len(self.work_dirs))] if "array" in Path(cmd[-1]).read_text() else ["7"]
            self.running.update(ids)
            for work in self.work_dirs:  # the ranks started, and went still an hour ago
                for rank in (0, 1):
                    path = progress_path(work, rank)
                    Progress(path).write("measure", 3 + rank)
                    os.utime(path, (time.time() - 3600, time.time() - 3600))
            done.stdout = "7\n"
        elif cmd[0] == "squeue":
            asked = cmd[cmd.index("-j") + 1]
            done.stdout = "\n".join(f"{i} RUNNING" if "-r" in cmd else "RUNNING" for i in sorted(self.running)
                                    if i == asked or i.split("_")[0] in asked.split(","))
        elif cmd[0] == "scancel":
            self.cancelled.append(cmd[1])
            self.running = {i for i in self.running if i != cmd[1] and i.split("_")[0] != cmd[1]}
        elif cmd[0] == "scontrol":
            done.stdout = "JobState=CANCELLED ExitCode=0:15"
        return done


@pytest.mark.parametrize("array", [False, True])
def test_a_slurm_job_none_of_whose_ranks_moves_is_cancelled_at_its_stall_limit(tmp_path, monkeypatch, array):
    launches = launches_of(tmp_path, TWO_JOBS.replace("world_size = [1, 2]", "world_size = [2]"))
    fake = FakeSlurm(monkeypatch, [launch.work_dir for launch in launches])
    launcher = SlurmLauncher(array=array)
    start = time.monotonic()
    if array:
        ended = list(launcher.launch_all(launches, tmp_path / "logs", 20, stall_s=5))
    else:
        ended = [(launch, launcher.launch(*launch, tmp_path / "logs", 20, stall_s=5)) for launch in launches]
    assert time.monotonic() - start < 10  # not the 20 s timeout
    assert fake.cancelled and not fake.running
    for _, outcome in ended:
        assert outcome.status == "timed_out"
        assert outcome.error == ("no rank moved for 5 s (the stall limit) (rank 0 at measure step 3; rank 1 at "
                                 "measure step 4)")
