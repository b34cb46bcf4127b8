"""``ddpbench watch -- srun ...`` on a real Slurm with two nodes on this machine (scripts/slurm-local.sh): the
tasks srun starts on each node get the watch's environment, as any launcher's processes do, and both ranks'
steps stream. Needs root and Debian's slurm-wlm and munge, which .ci/run installs."""

import csv
import sys
import textwrap

from ddpbench.testing import run_cli
from ddpbench.watch.stream import STREAM_FILE

TRAIN = """
    import gc, os, torch, torch.distributed as dist
    rank, world = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=os.environ["SLURM_LOCALID"])
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + os.environ["TRAIN_PORT"], rank=rank,
                            world_size=world)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(20):
        opt.zero_grad(); model(torch.randn(8, 4)).sum().backward(); opt.step()
    del model, opt; gc.collect(); dist.barrier()  # gloo can abort at exit while DDP outlives its group
    dist.destroy_process_group()
    print("rank", rank, "trained", flush=True)
"""




def test_the_ranks_srun_starts_on_two_nodes_are_watched(slurm, tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    train = tmp_path / "train.py"
    train.write_text(textwrap.dedent(TRAIN))
    out = tmp_path / "w"
    done = run_cli("watch", "--out", out, "--", "srun", "--nodes=2", "--ntasks-per-node=1", sys.executable, train,
                   env={**slurm, "TRAIN_PORT": str(port), "OMP_NUM_THREADS": "1"}, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rank 0 trained" in done.stdout and "rank 1 trained" in done.stdout
    with open(out / STREAM_FILE, newline="") as f:
        rows = list(csv.DictReader(f))
    for rank in ("0", "1"):
        assert [int(r["step"]) for r in rows if r["rank"] == rank] == list(range(20))
