"""Train a small CNN with DistributedDataParallel and record a few steps of every rank with
``torch.profiler``: the traces ``ddpbench traces`` reads (docs/traces.md).

An ordinary torchrun script; the profiler's lines are all a cluster job needs to add:

    torchrun --standalone --nproc_per_node=2 experiments/scripts/traced_cnn.py --trace-dir traces/
    python -m ddpbench traces traces/

Each rank writes one ``<host>_<pid>.<timestamp>.pt.trace.json.gz`` into ``--trace-dir``.
"""

import argparse
import gc
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace-dir", default="traces", help="where every rank writes its trace")
    parser.add_argument("--steps", type=int, default=12, help="steps recorded (after 2 skipped and 2 of warmup)")
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--width", type=int, default=16, help="channels of the first convolution")
    parser.add_argument("--bucket-cap-mb", type=float, default=25.0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    return parser.parse_args()


class SmallCNN(nn.Module):
    def __init__(self, width, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, 2 * width, 3, padding=1)
        self.fc1 = nn.Linear(2 * width * 8 * 8, 256)
        self.fc2 = nn.Linear(256, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    local_rank = int(os.environ["LOCAL_RANK"])
    use_cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if use_cuda else "gloo")  # before the profiler: its traces say the rank
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    torch.manual_seed(0)
    wait, warmup = 2, 2
    samples = (wait + warmup + args.steps) * args.batch_size * dist.get_world_size()
    data = TensorDataset(torch.randn(samples, 3, 32, 32), torch.randint(0, 10, (samples,)))
    loader = DataLoader(data, batch_size=args.batch_size, sampler=DistributedSampler(data), drop_last=True)
    model = DDP(SmallCNN(args.width).to(device), device_ids=[local_rank] if use_cuda else None,
                bucket_cap_mb=args.bucket_cap_mb)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if use_cuda else [])
    # record_shapes: each collective's size where the backend's range carries it (gloo's)
    with profile(activities=activities, schedule=schedule(wait=wait, warmup=warmup, active=args.steps),
                 record_shapes=True, on_trace_ready=tensorboard_trace_handler(args.trace_dir, use_gzip=True)) as prof:
        for images, labels in loader:
            loss = F.cross_entropy(model(images.to(device)), labels.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            prof.step()  # one ProfilerStep# range per training step: how ddpbench cuts the trace into steps

    del model, optimizer  # gloo can abort at exit with DDP alive: drop it, then leave together
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
