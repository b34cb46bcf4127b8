"""The Ray driver of one launch: ``python -m ddpbench.owner SWEEP_PID ddpbench.launch.ray_driver run
--job J --out D --address A ...`` connects to the cluster and runs the job's ranks as Ray Train workers
(``TorchTrainer`` with a ``ScalingConfig`` of one worker per rank and ``TorchConfig(backend=...)``),
the way a user's Ray training script runs them; :mod:`ddpbench.launch.raytrain` starts it and reads what
it leaves.

Each worker calls :func:`ddpbench.rank.raytrain.train_loop`: the same rank as every other
launcher's, in the process group Ray Train made. The driver writes ``ray.json`` into the work
folder: when it connected, and, when training failed, what Ray said of each worker that failed
(``failures``: rank -> text) or of its controller (``error``). Exit code 0 when training finished,
1 when Ray reported a failure. Ray retries nothing (``FailureConfig(max_failures=0)``): a failed
launch is recorded as failed, as under the other launchers.

``... ray_driver nodes ADDRESS N TIMEOUT_S`` waits until the cluster has N live nodes (exit 0), or
exits 1 after the timeout: how :class:`~ddpbench.launch.ray_cluster.RayCluster` knows its nodes joined.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

#: what the driver leaves in the work folder
DRIVER_FILE = "ray.json"
#: the environment mark of every Ray worker of one launch: its job file
LAUNCH_ENV = "DDPBENCH_RAY_LAUNCH"


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m ddpbench.launch.ray_driver")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("--job", type=Path, required=True)
    run.add_argument("--out", type=Path, required=True)
    run.add_argument("--address", required=True)
    run.add_argument("--processes", type=int, required=True, help="the launch's ranks: one Ray Train worker each")
    run.add_argument("--name", required=True, help="the run's name in Ray Train")
    run.add_argument("--logs", required=True, help="JSON list: each rank's log file")
    run.add_argument("--env", required=True, help="JSON object: the ranks' environment")
    run.add_argument("--spread", action="store_true", help="spread the workers over the nodes")
    nodes = sub.add_parser("nodes")
    nodes.add_argument("address")
    nodes.add_argument("count", type=int)
    nodes.add_argument("timeout_s", type=float)
    return parser.parse_args(argv)


def wait_for_nodes(address: str, count: int, timeout_s: float) -> int:
    import ray

    ray.init(address=address, log_to_driver=False, logging_level="WARNING")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        alive = sum(1 for node in ray.nodes() if node.get("Alive"))
        if alive >= count:
            print(f"ddpbench: {alive} nodes alive", flush=True)
            return 0
        time.sleep(0.2)
    print(f"ddpbench: {alive} of {count} nodes alive after {timeout_s:g} s", flush=True)
    return 1


def worker_cpus(processes: int, threads: int, cluster_cpus: float) -> float:
    """CPUs each worker asks Ray for: its threads, or an even share of the cluster's CPUs where the
    job asks for more than the cluster has (an oversubscribed job runs, as under the other launchers,
    rather than wait for CPUs that never come)."""
    if cluster_cpus <= 0 or processes * threads <= cluster_cpus:
        return float(threads)
    return cluster_cpus / processes


def write(out: Path, **fields) -> None:
    path = out / DRIVER_FILE
    data = json.loads(path.read_text()) if path.exists() else {}
    data.update(fields)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def run(args: argparse.Namespace) -> int:
    from ddpbench.rank.protocol import Job

    job = Job.read(args.job)
    spec = job.spec
    env = {**json.loads(args.env), LAUNCH_ENV: str(args.job)}
    import ray
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    from ddpbench.rank.raytrain import train_loop

    ray.init(address=args.address, log_to_driver=True, logging_level="WARNING")
    write(args.out, connected=time.time())
    processes = args.processes
    cpus = worker_cpus(processes, int(spec["threads_per_rank"]), ray.cluster_resources().get("CPU", 0.0))
    trainer = TorchTrainer(
        train_loop,
        train_loop_config={"job": str(args.job), "out": str(args.out), "logs": json.loads(args.logs)},
        scaling_config=ScalingConfig(num_workers=processes, use_gpu=spec["device"] == "cuda",
                                     resources_per_worker={"CPU": cpus},
                                     placement_strategy="SPREAD" if args.spread else "PACK"),
        torch_config=TorchConfig(backend=spec["backend"], timeout_s=int(max(1, job.timeout_s))),
        run_config=RunConfig(name=args.name,
                             storage_path=str(args.out / "ray-train"), failure_config=FailureConfig(max_failures=0),
                             worker_runtime_env={"env_vars": env}),
    )
    try:
        trainer.fit()
    except Exception as err:  # noqa: BLE001 - Ray's failure is the launch's: recorded, then exit 1
        write(args.out, **failures(err))
        print(f"ddpbench: Ray Train failed: {type(err).__name__}: {err}", flush=True)
        return 1
    return 0


def failures(err: BaseException) -> dict:
    """What Ray said of a failed fit: each failed worker's exception by rank (a WorkerGroupError's),
    else the error itself."""
    by_rank = getattr(err, "worker_failures", None)
    if isinstance(by_rank, dict) and by_rank:
        return {"failures": {str(rank): f"{type(e).__name__}: {e}" for rank, e in by_rank.items()}}
    return {"error": f"{type(err).__name__}: {err}"}


def main(argv: list[str]) -> int:
    args = parse(argv)
    if args.command == "nodes":
        return wait_for_nodes(args.address, args.count, args.timeout_s)
    return run(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
