"""The rank protocol: how a launched process learns its job, says where it is, and hands back one result.

Every launcher starts every rank of every kind of launch the same way::

    python -m ddpbench.rank --job DIR/job.json --out DIR

with the rank in the environment exactly as torchrun sets it (RANK, LOCAL_RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT; under srun without them, Slurm's task variables: :func:`adopt_slurm_env`).
The work folder is the whole interface; nothing a rank prints is parsed:

  job.json            the launcher's :class:`Job`: the kind of launch, its spec, repeat and timeout
  result.json         rank 0's hand-back (:mod:`ddpbench.results.schema`), written atomically
  error.rank<R>.json  a rank that failed: its phase and step, the error and its traceback (and, for
                      a refusal of a script's shape, ``refused``: the launches it stands for)
  progress.rank<R>    where a rank is (:class:`Progress`), read when it cannot say so itself

:func:`serve` is a rank's whole life: it watches the process that started it (a rank never
outlives its launcher), runs the job's work, and hands back its result or its error.
"""

from __future__ import annotations

import time

#: when this module was first imported: in a rank, its start, before any heavy import
PROCESS_START = time.time()

import argparse  # noqa: E402 - the start time above is taken before any import
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import traceback  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from datetime import timedelta  # noqa: E402
from pathlib import Path  # noqa: E402

#: what every launcher starts, once per rank: ``python -m ddpbench.rank --job JOB --out DIR``
RANK_MODULE = "ddpbench.rank"
JOB_FILE = "job.json"
RESULT_FILE = "result.json"
#: what a sweep hands a launch (:attr:`Job.given`), left in its work folder before the launcher
#: writes the job file, which takes it in
GIVEN_FILE = "given.json"


#: the folder the sweep was started in, as the launcher tells its ranks (a script's relative paths
#: resolve from there, as under torchrun); a rank without it takes its own working folder
START_DIR_ENV = "DDPBENCH_START_DIR"

#: every rank's error file in a work folder (:func:`error_path`)
ERROR_GLOB = "error.rank*.json"


def error_path(out_dir: Path, rank: int) -> Path:
    return out_dir / f"error.rank{rank}.json"


#: every rank's progress file in a work folder (:func:`progress_path`)
PROGRESS_GLOB = "progress.rank*"


def progress_path(out_dir: Path, rank: int) -> Path:
    return out_dir / f"progress.rank{rank}"


@dataclass(frozen=True)
class Job:
    """What a launcher tells its ranks: the kind of launch (a spec's ``kind``: "run" for a training
    job, "collective" for the micro-benchmarks), its spec as a dict, the repeat, the timeout and the
    stall limit (``stall_s``: no rank moved for this long, the launch is ended as hung; None: none);
    ``given``: what the sweep hands the launch instead of having it measure again (figures measured
    once, :mod:`ddpbench.sweep.measured_once`; the job whose equivalence check stands for this one's), {} if
    nothing: the sweep leaves it in the work folder (:data:`GIVEN_FILE`) before the launch starts."""

    kind: str
    spec: dict
    repeat: int
    timeout_s: float
    given: dict = field(default_factory=dict)
    stall_s: float | None = None

    @classmethod
    def of(cls, spec, repeat: int, timeout_s: float, given: dict | None = None, stall_s: float | None = None) -> Job:
        return cls(spec.kind, spec.to_dict(), repeat, timeout_s, dict(given or {}), stall_s)

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps({"kind": self.kind, "spec": self.spec, "repeat": self.repeat,
                                    "timeout_s": self.timeout_s, **({"given": self.given} if self.given else {}),
                                    **({"stall_s": self.stall_s} if self.stall_s is not None else {})}))
        return path

    @classmethod
    def read(cls, path: Path) -> Job:
        data = json.loads(path.read_text())
        given, stall_s = data.get("given"), data.get("stall_s")
        return cls(data["kind"], data["spec"], int(data["repeat"]), float(data["timeout_s"]),
                   given if isinstance(given, dict) else {}, None if stall_s is None else float(stall_s))


