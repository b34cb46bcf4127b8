"""A script rank: a user's training script, run as torchrun would run it, measured from outside.

What :func:`ddpbench.rank.protocol.serve` runs in every rank of a job with ``script`` set. The script
runs in this process as ``python train.py ARGS`` would (``runpy.run_path`` as ``__main__``, its
``sys.argv``, its folder first on ``sys.path``), with the environment torchrun gives (RANK,
LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), in a scratch folder of the
launch (``script/`` in its work folder, removed with it) that links every entry of the folder the
sweep was started in, so relative paths resolve as under torchrun and new files stay apart. It
makes its own process group and DDP model; :mod:`ddpbench.rank.script.shapes` runs a script that spawns
its ranks, makes its group on ddpbench's rendezvous and defers its group's destruction;
:mod:`ddpbench.rank.script.instrument` applies the job's DDP settings and times its steps. Whatever the
script starts ends with the rank (:func:`ddpbench.owner.reap_group_after`).

When the script stops (after ddpbench's steps) or ends (``script_to_end``), every rank's timings and
a checksum of its parameters are gathered to rank 0 through the script's own process group (whose
destruction the script asked for, if it did, waits until then), which fails the job if the
replicas differ. Then DDP and the optimizer are let go, and the group is destroyed after a barrier.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
import time
from functools import partial
from pathlib import Path

from ddpbench.experiment.scripts import script_path
from ddpbench.experiment.spec import spec_from_dict
from ddpbench.rank import affinity, protocol
from ddpbench.rank.protocol import START_DIR_ENV, Job, Tracked
from ddpbench.rank.record import rank_record
from ddpbench.rank.script.ddp_settings import check_ran
from ddpbench.rank.script.instrument import NO_GPU, Instrument
from ddpbench.rank.script.shapes import WORLD_SIZE_ARG, Shapes, link_start_dir, substitute_args, visible_devices
from ddpbench.rank.script.steps import JOB, WORLD_SIZES, BadScript, StopScript, refused, state_bytes
from ddpbench.rank.timing import clock_for
from ddpbench.rank.train import check_replicas, param_checksum
from ddpbench.results.schema import training_result

#: the launch's scratch folder a script runs in (in its work folder)
SCRIPT_CWD = "script"
#: how often a script's rank says which step it is at while its fast path writes nothing a step
PULSE_S = 1.0


def script_argv(spec) -> list[str]:
    """``sys.argv`` of the script: its path, then its arguments, ``{world_size}`` in them replaced by the
    job's world size, those naming a file or folder beside the experiment file as full paths."""
    base = Path(spec.script_dir or ".")
    args = substitute_args(json.loads(spec.script_args) if spec.script_args else [], spec.world_size)
    return [str(script_path(spec).resolve()),
            *(str((base / a).resolve()) if a and not Path(a).is_absolute() and (base / a).exists() else a
              for a in args)]


