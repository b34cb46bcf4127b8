"""A training rank: process group, model, strategy, timed loop, gather, one result out.

What :func:`ddpbench.rank.protocol.serve` runs in every rank of a training launch (a job of kind
"run"). Phases of a launch:

  warmup   ``warmup_steps`` steps, timed and stored apart;
  measure  ``steps`` steps with gradient synchronisation;
  nosync   the same number of steps inside the strategy's ``no_sync()`` (when it has one):
           the no-communication step time at the same world size. The model and optimizer
           are restored afterwards, so the replicas stay identical;
  finish   every rank's timings and a checksum of its parameters are gathered to rank 0,
           which fails the job loudly if the replicas differ;
  check    a fresh replica trains the check steps and is compared with single-process training
           (:mod:`ddpbench.rank.equivalence`); a fault-recovery job is first compared with an
           uninterrupted replica (:mod:`ddpbench.rank.recovery`).

Every timed step of the warmup, measure and nosync phases also notes when this rank's last gradient
of the step was accumulated (``ready_ms``: a post-accumulate-grad hook on every trainable parameter,
:func:`~ddpbench.rank.timing.ready_hooks`), before DDP's end-of-backward wait for the all-reduce; the untimed steps (the
checks, a compile step, the regression tasks) and the traced ones run without those hooks.

The job's ``cpu_affinity`` is applied before torch starts its threads (:mod:`ddpbench.rank.affinity`).
Each rank's meters (:mod:`ddpbench.rank.record`: the CPUs it may run on, its context switches, its
memory, energy and strategy's figures) start with the measured steps and stop as they end; its record
is built from them.

Rank 0 hands back :func:`ddpbench.results.schema.training_result`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ddpbench.errors import InputError
from ddpbench.experiment.spec import spec_from_dict
from ddpbench.rank import affinity, protocol
from ddpbench.rank.devices import synchronize, take_rank_device
from ddpbench.rank.energy import meter_for
from ddpbench.rank.precision import CompileWatch, Precision, compile_module, use_compile_cache
from ddpbench.rank.protocol import Job, Tracked, join_process_group, leave_process_group
from ddpbench.rank.record import Meters, Side, rank_record
from ddpbench.rank.recovery import Recovery
from ddpbench.rank.timing import StepTimer, clock_for, ready_hooks
from ddpbench.results.schema import TIMED_PHASES, training_result
from ddpbench.strategies import create as create_strategy
from ddpbench.strategies import strategy_class


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
    workload: object  # what the model, its data and its loss came from
    precision: object = None  # its compute precision (:class:`ddpbench.rank.precision.Precision`)


def build_replica(spec, ctx, before_wrap=None) -> Replica:
    """A fresh workload (the same on every rank: same seed), its model wrapped by a fresh strategy,
    with its optimizer and this rank's shard of the data. ``before_wrap(workload, loader)`` runs
    on the bare model, before a strategy puts hooks on it (the FLOP count)."""
    from ddpbench.workloads.build import build_workload
    from ddpbench.workloads.data import make_loader

    workload = build_workload(spec)
    module = workload.model.to(ctx.device)
    loader = make_loader(spec, workload, ctx.rank, ctx.world_size, pin_memory=ctx.device.type == "cuda")
    if before_wrap is not None:
        before_wrap(workload, loader)
    strategy = create_strategy(spec)
    model = strategy.wrap(module, ctx)
    optimizer = strategy.make_optimizer(model)
    if spec.compile:  # the strategy's wrapper, as users compile DDP; compiled on its first call
        model = compile_module(model)
    return Replica(strategy, module, model, optimizer, loader, workload, Precision(spec.precision, ctx.device))


#: the kinds of step (:data:`~ddpbench.results.schema.STEP_KINDS`) that note ``ready_ms``: the timed steps of
#: the built-in training
READY_KINDS = ("warmup", "measure", "nosync")


def no_phase(name: str):
    """The phase context of an untimed step: nothing at all."""
    return contextlib.nullcontext()


def train_step(replica: Replica, device, accum: int, phase=no_phase) -> None:
    """One optimizer step of ``accum`` micro-steps, each phase's work in a ``with phase(name):``
    block (:data:`~ddpbench.results.schema.TIMED_PHASES`; the timer marks a phase as its block ends,
    and a traced step also names the block in the profiler's trace, :mod:`ddpbench.rank.trace`).

    The one definition of a training step: the rank's timed loop, its traced steps and the
    pytest-benchmark tasks (:mod:`ddpbench.benchplugin.tasks`) all run it.
    """
    from ddpbench.workloads.data import forward, to_device

    model, optimizer, strategy = replica.model, replica.optimizer, replica.strategy
    precision = replica.precision or Precision("fp32", device)
    loss_fn = replica.workload.loss
    non_blocking = device.type == "cuda"
    for micro in range(accum):
        with phase("data_ms"):
            inputs, target = replica.loader.next()
            inputs = to_device(inputs, device, non_blocking)
            target = to_device(target, device, non_blocking)
        with strategy.accumulate() if micro < accum - 1 else contextlib.nullcontext():
            with phase("forward_ms"):
                with precision.autocast():
                    loss = loss_fn(forward(model, inputs), target)
                if accum > 1:
                    loss = loss / accum
            with phase("backward_ms"):
                strategy.backward(precision.scale(loss))
    with phase("comm_ms"):
        strategy.after_backward()
    with phase("optimizer_ms"):
        precision.optimizer_step(strategy, optimizer)
        optimizer.zero_grad(set_to_none=True)
    with phase("comm_ms"):
        strategy.after_step()


def step_row(rank: int, kind: str, step: int, row: dict, ready: bool) -> list:
    """A stored step row (:data:`~ddpbench.results.schema.STEP_COLUMNS`) of a timed step's ``row``, of the step
    kind ``kind``; ``ready``: whether the step noted ``ready_ms`` (NaN otherwise)."""
    return [rank, kind, step, *(row[p] for p in TIMED_PHASES), row["step_ms"],
            row.get("ready_ms", math.nan) if ready else math.nan]


class TrainingRank(Tracked):
    """One rank of a training launch; see the module docstring for its phases."""

    def __init__(self, job: Job, out_dir: Path | None):
        self.spec = spec_from_dict(job.spec, source="job spec")
        self.repeat = job.repeat
        self.timeout_s = job.timeout_s
        self.out_dir = out_dir
        self.rank = int(os.environ["RANK"])
        self.local_rank = int(os.environ.get("LOCAL_RANK", self.rank))
        self.world_size = int(os.environ["WORLD_SIZE"])  # processes; DataParallel: 1
        self.timeline = {"process_start": protocol.PROCESS_START}  # the fork, for a forked rank
        #: whether this launch also does the work whose answer does not change between repeats (the
        #: equivalence check, the FLOP count, the matmul peak): the first repeat, or every one if asked
        self.per_job = self.repeat == 0 or bool(self.spec.check_every_repeat)
        #: what the sweep handed this launch instead of measuring it again (:attr:`Job.given`)
        self.given = job.given
        self.trace_events: list[list] | None = None  # what the traced steps' timeline needs, if traced
        self.trace_error: str | None = None  # why this rank's trace could not be read back, if it could not

    def mark(self, event: str) -> None:
        self.timeline[event] = time.time()

    # -- setup -----------------------------------------------------------------------------
    def setup(self) -> None:
        self.mark("setup_start")
        import torch

        from ddpbench.strategies.base import RankContext  # torch, as the rest of setup
        from ddpbench.workloads.catalog import tensor_bytes
        from ddpbench.workloads.models import count_params, count_tensors, grad_bytes

        spec = self.spec
        expected = strategy_class(spec.strategy).processes(spec)
        if self.world_size != expected:
            raise RuntimeError(f"launcher started {self.world_size} processes; {spec.strategy} at world_size "
                               f"{spec.world_size} runs {expected}")
        self.pinned = affinity.pin(spec, self.local_rank)  # before torch starts its threads
        torch.set_num_threads(int(spec.threads_per_rank))
        self.device = take_rank_device(spec.device, self.local_rank)
        attempt = join_process_group(spec.backend, self.rank, self.world_size, self.timeout_s, self.device)
        self.mark("group_joined")
        self.ctx = RankContext(self.rank, self.local_rank, self.world_size, self.device)
        self.compute = {}
        self.compiling = None
        if spec.compile:  # the job's own Inductor cache, and Dynamo's counters from zero
            self.compile_cache, self.compile_cache_warm = use_compile_cache(self.out_dir, spec.key)
            self.compiling = CompileWatch()
        self.replica = build_replica(spec, self.ctx,
                                     before_wrap=self.count_flops if self.rank == 0 and self.per_job else None)
        self.mark("replica_built")
        self.nondeterministic = self.replica.workload.nondeterministic
        self.gemm = self.measure_gemm_peak() if self.per_job else {"peak_flops": None, "peak_method": None}
        self.mark("peak_measured")
        self.params, self.grad_bytes = count_params(self.replica.module), grad_bytes(self.replica.module)
        self.tensors = count_tensors(self.replica.module)
        self.tensor_bytes = list(tensor_bytes(self.replica.module))
        self.timer = StepTimer(clock_for(self.device))
        self.rows: list[list] = []
        self.recovery = Recovery(spec, self.rank, attempt, self.out_dir) if spec.recovers else None
        self.mark("setup_done")

    def build_replica(self, spec=None) -> Replica:
        return build_replica(spec or self.spec, self.ctx)

    def count_flops(self, workload, loader) -> None:
        """FLOPs this process computes per optimizer step (rank 0, once, on the bare model)."""
        from ddpbench.rank.flops import job_flops

        self.compute = job_flops(workload, loader.loader, self.device, self.spec.accumulation, self.given.get("flops"))

    def measure_gemm_peak(self) -> dict:
        """What a matmul reaches on this rank's threads (or GPU), every rank at once, as they train; or,
        where every rank was handed one that fits it, the peak an earlier launch measured under the same
        conditions (:mod:`ddpbench.sweep.measured_once`), labelled so (``peak_source``, ``peak_taken_utc``)."""
        import torch
        import torch.distributed as dist

        from ddpbench.rank.flops import measure_gemm_peak, offered_peak

        offered = offered_peak(self.given.get("gemm"), self.local_rank, self.device, torch.get_num_threads())
        fits = [None] * self.world_size
        dist.all_gather_object(fits, offered is not None)  # every rank at once, measured or not
        if all(fits):
            return offered
        return {**measure_gemm_peak(self.device), "peak_source": "measured", "peak_taken_utc": None}

    # -- the timed loop --------------------------------------------------------------------
    def run_steps(self, replica: Replica, kind: str, count: int, record: bool = True, first: int = 0,
                  recovery: Recovery | None = None) -> None:
        """Steps ``first`` to ``count - 1`` of the step kind ``kind`` (warmup, measure, nosync), each of
        ``grad_accum`` micro-steps, every phase timed. ``recovery`` (the measure steps of a fault-recovery
        job) plants the fault and takes snapshots."""
        if replica.strategy.owns_loop:
            self.run_loop(replica, ((kind, count - first),), record)
            return
        timer, accum = self.timer, self.spec.accumulation
        hooked = record and kind in READY_KINDS
        with ready_hooks(replica.module, timer) if hooked else contextlib.nullcontext():
            for step in range(first, count):
                self.at(kind, step)
                if recovery is not None:
                    recovery.before_step(step)
                timer.start()
                train_step(replica, self.device, accum, timer.phase)
                row = timer.stop()
                if record:
                    self.rows.append(step_row(self.rank, kind, step, row, hooked))
                    if "first_step" not in self.timeline:  # the end of the launch's first timed step
                        self.mark("first_step")
                if recovery is not None:
                    recovery.after_step(step, replica, self.rows)

    def run_loop(self, replica: Replica, phases, record: bool = True) -> None:
        """A framework that owns the training loop (Lightning's Trainer) runs every phase of ``phases``
        ((name, steps), ...) back to back in one run of its own, each step timed as it lets us see."""
        named = [(name, step) for name, count in phases for step in range(count)]
        self.at(*(named[0] if named else (phases[0][0], -1)))

        def ended(done: int) -> None:  # where the rank is, as run_steps says it: the step under way
            if done < len(named):
                self.at(*named[done])

        rows = replica.strategy.fit(replica, len(named), self.device, ended)
        if record:
            for (name, step), row in zip(named, rows):
                self.rows.append(step_row(self.rank, name, step, row, False))

    def measure(self) -> None:
        spec, replica = self.spec, self.replica
        strategy = replica.strategy
        recovery = self.recovery
        first = 0
        if recovery is not None:
            first, rows = recovery.resume(replica, self.device)
            if rows is not None:
                self.rows = rows  # this rank's rows as of the snapshot: each step is stored once
        if self.compiling is not None:  # compiled on the first call: one untimed step, never a measured one
            self.compiling.time(lambda: self.run_steps(replica, "compile", 1, record=False))
            self.mark("compiled")
        # what the rank records of its measured steps, as they start and end (its energy counter made now)
        self.meters = Meters(Side(gpus=strategy.devices, energy=lambda: meter_for(strategy.devices()),
                                  strategy=self.strategy_figures, gemm=lambda: self.gemm,
                                  trace_error=lambda: self.trace_error))
        if strategy.owns_loop:  # warmup and measured steps in the framework's one run, as a user's
            self.meters.start()
            self.run_loop(replica, (("warmup", spec.warmup_steps), ("measure", spec.steps)))
            measured = spec.warmup_steps + spec.steps  # its warmup is not apart: counted with the measured steps
        else:
            if first == 0:
                self.run_steps(replica, "warmup", spec.warmup_steps)
            self.meters.start()
            self.run_steps(replica, "measure", spec.steps, first=first, recovery=recovery)
            measured = spec.steps - first
        synchronize(strategy.devices())
        self.meters.stop(measured, measured * spec.global_batch)  # energy over the timed steps only
        # memory and the strategy's figures as training left it, the same point for every strategy: before
        # the no-sync phase's snapshot (a copy of model and optimizer state, taken only by strategies with
        # no_sync) and before the checks build replicas of their own
        self.meters.take()
        if recovery is not None:
            self.trained = {name: p.detach().clone() for name, p in replica.module.named_parameters()}
        if strategy.supports_no_sync:
            snap = strategy.snapshot(replica.optimizer)
            with strategy.no_sync():
                self.run_steps(replica, "nosync", spec.steps)
            strategy.restore(replica.optimizer, snap)
        if spec.trace_steps:
            self.record_trace()
        strategy.finish_training()
        self.mark("measure_done")

    def strategy_figures(self) -> dict:
        """The strategy's own figures as training left it: its statistics, its traffic, the optimizer
        state this rank holds, and what the precision and the compilation did."""
        strategy = self.replica.strategy
        return {**strategy.stats(), **strategy.traffic(self.grad_bytes),
                "optimizer_state_mb": strategy.optimizer_state_mb(self.replica.optimizer), **self.precision_figures()}

    def precision_figures(self) -> dict:
        """What the compute precision and the compilation did in this rank, read after the measured
        steps (warmup and measure together): the GradScaler's skipped steps and its scale (fp16), and
        the compile figures (:class:`~ddpbench.rank.precision.CompileWatch`), the compile cache's
        state when the rank started (warm: filled by an earlier launch of the job)."""
        precision = self.replica.precision
        out = {"amp_skipped_steps": precision.skipped_steps(), "amp_loss_scale": precision.loss_scale()}
        if self.compiling is not None:
            out.update(self.compiling.figures())
            out["compile_cache"] = "warm" if self.compile_cache_warm else "cold"
        return out

    def record_trace(self) -> None:
        """``trace_steps`` more steps under PyTorch's profiler (:mod:`ddpbench.rank.trace`): their
        timed rows (phase ``trace``), this rank's trace file and the events of its timeline."""
        import tempfile

        import torch.distributed as dist

        from ddpbench.rank import trace

        self.at("trace")
        replica, accum = self.replica, self.spec.accumulation
        with tempfile.TemporaryDirectory() as scratch:  # a launch without a work folder keeps no file
            path = trace.trace_file(self.out_dir or Path(scratch), self.rank)
            rows = trace.record_steps(lambda phase: train_step(replica, self.device, accum, phase), self.timer,
                                      self.spec.trace_steps, self.device, path, dist.barrier)
            try:  # reading it back runs no collective: a trace that cannot be read costs its timeline only
                self.trace_events = trace.read_timeline(path, self.rank)
            except (OSError, EOFError, ValueError, KeyError, TypeError, InputError) as err:
                self.trace_error = f"{path.name}: {type(err).__name__}: {err}"
                print(f"ddpbench: the trace cannot be read back: {self.trace_error}", flush=True)
        for step, row in enumerate(rows):
            self.rows.append(step_row(self.rank, "trace", step, row, False))
        self.mark("trace_done")

    def check_equivalence(self) -> dict:
        """Train a fresh replica for the check steps and compare with single-process training.

        The check trains with momentum SGD whatever the job's optimizer: it tests how gradients
        are combined, and Adam would hide a wrongly scaled average (it normalises the gradient)
        while turning rounding noise into lr-sized steps. Every rank's parameters must agree;
        rank 0 trains the reference on the global batches. An exact strategy that differs by
        more than the tolerance fails the job, a lossy one reports its divergence. A workload that
        says it is not deterministic is not checked, and the reason it gave is stored instead.
        """
        import torch.distributed as dist

        from ddpbench.rank.equivalence import check_exact, max_abs_diff, reference_parameters, tolerance

        if self.spec.check_steps == 0:
            return {"max_abs_diff": None, "exact": None, "check_steps_run": 0}
        if not self.per_job:  # checked in the job's first repeat: the same code on the same seed
            return {"max_abs_diff": None, "exact": None, "check_steps_run": 0, "checked_in_repeat": 0}
        by = (self.given.get("check") or {}).get("checked_in_job")
        handed = [None] * self.world_size
        dist.all_gather_object(handed, by if isinstance(by, str) and not self.spec.check_every_repeat else None)
        if handed[0] is not None and all(h == handed[0] for h in handed):
            # a job that differs only in what does not change the check passed it (ddpbench.sweep.checks),
            # handed to every rank (where one was not, all of them run the check)
            return {"max_abs_diff": None, "exact": None, "check_steps_run": 0, "checked_in_job": handed[0]}
        if self.nondeterministic:
            return {"max_abs_diff": None, "exact": None, "check_steps_run": 0, "skipped": self.nondeterministic}
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
        # the strategy's own promise, then the precision's: bf16 and fp16 compute is lossy by design,
        # and an exact strategy computing in it is held to that precision's tolerance
        exact = bool(replica.strategy.exact)
        limit = tolerance(spec.precision)
        result = {"max_abs_diff": None, "exact": exact and spec.precision == "fp32", "check_steps_run": steps,
                  "tolerance": limit if exact else None}
        if spec.precision != "fp32":
            result["lossy_reason"] = f"{spec.precision} compute (torch.autocast)"
        if self.rank == 0:
            reference = reference_parameters(spec, steps, self.world_size, self.device)
            result["max_abs_diff"] = max_abs_diff(params, reference)
            if exact:
                check_exact(f"{self.spec.strategy} ({spec.setting})", result["max_abs_diff"], limit)
        replica.strategy.close()
        self.mark("check_done")
        return result

    def check_recovery(self) -> dict:
        """Train a fresh replica through the same steps without a fault, and compare its parameters
        with the recovered ones (bit for bit, on every rank): the recovery figures."""
        import torch.distributed as dist

        from ddpbench.rank.equivalence import max_abs_diff

        spec = self.spec
        self.at("recovery-check")
        replica = self.build_replica()
        self.run_steps(replica, "recovery-check", spec.warmup_steps + spec.steps, record=False)
        diff = max_abs_diff(self.trained, dict(replica.module.named_parameters()))
        replica.strategy.close()
        diffs = [None] * self.world_size
        dist.all_gather_object(diffs, diff)
        return self.recovery.figures(max(diffs), self.timeline["process_start"])

    # -- gather and hand back --------------------------------------------------------------
    def finish(self) -> dict | None:
        import torch.distributed as dist

        self.at("gather")
        mine = {
            "rows": self.rows,
            "trace": self.trace_events,
            "rank": rank_record(self.rank, self.spec.threads_per_rank,
                                param_checksum(self.replica.strategy.full_parameters()), self.meters),
        }
        gathered = [None] * self.world_size if self.rank == 0 else None
        dist.gather_object(mine, gathered, dst=0)
        if self.rank != 0:
            return None
        self.mark("gather_done")
        check_replicas({g["rank"]["rank"]: g["rank"]["checksum"] for g in gathered})
        traced = [g["trace"] for g in gathered if g["trace"] is not None]
        return {"steps": [row for g in gathered for row in g["rows"]], "ranks": [g["rank"] for g in gathered],
                "trace": [row for events in traced for row in events] if traced else None}

    def teardown(self) -> None:
        """Free DDP before the group ends, then leave it (protocol.leave_process_group): no gloo abort."""
        self.at("teardown")
        self.replica.strategy.close()
        self.replica = None
        gc.collect()
        leave_process_group()

    def execute(self) -> dict | None:
        """The whole launch for this rank; rank 0 returns the result to hand back."""
        self.setup()
        self.measure()
        gathered = self.finish()
        recovery = self.check_recovery() if self.recovery is not None else None
        check = self.check_equivalence()
        if gathered is None:
            return None
        return training_result(self.spec.to_dict(), self.repeat, params=self.params, grad_bytes=self.grad_bytes,
                               steps=gathered["steps"], ranks=gathered["ranks"],
                               timeline=self.timeline,  # rank 0's, seconds since the epoch
                               check=check, recovery=recovery,
                               compute={**self.compute, "tensors": self.tensors, "tensor_bytes": self.tensor_bytes,
                                        "peak_method": self.gemm["peak_method"],
                                        "peak_source": self.gemm.get("peak_source"),
                                        "peak_taken_utc": self.gemm.get("peak_taken_utc")},
                               trace=gathered["trace"])