def write_json_atomic(path: Path, payload: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as fh:
        json.dump(payload, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def output_to(path) -> None:
    """Point this process's stdout and stderr, descriptors and Python's streams (line-buffered, as
    PYTHONUNBUFFERED asks), at the log file ``path``: a rank's output, wherever it was started."""
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)


PROGRESS_BYTES = 64


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
    """Base of a rank's work: ``at(phase, step)`` records where it is, for its error report and
    its progress file. A kind of launch subclasses it with ``execute()`` (rank 0 returns the
    result to hand back, the others None) and ``teardown()``."""

    phase, step = "init", -1
    progress: Progress | None = None
    #: held while where the rank is is said: a thread that says it too (a script's pulse) reads where the
    #: rank is and writes it under this lock, so that it never writes over a newer line with an older one
    saying = threading.RLock()

    def at(self, phase: str, step: int = -1) -> None:
        with self.saying:
            self.phase, self.step = phase, step
            if self.progress is not None:
                self.progress.write(phase, step)


def watch_parent(parent_pid: int) -> None:
    """Exit if the launcher dies: no rank outlives the process that owns it (a thread's target)."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent_pid:
            os._exit(3)


def adopt_slurm_env(environ=os.environ) -> None:
    """Under srun, without a launcher's RANK: take the rank from Slurm's task variables."""
    if "RANK" in environ or "SLURM_PROCID" not in environ:
        return
    environ["RANK"] = environ["SLURM_PROCID"]
    environ["WORLD_SIZE"] = environ["SLURM_NTASKS"]
    environ["LOCAL_RANK"] = environ.get("SLURM_LOCALID", "0")


#: set by a launcher whose workers are already in the job's process group when the rank starts (Ray
#: Train makes it before it calls the training function): the rank adopts that group, and leaves its
#: destruction to the launcher that made it
ADOPT_GROUP_ENV = "DDPBENCH_ADOPT_GROUP"


def adopts_group(environ=os.environ) -> bool:
    return environ.get(ADOPT_GROUP_ENV) == "1"


def adopt_process_group(backend: str, rank: int, world_size: int) -> int:
    """The process group a launcher made before the rank started (Ray Train's), checked against the
    job: the backend, this rank and the world size must be the job's. Attempt 0: such a launcher
    restarts no worker into an old group."""
    import torch.distributed as dist

    if not dist.is_initialized():
        raise RuntimeError(f"{ADOPT_GROUP_ENV}=1 but no process group was made before the rank started")
    made = (dist.get_backend(), dist.get_rank(), dist.get_world_size())
    if made != (backend, rank, world_size):
        raise RuntimeError(f"the launcher's process group is (backend, rank, world size) {made}; the job runs "
                           f"{(backend, rank, world_size)}")
    return 0


#: True in a rank whose process ends by ``os._exit``, never by the interpreter's teardown: a rank
#: forked from the warm server (:mod:`ddpbench.rank.forked` sets it), which ``multiprocessing`` ends
#: so. Destroying a gloo group guards against gloo's abort while destructors race its threads at
#: interpreter exit; such a process runs no destructor, so its gloo group is left, not destroyed
ENDS_BY_EXIT = False


def leave_process_group() -> None:
    """The end of a rank's group: a barrier (no rank leaves while another still talks), then its
    destruction, unless the launcher made the group (:data:`ADOPT_GROUP_ENV`): that one destroys its
    own; or unless the group is gloo's in a rank that ends by ``os._exit`` (:data:`ENDS_BY_EXIT`):
    there nothing races gloo's threads at exit, and destroying it waited about 20 ms a launch."""
    import torch.distributed as dist

    if not dist.is_initialized():
        return
    dist.barrier()
    if adopts_group() or (ENDS_BY_EXIT and dist.get_backend() == "gloo"):
        return
    dist.destroy_process_group()


def join_process_group(backend: str, rank: int, world_size: int, timeout_s: float, device=None) -> int:
    """Join the job's process group through its launcher's store; the attempt this is (0: the first).
    Where the launcher made the group already (:data:`ADOPT_GROUP_ENV`), adopt it instead.

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

    if adopts_group():
        return adopt_process_group(backend, rank, world_size)
    agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    timeout = timedelta(seconds=timeout_s)
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world_size,
                          is_master=not agent and rank == 0, timeout=timeout, multi_tenant=True)
    attempt = store.add(f"ddpbench/starts/rank{rank}", 1) - 1
    bound = {"device_id": device} if backend == "nccl" and device is not None else {}
    dist.init_process_group(backend, store=dist.PrefixStore(f"attempt{attempt}", store), rank=rank,
                            world_size=world_size, timeout=timeout, **bound)
    return attempt


def serve(works: dict, argv: list[str] | None = None) -> int:
    """A rank's process: run ``works[job.kind](job, out_dir).execute()``, hand back its result or error.

    ``works`` maps each kind of launch to the class of its rank's work (a :class:`Tracked`).
    """
    parser = argparse.ArgumentParser(prog="python -m ddpbench.rank")
    parser.add_argument("--job", required=True, type=Path, help="job JSON written by the launcher")
    parser.add_argument("--out", required=True, type=Path, help="folder for result.json / error.rank<R>.json")
    args = parser.parse_args(argv)

    adopt_slurm_env()
    parent = int(os.environ.get("DDPBENCH_PARENT_PID", os.getppid()))
    threading.Thread(target=watch_parent, args=(parent,), daemon=True).start()

    rank = int(os.environ.get("RANK", "0"))
    run = None
    try:
        progress = Progress(progress_path(args.out, rank))
        job = Job.read(args.job)
        run = works[job.kind](job, args.out)
        run.progress = progress
        run.at("init")
        result = run.execute()
        if result is not None:
            write_json_atomic(args.out / RESULT_FILE, result)
        run.teardown()
        return 0
    except BaseException as err:  # noqa: BLE001 - every failure is handed back, then re-raised as exit 1
        write_json_atomic(error_path(args.out, rank), {
            "rank": rank,
            "phase": getattr(run, "phase", "init"),
            "step": getattr(run, "step", -1),
            "time": time.time(),
            "error": f"{type(err).__name__}: {err}".strip(),
            "traceback": traceback.format_exc(),
            # a refusal of the script's shape: which launches it stands for (ddpbench.rank.script.steps.BadScript)
            **({"refused": err.refused} if getattr(err, "refused", None) else {}),
        })
        traceback.print_exc(file=sys.stderr)  # goes to the job's log file
        return 1
