"""Elastic fault recovery, many times over: is it reliable, and how long does it take?

    python benchmarks/recovery.py [--runs 20] [--nodes 1] [--model-size xs] [--out DIR]

Each run is a real 2-rank DDP launch under torchrun with ``--max-restarts 1``: rank 1 is
SIGKILLed as measure step 5 starts, the workers restart, load rank 0's snapshot of step 4 and
finish. ``--nodes 2`` puts the two ranks on two emulated nodes (network namespaces; root). From
the stored results alone it prints how many runs recovered with parameters identical to an
uninterrupted run, and the restart, rejoin and recovery times (median, IQR, worst).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from ddpbench.testing import cli_command

ROOT = Path(__file__).resolve().parent.parent


def experiment(runs: int, nodes: int, model_size: str) -> str:
    return textwrap.dedent(f"""
        name = "recovery"
        description = "{runs} fault-recovery launches on {nodes} node(s) (benchmarks/recovery.py)"
        timeout_s = 120

        [defaults]
        backend = "gloo"
        device = "cpu"
        model = "mlp"
        model_size = "{model_size}"
        batch_size = 8
        threads_per_rank = 1
        warmup_steps = 1
        steps = 8
        world_size = 2
        emulate_nodes = {nodes}
        fault_step = 5
        snapshot_every = 2
        max_restarts = 1
        repeats = {runs}
    """)


def spread(values) -> str:
    values = [v for v in values if v == v]
    if len(values) < 2:
        return f"{values[0]:.2f} s" if values else "-"
    q = statistics.quantiles(values, n=4)
    return f"median {statistics.median(values):.2f} s, IQR {q[2] - q[0]:.2f} s, worst {max(values):.2f} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--nodes", type=int, default=1, choices=(1, 2))
    parser.add_argument("--model-size", default="xs")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="ddpbench-recovery-"))
    out = args.out or work / "out"
    exp = work / "recovery.toml"
    exp.write_text(experiment(args.runs, args.nodes, args.model_size))
    subprocess.run(cli_command("sweep", str(exp), "--out", str(out), "--no-report"),
                   cwd=ROOT, check=False)

    from ddpbench.results.tables import load_tables

    _, runs, _, _ = load_tables(out)
    recovered = runs[(runs["status"] == "ok") & (runs["attempts"] == 2)]
    identical = recovered[recovered["params_identical"] == True]  # noqa: E712 - a column of objects
    print(f"\n{len(runs)} runs on {args.nodes} node(s): {len(recovered)} recovered, {len(identical)} with "
          f"parameters identical to an uninterrupted run; failures: "
          f"{runs.loc[runs['status'] != 'ok', 'error'].tolist() or 'none'}")
    for column, what in (("restart_s", "fault -> restarted worker"), ("rejoin_s", "-> group joined, snapshot "
                         "loaded"), ("recovery_s", "fault -> back at the fault step")):
        print(f"  {what:<34} {spread(recovered[column].astype(float).tolist())}")
    print(f"results in {out}")
    return 0 if len(identical) == len(runs) else 1


if __name__ == "__main__":
    sys.exit(main())
