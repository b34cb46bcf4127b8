"""One rank of one job: process group, model, strategy, timed loop, gather, one result out.

Started by a launcher as ``python -m ddpbench.worker --job JOB.json --out DIR`` with the
rank in the environment exactly as torchrun sets it (RANK, LOCAL_RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT), so every launcher starts the same worker.

Hand-back: rank 0 writes ``DIR/result.json`` (atomically); a rank that fails writes
``DIR/error.rank<R>.json``. Nothing is printed for anyone to parse.

Phases of a launch:
  warmup   ``warmup_steps`` steps, timed and stored apart;
  measure  ``steps`` steps with gradient synchronisation;
  nosync   the same number of steps inside the strategy's ``no_sync()`` (when it has one):
           the no-communication step time at the same world size. The model and optimizer
           are restored afterwards, so the replicas stay identical;
  finish   every rank's timings and a checksum of its parameters are gathered to rank 0,
           which fails the job loudly if the replicas differ.
"""

from __future__ import annotations

import time

_PROCESS_START = time.time()

import argparse  # noqa: E402 - the start time above is taken before any import
import contextlib
import dataclasses
import gc
import hashlib
import json
import os
import signal
import sys
import threading
import traceback
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

STEP_COLUMNS = ("rank", "phase", "step", "data_ms", "forward_ms", "backward_ms", "comm_ms", "optimizer_ms",
                "step_ms")
TIMED_PHASES = ("data_ms", "forward_ms", "backward_ms", "comm_ms", "optimizer_ms")


