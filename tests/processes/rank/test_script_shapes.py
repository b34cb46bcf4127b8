"""The shapes real scripts take when they start and end (ddpbench/rank/script/shapes.py, docs/scripts.md):
ranks started with torch.multiprocessing.spawn, a rendezvous of the script's own, init/destroy/init,
relative paths from the sweep's folder, and nothing left running after kill -9 of the sweep."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from hypothesis import strategies as st

from ddpbench.testing import MARK, ROOT, cli_command, marked, rank_processes, run_main, script_experiment, wait_for
from ddpbench.testing.survivors import kill_and_wait_gone

# ---------------------------------------------------------------------------------------------
# what the rank sets up around a script: pure functions
# ---------------------------------------------------------------------------------------------

words = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


names = st.text(st.characters(whitelist_categories=("Ll", "Lu", "Nd"), whitelist_characters="._- "),
                min_size=1, max_size=10).filter(lambda n: n not in (".", ".."))


def _init_in_a_child():
    import torch.distributed as dist

    dist.init_process_group("gloo", rank=0, world_size=1)


def test_ranks_started_with_multiprocessing_are_named(rendezvous, shapes):
    import multiprocessing

    child = multiprocessing.get_context("fork").Process(target=_init_in_a_child, name="trainer-0")
    child.start()
    child.join(60)
    assert child.exitcode == 1  # refused in the child: it would have met on the job's rendezvous
    line = shapes.no_ddp_line()
    assert "the script started 1 processes with multiprocessing (trainer-0)" in line and "\n" not in line


# ---------------------------------------------------------------------------------------------
# what a script starts ends with its rank (ddpbench.owner.reap_group_after)
# ---------------------------------------------------------------------------------------------


def gone_after_kill(proc: subprocess.Popen, mark: str, limit_s: float) -> list[str]:
    """SIGKILL ``proc``; what of ``mark`` is still alive ``limit_s`` later (then killed too). With
    ``pytest -s``, prints how long it took until none was."""
    gone_s, left = kill_and_wait_gone(proc, mark, limit_s)
    print(f"every marked process gone {gone_s:.2f} s after kill -9" if not left else
          f"{len(left)} marked processes alive {limit_s:g} s after kill -9")
    return left


@pytest.mark.parametrize("reaped", [True, False])
def test_what_a_group_leader_starts_ends_with_it_when_it_is_killed(reaped):
    """A rank (leading its group, as launchers start them) whose child asked for no death signal:
    with the reaper the child is gone within 5 s of kill -9 of the rank; without it, it is not."""
    mark = uuid.uuid4().hex
    code = ("import subprocess, sys, time; from ddpbench.owner import reap_group_after; "
            f"reaper = reap_group_after() if {reaped} else None; "
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(3600)']); print('up', flush=True); "
            "time.sleep(3600)")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE,
                            env={**os.environ, MARK: mark, "PYTHONPATH": str(ROOT)})
    proc.stdout.readline()
    wait_for(lambda: len(marked(mark)) == (3 if reaped else 2), 30, "the child")
    left = gone_after_kill(proc, mark, 5.0 if reaped else 1.0)
    proc.stdout.close()
    assert (left == []) if reaped else len(left) == 1


# ---------------------------------------------------------------------------------------------
# real scripts through real sweeps (slow: start ranks)
# ---------------------------------------------------------------------------------------------

#: pytorch/examples distributed/ddp-tutorial-series/multigpu.py, as it is but for gloo on the CPU
#: (and --world_size, --workers, --helper for the tests): mp.spawn, a hard-coded MASTER_PORT,
#: init_process_group with rank= and world_size=, a DataLoader with a DistributedSampler
SPAWN_TUTORIAL = '''
import os
import subprocess
import sys

import torch
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.distributed import destroy_process_group, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


def ddp_setup(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "12355"
    init_process_group(backend="gloo", rank=rank, world_size=world_size)


class MyTrainDataset(Dataset):
    def __init__(self, size):
        self.size = size
        self.data = [(torch.rand(20), torch.rand(1)) for _ in range(size)]

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        return self.data[index]


class Trainer:
    def __init__(self, model, train_data, optimizer, gpu_id, save_every):
        self.gpu_id = gpu_id
        self.model = DDP(model)
        self.train_data = train_data
        self.optimizer = optimizer
        self.save_every = save_every

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        output = self.model(source)
        loss = F.mse_loss(output, targets)
        loss.backward()
        self.optimizer.step()

    def _run_epoch(self, epoch):
        print(f"[GPU{self.gpu_id}] Epoch {epoch} | Steps: {len(self.train_data)}", flush=True)
        self.train_data.sampler.set_epoch(epoch)
        for source, targets in self.train_data:
            self._run_batch(source, targets)

    def train(self, max_epochs):
        for epoch in range(max_epochs):
            self._run_epoch(epoch)
            if self.gpu_id == 0 and epoch % self.save_every == 0:
                torch.save(self.model.module.state_dict(), "checkpoint.pt")


def main(rank, world_size, save_every, total_epochs, batch_size, workers, helper):
    ddp_setup(rank, world_size)
    print(f"rank {rank} of {world_size} in pid {os.getpid()}", flush=True)
    if helper:  # a process of the script's own, as a logger or a profiler it runs
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    dataset = MyTrainDataset(2048)
    model = torch.nn.Linear(20, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    data = DataLoader(dataset, batch_size=batch_size, shuffle=False, sampler=DistributedSampler(dataset),
                      num_workers=workers)
    Trainer(model, data, optimizer, rank, save_every).train(total_epochs)
    destroy_process_group()


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("total_epochs", type=int)
    parser.add_argument("save_every", type=int)
    parser.add_argument("--batch_size", default=32, type=int)
    parser.add_argument("--world_size", default=torch.cuda.device_count(), type=int)
    parser.add_argument("--workers", default=0, type=int)
    parser.add_argument("--helper", action="store_true")
    args = parser.parse_args()
    mp.spawn(main, args=(args.world_size, args.save_every, args.total_epochs, args.batch_size, args.workers,
                         args.helper), nprocs=args.world_size)
'''


def _records(out: Path) -> list[dict]:
    return [r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines()) if r["kind"] == "run"]


def _run_flags(out: Path, script_args: str, world_size: int = 2) -> list[str]:
    return ["run", "--script", "multigpu.py", f"--script-args={script_args}", "--batch-size", "8",
            "--world-size", str(world_size), "--backend", "gloo", "--device", "cpu", "--threads-per-rank", "1",
            "--warmup-steps", "2", "--steps", "5", "--timeout", "120", "--out", str(out)]


def test_two_runs_of_a_spawn_script_with_one_hard_coded_port_at_once(tmp_path):
    (tmp_path / "multigpu.py").write_text(SPAWN_TUTORIAL)
    env = {**os.environ, "COLUMNS": "160"}
    runs = [subprocess.Popen(cli_command(*_run_flags(tmp_path / f"out{i}",
                                                     "50 10 --batch_size 8 --world_size {world_size}")),
                             cwd=tmp_path, env={**env, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for i in range(2)]
    outputs = [run.communicate(timeout=300) for run in runs]
    for run, (_, stderr) in zip(runs, outputs):
        assert run.returncode == 0, stderr[-3000:]
    for i in range(2):
        (record,) = _records(tmp_path / f"out{i}")
        assert record["status"] == "ok", record["error"]
        result = record["result"]
        assert record["spec"]["script_args"] == json.dumps(["50", "10", "--batch_size", "8", "--world_size",
                                                           "{world_size}"])  # the key keeps the text
        assert result["script"]["ended"] == "stopped" and result["script"]["samples_per_step"] == [8]
        assert result["script"]["destroy_deferred"] is False  # stopped before the script's own destroy
        assert result["script"]["shapes"] == {"spawned": True, "groups": 1, "processes_started": 0,
                                              "rendezvous_replaced": ["MASTER_ADDR=localhost", "MASTER_PORT=12355"]}
        assert len({r["checksum"] for r in result["ranks"]}) == 1 and len(result["ranks"]) == 2
        text = " ".join((tmp_path / p).read_text() for p in record["logs"])
        assert "rank 0 of 2 in pid" in text and "rank 1 of 2 in pid" in text  # the ranks ran the spawned function
    assert not (tmp_path / "checkpoint.pt").exists()  # the script's snapshot went with the launch's scratch folder


INIT_DESTROY_INIT = '''
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
t = torch.ones(1)
dist.all_reduce(t)
assert t.item() == dist.get_world_size()
dist.destroy_process_group(dist.group.WORLD)
assert not dist.is_initialized()
dist.init_process_group("gloo", init_method="tcp://localhost:12355", rank=int(os.environ["RANK"]),
                        world_size=int(os.environ["WORLD_SIZE"]))
ddp = DDP(torch.nn.Linear(4, 2))
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
for _ in range(30):
    opt.zero_grad()
    ddp(torch.randn(8, 4)).sum().backward()
    opt.step()
dist.destroy_process_group()
print("trained", flush=True)
'''

#: nanoGPT's shape: a configurator exec'd from the folder it was started in, data read from ./data
RELATIVE = '''
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

iters = 1
exec(open("configurator.py").read())
rows = [float(x) for x in open(os.path.join("data", "x.txt")).read().split()]
dist.init_process_group("gloo")
ddp = DDP(torch.nn.Linear(len(rows), 1))
opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
os.makedirs("out", exist_ok=True)
for it in range(iters):
    opt.zero_grad()
    ddp(torch.tensor([rows] * 8)).sum().backward()
    opt.step()
    if int(os.environ["RANK"]) == 0:
        torch.save(ddp.module.state_dict(), os.path.join("out", "ckpt.pt"))
print("saved", os.path.abspath(os.path.join("out", "ckpt.pt")), flush=True)
dist.destroy_process_group()
'''


def _tree(folder: Path) -> dict[str, float]:
    return {str(p.relative_to(folder)): p.stat().st_mtime for p in sorted(folder.rglob("*"))}


def test_init_destroy_init_and_relative_paths_from_the_sweep_s_folder(tmp_path):
    """The sweep is started in the project folder, as torchrun would be: the script reads its
    configurator and data from there, and what it writes stays out of it."""
    project, experiments = tmp_path / "project", tmp_path / "experiments"
    (project / "data").mkdir(parents=True)
    (project / "configurator.py").write_text("iters = 40\n")
    (project / "data" / "x.txt").write_text("1 2 3 4\n")
    experiments.mkdir()
    (experiments / "relative.py").write_text(RELATIVE)
    (experiments / "again.py").write_text(INIT_DESTROY_INIT)
    exp = script_experiment(experiments / "shapes.toml", """
        script_to_end = true
        [grid]
        script = ["relative.py", "again.py"]
        world_size = [2]
    """, timeout_s=120)
    before = _tree(project)
    done = run_main("sweep", exp, "--out", "results", "--no-report", cwd=project)
    assert done.returncode == 0, done.stderr[-3000:]
    records = {r["spec"]["script"]: r for r in _records(project / "results")}
    for record in records.values():
        assert record["status"] == "ok", record["error"]
        assert record["result"]["script"]["ended"] == "ended" and record["result"]["script"]["destroy_deferred"]
    again = records["again.py"]["result"]["script"]["shapes"]
    assert again["groups"] == 2 and again["rendezvous_replaced"] == ["init_method=tcp://localhost:12355"]
    log = (project / records["relative.py"]["logs"][0]).read_text()  # logs: relative to where the sweep ran
    assert "saved " in log and str(project / "out") not in log  # written in the launch's scratch folder
    assert "trained" in (project / records["again.py"]["logs"][0]).read_text()
    after = {k: v for k, v in _tree(project).items() if not k.startswith("results")}
    assert after == before  # nothing new, nothing changed in the folder the sweep was started in
    assert rank_processes(str(project / "results")) == []


SPAWN_WRONG = SPAWN_TUTORIAL.replace("nprocs=args.world_size", "nprocs=3")
WORLD_WRONG = 'import torch.distributed as dist\ndist.init_process_group("gloo", rank=0, world_size=4)\n'
MP_PROCESS = '''
import multiprocessing
import torch
import torch.distributed as dist


def train(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)


if __name__ == "__main__":
    procs = [multiprocessing.Process(target=train, args=(r, 2)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
'''
BAD_SHAPES = {
    "spawn_wrong.py": (SPAWN_WRONG, '["50", "10", "--batch_size", "8"]',
                       "the script spawns 3 processes (torch.multiprocessing.spawn) and the job runs 2 ranks on this "
                       'node: ddpbench runs the spawned function as its ranks, one per rank; pass "{world_size}"'),
    "world_wrong.py": (WORLD_WRONG, "", "the script passes world_size=4 to init_process_group and the job runs world "
                                        "size 2"),
    "mp_process.py": (MP_PROCESS, "", "the script started 2 processes with multiprocessing (Process-"),
}


def test_shapes_ddpbench_cannot_run_are_refused_with_their_reason(tmp_path):
    grids = []
    for name, (body, args, _) in BAD_SHAPES.items():
        (tmp_path / name).write_text(body)
        grids.append(f"[[grid]]\nscript = [\"{name}\"]\nscript_args = ['{args}']\nworld_size = [2]\n" if args else
                     f'[[grid]]\nscript = ["{name}"]\nworld_size = [2]\n')
    exp = script_experiment(tmp_path / "bad.toml", "\n".join(grids))
    out = tmp_path / "out"
    done = run_main("sweep", exp, "--out", out, "--no-report")
    assert done.returncode == 1, done.stderr[-3000:]
    records = {Path(r["spec"]["script"]).name: r for r in _records(out)}
    for name, (_, _, words) in BAD_SHAPES.items():
        record = records[name]
        assert record["status"] == "failed" and words in record["error"], (name, record["error"])
        if name == "mp_process.py":  # the processes' names depend on how the rank started (Process-6:1 when forked)
            assert "and built no DistributedDataParallel in its own process" in record["error"]
        assert "\n" not in record["error"]
    assert rank_processes(str(out)) == []


@pytest.mark.parametrize("launcher", [(), ("--launcher", "torchrun")])
def test_kill_9_of_a_sweep_of_a_spawn_script_leaves_no_process(tmp_path, launcher):
    """Ranks that run the spawned function, their DataLoader workers and a process of the script's
    own: none alive 15 s after kill -9 of the sweep (found by a marker in their environment, since
    the kill reparents them)."""
    (tmp_path / "multigpu.py").write_text(SPAWN_TUTORIAL)
    exp = script_experiment(tmp_path / "spawn.toml", """
        script = "multigpu.py"
        script_args = ["100000", "100000", "--batch_size", "8", "--world_size", "{world_size}", "--workers", "2",
                       "--helper"]
        script_to_end = true
        [grid]
        world_size = [2]
    """, timeout_s=300)
    mark = uuid.uuid4().hex
    sweep = subprocess.Popen(cli_command("sweep", str(exp), "--out", str(tmp_path / "out"),
                                         "--no-report", *launcher), cwd=tmp_path, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env={**os.environ, MARK: mark, "PYTHONPATH": str(ROOT)})
    try:
        def training() -> bool:  # two ranks, each with 2 loader workers and a helper, past ddpbench's steps
            logs = list((tmp_path / "out").rglob("*.log"))
            return sum(p.read_text(errors="replace").count("Epoch 1 ") for p in logs) >= 2

        wait_for(training, 180, "both ranks in their second epoch")
        # every process alive at once: the loader's workers end and start again at each epoch's turn
        wait_for(lambda: len(marked(mark)) >= 1 + 2 + 4 + 2, 60, "the sweep, 2 ranks, 4 loader workers and 2 helpers")
    finally:
        left = gone_after_kill(sweep, mark, 15.0)
    assert left == [], f"alive 15 s after kill -9 of the sweep: {left}"
