"""Does autocast make this machine's compute faster? One thread's forward and backward of a preset
model in fp32 and under bf16 (and fp16) autocast, on the CPU (or the GPU with --device cuda).

    python benchmarks/autocast_speed.py [--model mlp] [--size s] [--batch 64] [--device cpu]

The answer depends on the hardware: a CPU with native bf16 matmuls (AVX512-BF16, AMX) runs bf16
faster; an AVX2-only CPU, where oneDNN emulates them, much slower. The median of 7 rounds of 5
steps each after 3 warmup steps, in ms per step.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time

import torch

from ddpbench.experiment.spec import JobSpec
from ddpbench.rank.precision import AUTOCAST_DTYPES
from ddpbench.workloads.build import build_workload
from ddpbench.workloads.data import forward, make_loader, to_device


def step_ms(model, loss_fn, inputs, target, precision: str, device) -> float:
    context = (torch.autocast(device.type, dtype=AUTOCAST_DTYPES[precision]) if precision != "fp32"
               else contextlib.nullcontext())

    def step():
        with context:
            loss = loss_fn(forward(model, inputs), target)
        loss.backward()
        model.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    rounds = []
    for _ in range(7):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(5):
            step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        rounds.append((time.perf_counter() - start) / 5 * 1e3)
    return statistics.median(rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--size", default="s")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], choices=("fp32", "bf16", "fp16"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    device = torch.device(args.device)
    spec = JobSpec(model=args.model, model_size=args.size, batch_size=args.batch, world_size=1, device=args.device)
    workload = build_workload(spec)
    model = workload.model.to(device)
    inputs, target = make_loader(spec, workload, 0, 1).next()
    inputs, target = to_device(inputs, device), to_device(target, device)
    base = None
    for precision in args.precisions:
        ms = step_ms(model, workload.loss, inputs, target, precision, device)
        base = base or ms
        print(f"{spec.model_label} batch {args.batch} {precision}: {ms:8.1f} ms per forward+backward "
              f"({base / ms:.2f}x fp32's speed)")


if __name__ == "__main__":
    main()