def write_json_atomic(path: Path, payload: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as fh:
        json.dump(payload, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


PROGRESS_BYTES = 64


def progress_path(out_dir: Path, rank: int) -> Path:
    return out_dir / f"progress.rank{rank}"


class Progress:
    """Where a rank is (phase and step), in a small file the launcher reads when the rank cannot
    say it itself: killed by a signal, or stuck when the timeout ends it. One ``pwrite`` per step
    and no fsync: the page cache outlives a killed process."""

    def __init__(self, path: Path):
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)

    def write(self, phase: str, step: int) -> None:
        line = f"{phase} {step}" if step >= 0 else phase
        os.pwrite(self._fd, line.encode()[:PROGRESS_BYTES].ljust(PROGRESS_BYTES), 0)

    @staticmethod
    def read(path: Path) -> str | None:
        """"measure step 7" (or "gather"), or None when the rank left no progress."""
        try:
            text = path.read_bytes().decode(errors="replace").strip()
        except OSError:
            return None
        phase, _, step = text.rpartition(" ")
        return f"{phase} step {step}" if phase and step.lstrip("-").isdigit() else text or None


class Tracked:
    """Mixin of a rank's run: ``at(phase, step)`` records where it is, for its error report and
    its progress file."""

    phase, step = "init", -1
    progress: Progress | None = None

    def at(self, phase: str, step: int = -1) -> None:
        self.phase, self.step = phase, step
        if self.progress is not None:
            self.progress.write(phase, step)


def _watch_parent(parent_pid: int) -> None:
    """Exit if the launcher dies: no rank outlives the process that owns it."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent_pid:
            os._exit(3)


def peak_rss_mb() -> float:
    """High-water mark of this process's resident memory (VmHWM), in MB (10^6 bytes)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024 / 1e6  # kB -> MB
    except OSError:
        pass
    import psutil

    return psutil.Process().memory_info().rss / 1e6


def rank_device(device: str, local_rank: int, visible: int):
    """The device a rank trains on: on CUDA the GPU of its local rank (torchrun's LOCAL_RANK),
    or the one GPU it sees when its launcher gave each rank its own (Slurm's --gpus-per-task)."""
    import torch

    if device != "cuda":
        return torch.device("cpu")
    if local_rank < visible:
        return torch.device("cuda", local_rank)
    if visible == 1:
        return torch.device("cuda", 0)
    raise RuntimeError(f"local rank {local_rank} has no GPU of its own: {visible} visible "
                       f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')})")


def take_rank_device(device: str, local_rank: int):
    """This process's :func:`rank_device`, made the current CUDA device when it is a GPU."""
    import torch

    chosen = rank_device(device, local_rank, torch.cuda.device_count() if device == "cuda" else 0)
    if chosen.type == "cuda":
        torch.cuda.set_device(chosen)
    return chosen


def gpu_memory(devices) -> dict:
    """Peak GPU memory of this process so far, on the fullest of its GPUs, in MB (10^6 bytes):
    what its tensors held at most (allocated) and what the caching allocator took from the
    driver for them (reserved). ``gpus``: how many GPUs the process drove (0 on CPU)."""
    if not devices:
        return {"gpus": 0, "gpu_peak_allocated_mb": None, "gpu_peak_reserved_mb": None}
    import torch

    return {"gpus": len(devices),
            "gpu_peak_allocated_mb": max(torch.cuda.max_memory_allocated(d) for d in devices) / 1e6,
            "gpu_peak_reserved_mb": max(torch.cuda.max_memory_reserved(d) for d in devices) / 1e6}


def param_checksum(named_parameters) -> str:
    digest = hashlib.sha256()
    for name, param in named_parameters:
        digest.update(name.encode())
        digest.update(param.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


class ReplicasDiverged(RuntimeError):
    pass


def check_replicas(checksums: dict[int, str]) -> None:
    """Data parallelism keeps every replica identical; anything else is a failed job."""
    if len(set(checksums.values())) != 1:
        raise ReplicasDiverged("replicas diverged after training: parameter checksums differ by rank "
                               + ", ".join(f"{r}={c}" for r, c in sorted(checksums.items())))


@dataclass
class Replica:
    """One rank's training state: the strategy, the model it wrapped, its optimizer and data."""

    strategy: object
    module: object  # the model as built
    model: object  # what the loop calls (the strategy's wrapper)
    optimizer: object
    loader: object


def build_replica(spec, ctx) -> Replica:
    """A fresh model (the same on every rank: same seed), wrapped by a fresh strategy, with its
    optimizer and this rank's shard of the data."""
    import torch

    from ddpbench import strategies
    from ddpbench.data import make_loader
    from ddpbench.models import build_model

    torch.manual_seed(spec.seed)
    module = build_model(spec.model, spec.model_size).to(ctx.device)
    strategy = strategies.create(spec)
    model = strategy.wrap(module, ctx)
    optimizer = strategy.make_optimizer(model)
    loader = make_loader(spec, ctx.rank, ctx.world_size, pin_memory=ctx.device.type == "cuda")
    return Replica(strategy, module, model, optimizer, loader)


def _no_mark(phase: str) -> None:
    pass


def train_step(replica: Replica, loss_fn, device, accum: int, mark=_no_mark) -> None:
    """One optimizer step of ``accum`` micro-steps; ``mark(phase)`` is called as each phase ends.

    The one definition of a training step: the worker's timed loop and the pytest-benchmark
    tasks (:mod:`ddpbench.group`) both run it.
    """
    model, optimizer, strategy = replica.model, replica.optimizer, replica.strategy
    non_blocking = device.type == "cuda"
    for micro in range(accum):
        _, inputs, labels = replica.loader.next()
        inputs = inputs.to(device, non_blocking=non_blocking)
        labels = labels.to(device, non_blocking=non_blocking)
        mark("data_ms")
        with strategy.accumulate() if micro < accum - 1 else contextlib.nullcontext():
            loss = loss_fn(model(inputs), labels)
            if accum > 1:
                loss = loss / accum
            mark("forward_ms")
            loss.backward()
        mark("backward_ms")
    strategy.after_backward()
    mark("comm_ms")
    strategy.optimizer_step(optimizer)
    optimizer.zero_grad(set_to_none=True)
    mark("optimizer_ms")
    strategy.after_step()
    mark("comm_ms")


class RankRun(Tracked):
    def __init__(self, job: dict, out_dir: Path | None):
        from ddpbench.spec import spec_from_dict

        self.spec = spec_from_dict(job["spec"], source="job spec")
        self.repeat = int(job["repeat"])
        self.timeout_s = float(job["timeout_s"])
        self.out_dir = out_dir
        self.rank = int(os.environ["RANK"])
        self.local_rank = int(os.environ.get("LOCAL_RANK", self.rank))
        self.world_size = int(os.environ["WORLD_SIZE"])  # processes; DataParallel: 1
        self.timeline = {"process_start": _PROCESS_START}

    def mark(self, event: str) -> None:
        self.timeline[event] = time.time()

    # -- setup -----------------------------------------------------------------------------
    def setup(self) -> None:
        self.mark("setup_start")
        import torch

        from ddpbench.models import count_params, grad_bytes
        from ddpbench.strategies import strategy_class
        from ddpbench.strategies.base import RankContext
        from ddpbench.timing import StepTimer, clock_for

        spec = self.spec
        expected = strategy_class(spec.strategy).processes(spec)
        if self.world_size != expected:
            raise RuntimeError(f"launcher started {self.world_size} processes; {spec.strategy} at world_size "
                               f"{spec.world_size} runs {expected}")
        torch.set_num_threads(int(spec.threads_per_rank))
        self.device = take_rank_device(spec.device, self.local_rank)
        self.attempt = join_process_group(spec.backend, self.rank, self.world_size, self.timeout_s, self.device)
        self.ctx = RankContext(self.rank, self.local_rank, self.world_size, self.device)
        self.loss_fn = torch.nn.CrossEntropyLoss()
        self.replica = self.build_replica()
        self.params, self.grad_bytes = count_params(self.replica.module), grad_bytes(self.replica.module)
        self.timer = StepTimer(clock_for(self.device))
        self.rows: list[list] = []
        self.recovery = Recovery(self) if spec.recovers else None
        self.mark("setup_done")

    def build_replica(self, spec=None) -> Replica:
        return build_replica(spec or self.spec, self.ctx)

    # -- the timed loop --------------------------------------------------------------------
    def run_steps(self, replica: Replica, phase: str, count: int, record: bool = True, first: int = 0,
                  recovery: "Recovery | None" = None) -> None:
        """Steps ``first`` to ``count - 1``, each of ``grad_accum`` micro-steps, every phase timed.
        ``recovery`` (measure phase of a fault-recovery job) plants the fault and takes snapshots."""
        timer, accum = self.timer, self.spec.grad_accum
        for step in range(first, count):
            self.at(phase, step)
            if recovery is not None:
                recovery.before_step(step)
            timer.start()
            train_step(replica, self.loss_fn, self.device, accum, timer.mark)
            row = timer.stop()
            if record:
                self.rows.append([self.rank, phase, step, *(row[p] for p in TIMED_PHASES), row["step_ms"]])
            if recovery is not None:
                recovery.after_step(step)

    def measure(self) -> None:
        spec, replica = self.spec, self.replica
        strategy = replica.strategy
        recovery = self.recovery
        first = recovery.resume() if recovery is not None else 0
        if first == 0:
            self.run_steps(replica, "warmup", spec.warmup_steps)
        self.run_steps(replica, "measure", spec.steps, first=first, recovery=recovery)
        self.memory = gpu_memory(strategy.devices())  # before the no-sync phase's snapshot adds a copy
        if recovery is not None:
            recovery.trained = {name: p.detach().clone() for name, p in replica.module.named_parameters()}
        self.strategy_stats = {**strategy.stats(), **strategy.traffic(self.grad_bytes),
                               "optimizer_state_mb": strategy.optimizer_state_mb(replica.optimizer)}
        if strategy.supports_no_sync:
            snap = strategy.snapshot(replica.optimizer)
            with strategy.no_sync():
                self.run_steps(replica, "nosync", spec.steps)
            strategy.restore(replica.optimizer, snap)
        strategy.finish_training()
        self.mark("measure_done")

    def check_equivalence(self) -> dict:
        """Train a fresh replica for the check steps and compare with single-process training.

        The check trains with momentum SGD whatever the job's optimizer: it tests how gradients
        are combined, and Adam would hide a wrongly scaled average (it normalises the gradient)
        while turning rounding noise into lr-sized steps. Every rank's parameters must agree;
        rank 0 trains the reference on the global batches. An exact strategy that differs by
        more than the tolerance fails the job, a lossy one reports its divergence.
        """
        import torch.distributed as dist

        from ddpbench.equivalence import check_exact, max_abs_diff, reference_parameters

        if self.spec.check_steps == 0:
            return {"max_abs_diff": None, "exact": None, "check_steps_run": 0}
        self.at("check")
        spec = dataclasses.replace(self.spec, optimizer="sgd")
        replica = self.build_replica(spec)
        steps = replica.strategy.check_steps()
        self.run_steps(replica, "check", steps, record=False)
        replica.strategy.finish_training()
        self.at("check")
        params = dict(replica.strategy.full_parameters())  # a collective for sharded strategies
        checksums = [None] * self.world_size
        dist.all_gather_object(checksums, param_checksum(params.items()))
        check_replicas(dict(enumerate(checksums)))
        exact = bool(replica.strategy.exact)
        result = {"max_abs_diff": None, "exact": exact, "check_steps_run": steps}
        if self.rank == 0:
            reference = reference_parameters(spec, steps, self.world_size, self.device)
            result["max_abs_diff"] = max_abs_diff(params, reference)
            if exact:
                check_exact(self.spec.strategy, result["max_abs_diff"])
        replica.strategy.close()
        self.mark("check_done")
        return result

    # -- gather and hand back --------------------------------------------------------------
    def finish(self) -> dict | None:
        import torch.distributed as dist

        self.at("gather")
        mine = {
            "rows": self.rows,
            "rank": {
                "rank": self.rank,
                "pid": os.getpid(),
                "threads": int(self.spec.threads_per_rank),
                "peak_rss_mb": peak_rss_mb(),
                **self.memory,
                "checksum": param_checksum(self.replica.strategy.full_parameters()),
                **self.strategy_stats,
            },
        }
        gathered = [None] * self.world_size if self.rank == 0 else None
        dist.gather_object(mine, gathered, dst=0)
        if self.rank != 0:
            return None
        self.mark("gather_done")
        check_replicas({g["rank"]["rank"]: g["rank"]["checksum"] for g in gathered})
        return {
            "spec": self.spec.to_dict(),
            "repeat": self.repeat,
            "params": self.params,
            "grad_bytes": self.grad_bytes,
            "step_columns": list(STEP_COLUMNS),
            "steps": [row for g in gathered for row in g["rows"]],
            "ranks": [g["rank"] for g in gathered],
            "timeline": self.timeline,  # rank 0's, seconds since the epoch
        }

    def teardown(self) -> None:
        """Free DDP before the group, then barrier and destroy: avoids gloo's abort at exit."""
        import torch.distributed as dist

        self.at("teardown")
        self.replica.strategy.close()
        self.replica = None
        gc.collect()
        dist.barrier()
        dist.destroy_process_group()


    def execute(self) -> dict | None:
        """The whole launch for this rank; rank 0 returns the result to hand back."""
        self.setup()
        self.measure()
        result = self.finish()
        recovery = self.recovery.compare_with_uninterrupted() if self.recovery is not None else None
        check = self.check_equivalence()
        if result is None:
            return None
        return {**result, "check": check, **({"recovery": recovery} if recovery is not None else {})}


class Recovery:
    """Elastic fault recovery for one rank of a DDP job run by torchrun with ``--max-restarts``.

    * the fault: in the first attempt, rank ``fault_rank`` stamps ``fault.json`` and SIGKILLs
      itself as measure step ``fault_step`` starts; torchrun's agents restart every worker;
    * snapshots: every ``snapshot_every`` measure steps each rank saves its timing rows, then
      (after a barrier) rank 0 saves model, optimizer, the next step and the data position to
      ``snapshot.pt``, atomically; a restarted attempt loads it (``weights_only=True``) on every
      rank and goes on from there, its earlier rows restored, so each step is stored once;
    * the figures (rank 0, last attempt): the time from the fault to the restarted worker's start
      (``restart_s``), to the snapshot loaded (``rejoin_s``), and to training back at the step the
      fault struck (``recovery_s``, the steps redone included); then a fresh replica trains the
      same steps uninterrupted and its parameters are compared bit for bit.
    """

    def __init__(self, run: "RankRun"):
        self.run = run
        self.attempt = run.attempt
        self.dir = run.out_dir
        self.resumed_from = None  # the measure step a restarted attempt went on from
        self.resumed_at = None
        self.back_at = None
        self.trained = None
        if self.attempt > 0:  # the failed attempt's hand-back is not this attempt's
            (self.dir / f"error.rank{run.rank}.json").unlink(missing_ok=True)

    @property
    def snapshot_path(self) -> Path:
        return self.dir / "snapshot.pt"

    @property
    def rows_path(self) -> Path:
        """This rank's timing rows as of the snapshot."""
        return self.dir / f"snapshot.rows.rank{self.run.rank}.json"

    def resume(self) -> int:
        """Load the last snapshot in a restarted attempt; the measure step to go on from."""
        import torch

        run = self.run
        if self.attempt == 0:
            return 0
        self.resumed_from = 0
        if self.snapshot_path.exists():
            state = torch.load(self.snapshot_path, map_location=run.device, weights_only=True)
            replica = run.replica
            replica.module.load_state_dict(state["model"])
            replica.optimizer.load_state_dict(state["optimizer"])
            replica.loader.seek(state["epoch"], state["position"])
            self.resumed_from = int(state["step"])
            saved = json.loads(self.rows_path.read_text())
            run.rows = [row for row in saved if row[1] != "measure" or row[2] < self.resumed_from]
        self.resumed_at = time.time()
        return self.resumed_from

    def before_step(self, step: int) -> None:
        spec, run = self.run.spec, self.run
        if self.attempt > 0 and step == spec.fault_step:
            self.back_at = time.time()
        if self.attempt == 0 and step == spec.fault_step and run.rank == spec.fault_rank:
            write_json_atomic(self.dir / "fault.json", {"time": time.time(), "step": step, "rank": run.rank})
            os.kill(os.getpid(), signal.SIGKILL)

    def after_step(self, step: int) -> None:
        import torch
        import torch.distributed as dist

        spec, run = self.run.spec, self.run
        if not spec.snapshot_every or (step + 1) % spec.snapshot_every or step + 1 >= spec.steps:
            return
        write_json_atomic(self.rows_path, run.rows)
        dist.barrier()
        if run.rank == 0:
            replica = run.replica
            tmp = self.snapshot_path.with_suffix(".tmp")
            torch.save({"model": replica.module.state_dict(), "optimizer": replica.optimizer.state_dict(),
                        "step": step + 1, "epoch": replica.loader.epoch, "position": replica.loader.position},
                       tmp)
            os.replace(tmp, self.snapshot_path)

    def compare_with_uninterrupted(self) -> dict:
        """Train a fresh replica through the same steps without a fault; the recovery figures."""
        import torch.distributed as dist

        from ddpbench.equivalence import max_abs_diff

        run, spec = self.run, self.run.spec
        run.at("recovery-check")
        replica = run.build_replica()
        run.run_steps(replica, "recovery-check", spec.warmup_steps + spec.steps, record=False)
        reference = dict(replica.module.named_parameters())
        diff = max_abs_diff(self.trained, reference)
        replica.strategy.close()
        diffs = [None] * run.world_size
        dist.all_gather_object(diffs, diff)
        figures = {"attempts": self.attempt + 1, "fault_step": spec.fault_step, "resumed_from_step": self.resumed_from,
                   "params_max_abs_diff": max(diffs), "params_identical": max(diffs) == 0.0}
        fault = self.dir / "fault.json"
        if self.attempt > 0 and fault.exists():
            struck = json.loads(fault.read_text())
            start = run.timeline["process_start"]
            figures.update(steps_redone=struck["step"] - self.resumed_from, restart_s=start - struck["time"],
                           rejoin_s=self.resumed_at - start,
                           recovery_s=(self.back_at or time.time()) - struck["time"])
        return figures


def join_process_group(backend: str, rank: int, world_size: int, timeout_s: float, device=None) -> int:
    """Join the job's process group through its launcher's store; the attempt this is (0: the first).

    torchrun's agent keeps its store across restarts, and a restarted gloo group that read the
    dead attempt's addresses from it would try to connect to a worker that is gone; so every
    attempt meets under a prefix of its own. The attempt is counted in the store itself (each
    rank counts its own starts; every restart starts every rank once), not taken from
    TORCHELASTIC_RESTART_COUNT: that is each agent's own count, and across nodes the agents
    differ (an agent restarting its workers because another node rejoined does not count it).

    An nccl group is bound to the rank's GPU (``device``): its communicator is made now, and
    barriers run on that GPU rather than on one NCCL guesses.
    """
    import torch.distributed as dist

    agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    timeout = timedelta(seconds=timeout_s)
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world_size,
                          is_master=not agent and rank == 0, timeout=timeout, multi_tenant=True)
    attempt = store.add(f"ddpbench/starts/rank{rank}", 1) - 1
    bound = {"device_id": device} if backend == "nccl" and device is not None else {}
    dist.init_process_group(backend, store=dist.PrefixStore(f"attempt{attempt}", store), rank=rank,
                            world_size=world_size, timeout=timeout, **bound)
    return attempt


def serve(run_class, prog: str, argv: list[str] | None = None) -> int:
    """A rank's process: run ``run_class(job, out).execute()``, hand back its result or error.

    Shared by every kind of job (training, collectives): the launcher contract is the same.
    """
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--job", required=True, type=Path, help="job JSON written by the launcher")
    parser.add_argument("--out", required=True, type=Path, help="folder for result.json / error.rank<R>.json")
    args = parser.parse_args(argv)

    adopt_slurm_env()
    parent = int(os.environ.get("DDPBENCH_PARENT_PID", os.getppid()))
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()

    rank = int(os.environ.get("RANK", "0"))
    run = None
    try:
        progress = Progress(progress_path(args.out, rank))
        run = run_class(json.loads(args.job.read_text()), args.out)
        run.progress = progress
        run.at("init")
        result = run.execute()
        if result is not None:
            write_json_atomic(args.out / "result.json", result)
        run.teardown()
        return 0
    except BaseException as err:  # noqa: BLE001 - every failure is handed back, then re-raised as exit 1
        write_json_atomic(args.out / f"error.rank{rank}.json", {
            "rank": rank,
            "phase": getattr(run, "phase", "init"),
            "step": getattr(run, "step", -1),
            "time": time.time(),
            "error": f"{type(err).__name__}: {err}".strip(),
            "traceback": traceback.format_exc(),
        })
        traceback.print_exc(file=sys.stderr)  # goes to the job's log file
        return 1


def adopt_slurm_env(environ=os.environ) -> None:
    """Under srun, without a launcher's RANK: take the rank from Slurm's task variables."""
    if "RANK" in environ or "SLURM_PROCID" not in environ:
        return
    environ["RANK"] = environ["SLURM_PROCID"]
    environ["WORLD_SIZE"] = environ["SLURM_NTASKS"]
    environ["LOCAL_RANK"] = environ.get("SLURM_LOCALID", "0")


def main(argv: list[str] | None = None) -> int:
    return serve(RankRun, "python -m ddpbench.worker", argv)


if __name__ == "__main__":
    sys.exit(main())
