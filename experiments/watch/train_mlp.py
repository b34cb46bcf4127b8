"""Train a multilayer perceptron on synthetic regression data with DistributedDataParallel.

An ordinary torchrun training script, not written for ddpbench (``ddpbench watch`` watches it unchanged;
benchmarks/watch_cost.py times it with and without ``watch``):

    torchrun --standalone --nproc_per_node=2 experiments/watch/train_mlp.py --steps 2000 --dim 256

``--times FILE`` writes every step's wall time (seconds, from one optimizer step's end to the next's) on
rank 0 as JSON once training ends.
"""

import argparse
import gc
import json
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=32, help="samples per rank")
    parser.add_argument("--dim", type=int, default=256, help="the hidden layers' width")
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--times", help="a JSON file for rank 0's step times")
    return parser.parse_args()


def main():
    args = parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(args.seed)
    widths = [64] + [args.dim] * args.layers
    layers = [m for a, b in zip(widths, widths[1:]) for m in (nn.Linear(a, b), nn.ReLU())]
    model = DDP(nn.Sequential(*layers, nn.Linear(widths[-1], 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    generator = torch.Generator().manual_seed(args.seed + rank)
    inputs = torch.randn(args.batch_size, 64, generator=generator)
    targets = inputs.sum(dim=1, keepdim=True)
    times, last = [], time.perf_counter()
    for _ in range(args.steps):
        loss = F.mse_loss(model(inputs), targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        now = time.perf_counter()
        times.append(now - last)
        last = now
    if rank == 0 and args.times:
        with open(args.times, "w") as f:
            json.dump(times, f)
    del model, optimizer  # gloo can abort at exit with DDP alive: drop it, then leave together
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
