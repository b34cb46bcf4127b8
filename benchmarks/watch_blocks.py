"""The rank of ``benchmarks/watch_cost_interleaved.py``: experiments/watch/train_mlp.py's model and step, run under
``ddpbench watch`` with the watch's instrument switched off and on in alternating blocks of steps, in one run.

    python -m ddpbench watch -- torchrun --standalone --nproc_per_node=2 benchmarks/watch_blocks.py \\
        --dim 64 --blocks 60 --block-steps 100 --times FILE

In a watched block every step is as ``watch`` makes it (the optimizers' global step hooks, a row a step handed to
the sender, every tenth step a phase step); in a plain block the instrument's step and phase hooks are off, so the
step is the script's alone and the rank sends nothing, which leaves the collector nothing to do. Every rank switches
at the same steps (by its own count), so the all-reduce never pairs a watched rank with a plain one. The blocks
start past the watch's baseline and its first check (:data:`FIRST_BLOCK_STEP`), and their order alternates
(watched first, then plain first, ...), so that neither side always follows the other. Rank 0 writes each block's
wall time per step (seconds) as JSON: ``{"watched": [...], "plain": [...]}``, pair by pair.

This reaches into the instrument (it finds it through torch's global optimizer hooks): a benchmark of the watch's
own cost may; a user's script never needs to.
"""

from __future__ import annotations

import argparse
import gc
import json
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

#: the first step of the first block: past the watch's baseline (steps 50 to 350, every one a phase step) and the
#: dense steps a first check may ask
FIRST_BLOCK_STEP = 500


def instrument():
    """The watch's instrument in this process (the owner of its global optimizer step hooks), or None."""
    from torch.optim import optimizer

    for hook in list(optimizer._global_optimizer_post_hooks.values()):
        owner = getattr(hook, "__self__", None)
        if owner is not None and hasattr(owner, "sender") and hasattr(owner, "detach_step_hooks"):
            return owner
    return None


def switch(watched, on: bool) -> None:
    """The instrument's hooks on (its step hooks; its phase hooks as its plan asks at the next step) or off."""
    if on:
        watched.attach_step_hooks()
    else:
        watched.detach_step_hooks()
        watched.stop_timing()
        watched.hooked, watched.state = False, "idle"  # the next boundary puts the phase hooks on where due


def steps(model, optimizer, inputs, targets, n: int) -> float:
    """``n`` of the script's steps: their wall time, seconds a step."""
    start = time.perf_counter()
    for _ in range(n):
        loss = F.mse_loss(model(inputs), targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return (time.perf_counter() - start) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--blocks", type=int, default=60, help="pairs of blocks (one watched, one plain)")
    parser.add_argument("--block-steps", type=int, default=100)
    parser.add_argument("--times", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    widths = [64] + [args.dim] * args.layers
    layers = [m for a, b in zip(widths, widths[1:]) for m in (nn.Linear(a, b), nn.ReLU())]
    model = DDP(nn.Sequential(*layers, nn.Linear(widths[-1], 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    generator = torch.Generator().manual_seed(rank)
    inputs = torch.randn(args.batch_size, 64, generator=generator)
    targets = inputs.sum(dim=1, keepdim=True)

    steps(model, optimizer, inputs, targets, FIRST_BLOCK_STEP)  # the watch's baseline, its instrument learning the step
    watched = instrument()
    if watched is None:
        raise SystemExit("watch_blocks.py: no watch instrument in this process; run it under ddpbench watch")
    times = {"watched": [], "plain": []}
    for pair in range(args.blocks):
        for side in ("watched", "plain") if pair % 2 == 0 else ("plain", "watched"):
            switch(watched, side == "watched")
            times[side].append(steps(model, optimizer, inputs, targets, args.block_steps))
    switch(watched, True)  # the watch ends the run as it would any other
    if rank == 0:
        with open(args.times, "w") as f:
            json.dump(times, f)
    del model, optimizer  # gloo can abort at exit with DDP alive: drop it, then leave together
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
