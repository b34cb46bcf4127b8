"""How steady the CPU's measured GEMM peak is, by matrix size and thread count.

    python benchmarks/gemm_peak_cpu.py [--threads 2] [--sizes 1024,2048] [--processes 8] [--json FILE]

Every rank measures the matmul rate its threads reach as it starts (:func:`ddpbench.rank.flops.measure_gemm_peak`,
best of up to 10 n x n float32 products within 0.3 s), and a sweep hands one such figure to every CPU job
alike (:mod:`ddpbench.sweep.measured_once`). A figure from one process is only as good as that process's
products: this forks ``--processes`` fresh processes per size from a parent that imported torch and
ran nothing (as the sweep's fork server forks ranks), each measuring once with ``--threads`` threads,
and prints per size the median, least and largest peak in TFLOP/s, the largest over the least, and
the median seconds a measurement took. The sizes run interleaved, process by process, so a machine
that slows down slows every size alike. The default size is the rank's own (``ddpbench.rank.flops``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import time
from pathlib import Path

import torch

from ddpbench.rank.flops import measure_gemm_peak


def measure(threads: int, n: int, queue) -> None:
    torch.set_num_threads(threads)
    start = time.perf_counter()
    figures = measure_gemm_peak("cpu", n=n)
    queue.put((figures["peak_flops"] / 1e12, time.perf_counter() - start, figures["gemm_reps"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--sizes", default="1024,2048", help="matrix sizes n, comma-separated")
    parser.add_argument("--processes", type=int, default=8, help="fresh processes per size")
    parser.add_argument("--json", type=Path, help="also write every measurement to this file")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    context = multiprocessing.get_context("fork")
    found: dict[int, list[tuple[float, float, int]]] = {n: [] for n in sizes}
    for _ in range(args.processes):
        for n in sizes:
            queue = context.Queue()
            child = context.Process(target=measure, args=(args.threads, n, queue))
            child.start()
            try:
                found[n].append(queue.get(timeout=600))
            except Exception:  # queue.Empty: the child died or hung
                child.kill()
                raise SystemExit(f"the measurement of n={n} on {args.threads} threads gave nothing (exit code "
                                 f"{child.exitcode})") from None
            child.join()
    print(f"{args.threads} threads, {args.processes} processes per size, torch {torch.__version__}")
    for n, rows in found.items():
        peaks = [p for p, _, _ in rows]
        print(f"n={n}: peak median {statistics.median(peaks):.3f} TFLOP/s (least {min(peaks):.3f}, largest "
              f"{max(peaks):.3f}, largest/least {max(peaks) / min(peaks):.2f}); "
              f"{statistics.median(s for _, s, _ in rows):.3f} s a measurement, "
              f"{statistics.median(r for _, _, r in rows):.0f} products timed")
    if args.json:
        rows = {str(n): measured for n, measured in found.items()}
        args.json.write_text(json.dumps({"threads": args.threads, "found": rows}))


if __name__ == "__main__":
    main()