def torchrun_env(environ=os.environ) -> None:
    """What torchrun sets and a launcher may not have, so that a script (or the framework it uses:
    Lightning Fabric, Accelerate) that asks "was I started by torchrun?" finds what torchrun gives:
    LOCAL_WORLD_SIZE, the node's and role's ranks and sizes, ``TORCHELASTIC_RUN_ID`` (what
    ``torch.distributed.is_torchelastic_launched()`` reads), and the restart count; and
    ``"{world_size}"`` in a value of the environment replaced by the job's world size."""
    world = int(environ["WORLD_SIZE"])
    nodes = max(1, int(environ.get("SLURM_NNODES", "1")))
    environ.setdefault("LOCAL_WORLD_SIZE", str(world // nodes))
    local_world = max(1, int(environ["LOCAL_WORLD_SIZE"]))
    rank = int(environ["RANK"])
    for name, value in (("GROUP_RANK", rank // local_world), ("GROUP_WORLD_SIZE", max(1, world // local_world)),
                        ("ROLE_NAME", "default"), ("ROLE_RANK", rank), ("ROLE_WORLD_SIZE", world),
                        ("TORCHELASTIC_RUN_ID", "ddpbench"), ("TORCHELASTIC_RESTART_COUNT", 0),
                        ("TORCHELASTIC_MAX_RESTARTS", 0)):
        environ.setdefault(name, str(value))
    # what a launcher that starts torchrun passes by the ranks it starts (Lightning's `fabric run
    # --devices N` sets LT_DEVICES): written "{world_size}" in the sweep's environment, it is the job's
    for name, value in list(environ.items()):
        if WORLD_SIZE_ARG in value:
            environ[name] = value.replace(WORLD_SIZE_ARG, str(world))


class ScriptRank(Tracked):
    """One rank of a script job; see the module docstring."""

    def __init__(self, job: Job, out_dir: Path | None):
        self.spec = spec_from_dict(job.spec, source="job spec")
        self.repeat = job.repeat
        self.out_dir = Path(out_dir) if out_dir is not None else Path.cwd()
        self.rank = int(os.environ["RANK"])
        self.world_size = int(os.environ["WORLD_SIZE"])
        self.timeline = {"process_start": protocol.PROCESS_START}
        self.instrument: Instrument | None = None
        self.shapes: Shapes | None = None
        #: the folder the sweep was started in: the script's relative paths resolve from there
        self.start_dir = Path(os.environ.get(START_DIR_ENV) or os.getcwd())
        self.reaper = None

    def mark(self, event: str) -> None:
        self.timeline[event] = time.time()

    def run_script(self) -> str:
        """Run the script until ddpbench stops it or it ends; how it ended."""
        import runpy

        import torch

        from ddpbench.owner import reap_group_after

        spec = self.spec
        torchrun_env()
        if spec.device == "cuda":  # before anything asks CUDA: the script's device_count() is the node's ranks
            devices = visible_devices(os.environ.get("CUDA_VISIBLE_DEVICES"), int(os.environ["LOCAL_WORLD_SIZE"]))
            if devices is not None:
                os.environ["CUDA_VISIBLE_DEVICES"] = devices
        affinity.pin(spec, int(os.environ.get("LOCAL_RANK", self.rank)))  # before torch starts its threads
        torch.set_num_threads(int(spec.threads_per_rank))
        argv = script_argv(spec)
        cwd = self.out_dir / SCRIPT_CWD
        cwd.mkdir(parents=True, exist_ok=True)
        link_start_dir(self.start_dir, cwd, keep_out=self.out_dir)
        self.reaper = reap_group_after()  # the script's own processes end with this rank, however it ends
        home = os.getcwd()  # back there after the script: the launch's own paths may be relative to it
        os.chdir(cwd)
        sys.argv = argv
        sys.path.insert(0, str(Path(argv[0]).parent))
        self.instrument = Instrument(spec, self.rank, clock_for(torch.device(spec.device)), self.at)
        self.shapes = Shapes()
        self.shapes.install()
        self.instrument.install()
        self.at("script")
        self.mark("script_start")
        pulse_over = threading.Event()  # not "stop": the script's SystemExit is caught as that name below
        threading.Thread(target=self.pulse, args=(pulse_over,), daemon=True, name="ddpbench-pulse").start()
        try:
            try:
                runpy.run_path(argv[0], run_name="__main__")
                ended = "ended"
            except SystemExit as stop:
                if stop.code not in (None, 0):
                    raise BadScript(f"the script exited with code {stop.code} after {self.instrument.steps_done} "
                                    "optimizer steps") from None
                ended = "exited"
            why = self.shapes.no_ddp_line() if self.instrument.ddp is None else None
            if why:  # JOB alone: a script may start its own processes at one world size and not at another
                raise refused(why, JOB)
            return ended
        except StopScript:
            return "stopped"
        except (BadScript, KeyboardInterrupt):
            raise
        except Exception as err:  # the script's own error, named as the script raised it
            text = f"{type(err).__name__}: {err}".strip()
            if spec.device == "cpu" and any(sign in text for sign in NO_GPU):
                raise refused(f"the script needs a GPU and this job runs it on the CPU (device = 'cpu'): it "
                              f"raised {text}", JOB) from err
            raise BadScript(f"the script raised {text} (after {self.instrument.steps_done} optimizer steps)") from err
        finally:
            pulse_over.set()
            self.instrument.uninstall()
            self.shapes.uninstall()
            os.chdir(home)
            self.mark("script_done")

    def pulse(self, stop: threading.Event) -> None:
        """Until ``stop``: once every :data:`PULSE_S`, the step the rank is at on the fast path, said where it
        moved (a timeout's line names it, and a launch's stall limit sees the rank move), at no cost to the
        steps. Where it is said is read under the lock its own saying holds (:attr:`Tracked.saying`)."""
        said = None
        while not stop.wait(PULSE_S):
            with self.saying:
                where = self.instrument.fast_at()
                if where is not None and where != said:
                    self.at(f"script {where[0]}", where[1])
                    said = where

    def execute(self) -> dict | None:
        import torch.distributed as dist

        from ddpbench.strategies.base import ring_traffic
        from ddpbench.strategies.ddp import ddp_stats
        from ddpbench.workloads.catalog import tensor_bytes
        from ddpbench.workloads.models import count_params, count_tensors, grad_bytes

        ended = self.run_script()
        instrument = self.instrument
        if ended != "stopped":
            why = instrument.missing(ended)
            if why:  # JOB alone: a script's steps per epoch, or whether it builds DDP, may follow its world size
                raise refused(why, JOB)
        self.at("gather")
        ddp = instrument.ddp
        # a setting the script changed after it built DDP: not the job's
        check_ran(self.spec, ddp, partial(BadScript, refused=WORLD_SIZES))
        module = ddp.module
        sizes = grad_bytes(module)
        stats = ddp_stats(ddp)
        nbytes = sum(state_bytes(optimizer) for optimizer in instrument.optimizers or instrument.stepped)
        sent = ring_traffic(sizes, self.world_size) if self.world_size > 1 else 0.0
        own = {**stats, "bytes_sent_per_step": sent, "bytes_recv_per_step": sent,
               "traffic_source": "computed: ring all-reduce", "optimizer_state_mb": nbytes / 1e6,
               "bucket_comm_ms": instrument.bucket_comm_ms()}
        # memory taken at the end of the measured steps, before ddpbench's copy of the model and optimizer
        # state; here, before the checksum, where no measured step ran
        instrument.meters.take(missing=True)
        mine = {"rows": instrument.rows,
                "rank": rank_record(self.rank, self.spec.threads_per_rank, param_checksum(module.named_parameters()),
                                    instrument.meters, own),
                # the script's account, summed at rank 0 (result["script"]), not stored per rank
                "script": {"unseen": instrument.unseen, "samples": instrument.step_samples,
                           "late_comm": instrument.late_comm, "nosync_allreduced": instrument.nosync_allreduced,
                           "skipped": instrument.skipped}}
        figures = {"params": count_params(module), "grad_bytes": sizes, "tensors": count_tensors(module),
                   "tensor_bytes": list(tensor_bytes(module))}
        gathered = [None] * self.world_size if self.rank == 0 else None
        dist.gather_object(mine, gathered, dst=0)
        self.mark("gather_done")
        if self.rank != 0:
            return None
        check_replicas({g["rank"]["rank"]: g["rank"]["checksum"] for g in gathered})
        ranks = [g["rank"] for g in gathered]
        unseen: dict[str, int] = {}
        for g in gathered:
            for why, count in g["script"]["unseen"].items():
                unseen[why] = unseen.get(why, 0) + count
        result = training_result(
            self.spec.to_dict(), self.repeat, params=figures["params"], grad_bytes=sizes,
            steps=[row for g in gathered for row in g["rows"]], ranks=ranks, timeline=self.timeline,
            check={"max_abs_diff": None, "exact": None, "check_steps_run": 0,
                   "skipped": "a script's training is not replayed in one process; its replicas are compared by "
                              "checksum"},
            compute={"workload": self.spec.model_label, "tensors": figures["tensors"],
                     "tensor_bytes": figures["tensor_bytes"], "flops_per_step": None, "flops_source": None,
                     "peak_method": None})
        result["script"] = {
            "ended": ended, "ddp": instrument.ddp_settings, "ddp_overridden": instrument.ddp_overridden,
            "unseen": unseen,
            "samples_per_step": sorted({n for g in gathered for n in g["script"]["samples"]}),
            "destroy_deferred": self.shapes.destroy_deferred, "shapes": self.shapes.summary(),
            # checked only where a Python hook reduces the buckets (DDP's own all-reduce is not wrapped)
            "late_comm_steps": sum(g["script"]["late_comm"] for g in gathered) if instrument.comm == "python" else None,
            "no_sync": "DDP's require_backward_grad_sync held off (what DDP.no_sync() sets; the script's own setting "
                       "of it is honoured in the other steps), model and optimizer restored after",
            "nosync_allreduced": sum(g["script"]["nosync_allreduced"] for g in gathered),
            "skipped_steps": [row for g in gathered for row in g["script"]["skipped"]],
            "optimizers": [type(o).__name__ for o in instrument.optimizers or instrument.stepped],
            "comm": instrument.comm,
        }
        return result

    def teardown(self) -> None:
        """Let go of DDP and the optimizer before the group, then barrier and destroy: avoids gloo's
        abort at exit."""
        import torch.distributed as dist

        self.at("teardown")
        if self.instrument is not None:
            self.instrument.let_go()
        self.instrument = None
        gc.collect()
        if dist.is_initialized():
            dist.barrier()
            dist.destroy_process_group()
