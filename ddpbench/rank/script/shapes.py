"""The shapes real training scripts take when they start and end, made to run as ddpbench's ranks.

:mod:`ddpbench.rank.script.rank` installs a :class:`Shapes` for the run of a script, beside the
:class:`~ddpbench.rank.script.instrument.Instrument` that times it. While it is installed:

* ``torch.multiprocessing.spawn`` and ``start_processes`` (the DDP tutorial's
  ``mp.spawn(main, args=(world_size, ...), nprocs=world_size)``) call the spawned function in this
  process, as ``fn(LOCAL_RANK, *args)``: ddpbench's ranks *are* the spawned processes, hooked,
  owned and timed. ``nprocs`` must be the ranks the job runs on this node;
* ``torch.distributed.init_process_group`` makes the group on ddpbench's rendezvous whatever the
  script wrote: the rendezvous variables ddpbench gave (MASTER_ADDR, MASTER_PORT, RANK,
  WORLD_SIZE, ...) are put back before the group is made, a ``tcp://`` or ``file://``
  ``init_method`` gives way to ``env://``, and an explicit ``rank`` or ``world_size`` must be the
  job's. A hard-coded ``MASTER_PORT = "12355"`` then never collides between jobs or sweeps;
* ``torch.distributed.destroy_process_group`` of the default group (``None`` or
  ``group.WORLD``) is deferred: ddpbench gathers its figures through that group at the end and
  destroys it then. ``is_initialized()`` says False after such a destroy, and a later
  ``init_process_group`` really destroys the old group and makes a new one (on a fresh prefix of
  the same store), so init, destroy, init works and the end's gather runs on the newest group;
* processes the script starts with ``multiprocessing`` (not daemons: DataLoader workers are) are
  counted, so that a script whose ranks are such processes fails with its reason, not with
  "ended without building DistributedDataParallel"; a process forked so that calls
  ``init_process_group`` is refused at once.

And what the rank sets up around a script (pure functions, tested alone): ``"{world_size}"`` in
its arguments (:func:`substitute_args`), the GPUs it sees (:func:`visible_devices`), and its
scratch folder, linked to the folder the sweep was started in (:func:`link_start_dir`).
"""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path

from ddpbench.rank.script.steps import JOB, refused

#: in ``script_args``: replaced by the job's world size where the rank builds the script's argv
WORLD_SIZE_ARG = "{world_size}"
#: the rendezvous ddpbench gives a rank, put back before the script's group is made
RENDEZVOUS = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
              "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RESTART_COUNT")
#: init methods that name a rendezvous of the script's own (given way to ddpbench's, env://)
OWN_RENDEZVOUS = ("tcp://", "file://", "env://")


def substitute_args(args: list[str], world_size: int) -> list[str]:
    """``args`` with every ``{world_size}`` in them replaced by ``world_size`` (nothing else is)."""
    return [a.replace(WORLD_SIZE_ARG, str(world_size)) for a in args]


def visible_devices(current: str | None, local_world_size: int) -> str | None:
    """CUDA_VISIBLE_DEVICES for a script rank on GPUs, so that ``torch.cuda.device_count()`` is the
    ranks of its node and device LOCAL_RANK is its own GPU (as ddpbench's ranks take theirs); None:
    leave it as it is. Unset: the first ``local_world_size`` GPUs. Set to one device: the launcher
    gave each rank its own (Slurm's ``--gpus-per-task``), left alone. Set to at least as many as the
    node's ranks: the first of them. Fewer: left alone (the script sees what there is)."""
    if local_world_size < 1:
        return None
    if current is None:
        return ",".join(str(i) for i in range(local_world_size))
    listed = [d.strip() for d in current.split(",") if d.strip()]
    if len(listed) <= 1 or len(listed) < local_world_size:
        return None
    narrowed = ",".join(listed[:local_world_size])
    return None if narrowed == current else narrowed


def link_start_dir(start: Path, scratch: Path, keep_out: Path | None = None) -> list[str]:
    """Make ``scratch`` (the folder a script runs in) look like ``start`` (the folder the sweep was
    started in): a symbolic link to every top-level entry of ``start``, so relative reads
    (``configurator.py``, ``data/x.bin``) find what they would under torchrun, while new files land
    in ``scratch``. The entry holding ``keep_out`` (the launch's own work folder) is not linked:
    the script would see the sweep's results, and a link back to its own folder. Every rank of a node
    links the same folder; what another linked first is left as it is. The names this call linked."""
    start, scratch = Path(start).resolve(), Path(scratch)
    if start == scratch.resolve():
        return []
    inside = None
    if keep_out is not None:
        try:
            inside = Path(keep_out).resolve().relative_to(start).parts[:1]
        except ValueError:
            inside = None
    linked = []
    try:
        entries = sorted(os.listdir(start))
    except OSError:
        return []
    for name in entries:
        if inside is not None and (name,) == inside:
            continue
        try:
            os.symlink(start / name, scratch / name)
        except FileExistsError:  # the ranks of a node share the folder: another linked it first
            continue
        linked.append(name)
    return linked


class _Done:
    """What ``start_processes(join=False)`` hands back when its function already ran here."""

    def __init__(self):
        self.processes, self.error_files = [], []

    def pids(self) -> list[int]:
        return [os.getpid()]

    def join(self, timeout=None, grace_period=None) -> bool:
        return True


class Shapes:
    """Every patch of one script run (see the module docstring); :meth:`install` before the script,
    :meth:`uninstall` after, from the same process.

    ``environ``: where the rendezvous variables are read (at install) and put back."""

    def __init__(self, environ=os.environ):
        self.environ = environ
        self.rank = int(environ["RANK"])
        self.world_size = int(environ["WORLD_SIZE"])
        self.local_rank = int(environ.get("LOCAL_RANK", self.rank))
        self.local_world_size = int(environ.get("LOCAL_WORLD_SIZE", self.world_size))
        self.pid = os.getpid()
        self.rendezvous: dict[str, str | None] = {}
        #: the script asked for the default group's destruction (deferred until ddpbench is done)
        self.destroy_deferred = False
        self.pending = False  # destroyed by the script, not yet by ddpbench
        self.inits = 0  # default groups the script made
        self.spawns = 0  # calls of torch.multiprocessing.spawn / start_processes run here
        self.children: list[str] = []  # processes the script started with multiprocessing (not daemons)
        self.store = None  # the first group's store, kept for the groups made after a destroy
        #: what of the script's own rendezvous gave way to ddpbench's ("MASTER_PORT=12355", "init_method=tcp://...")
        self.replaced: list[str] = []
        self._undo: list = []

    # -- install and uninstall -------------------------------------------------------------
    def install(self) -> None:
        import multiprocessing.process

        import torch.distributed as dist
        import torch.multiprocessing as mp
        from torch.distributed import distributed_c10d as c10d

        spawn_module = sys.modules["torch.multiprocessing.spawn"]
        self.rendezvous = {name: self.environ.get(name) for name in RENDEZVOUS}
        originals = {"init": dist.init_process_group, "destroy": dist.destroy_process_group,
                     "initialized": dist.is_initialized}
        shapes = self
        signature = inspect.signature(originals["init"])

        def init_process_group(*args, **kwargs):
            return shapes.init(originals, c10d, signature.bind(*args, **kwargs).arguments)

        def destroy_process_group(group=None):
            if group is None or (c10d.is_initialized() and group is c10d._get_default_group()):
                shapes.destroy_deferred = shapes.pending = True  # ddpbench destroys it at the end
                return
            originals["destroy"](group)

        def is_initialized() -> bool:
            return originals["initialized"]() and not shapes.pending

        def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
            return shapes.run_spawned(fn, args, nprocs, join)

        start = multiprocessing.process.BaseProcess.start

        def start_process(process):
            if os.getpid() == shapes.pid and not process.daemon:
                shapes.children.append(process.name)
            return start(process)

        patches = [(dist, "init_process_group", init_process_group),
                   (dist, "destroy_process_group", destroy_process_group), (dist, "is_initialized", is_initialized),
                   (mp, "spawn", spawn), (mp, "start_processes", spawn),
                   (spawn_module, "spawn", spawn), (spawn_module, "start_processes", spawn),
                   (multiprocessing.process.BaseProcess, "start", start_process)]
        for owner, name, value in patches:
            self._undo.append((owner, name, owner.__dict__[name]))
            setattr(owner, name, value)

    def uninstall(self) -> None:
        for owner, name, value in reversed(self._undo):
            setattr(owner, name, value)
        self._undo = []

    def note(self, what: str) -> None:
        if what not in self.replaced:
            self.replaced.append(what)

    def summary(self) -> dict:
        """What the run's shapes were, for the record (``result.script.shapes``): whether the ranks ran
        the script's spawned function, the default groups it made, what of its own rendezvous gave way
        to ddpbench's, and the processes it started with multiprocessing."""
        return {"spawned": self.spawns > 0, "groups": self.inits, "rendezvous_replaced": list(self.replaced),
                "processes_started": len(self.children)}

    # -- the script's processes ------------------------------------------------------------
    def run_spawned(self, fn, args, nprocs: int, join: bool):
        """``mp.spawn(fn, args, nprocs)``: this rank runs ``fn(LOCAL_RANK, *args)``."""
        if os.getpid() != self.pid:
            raise refused("a process the script started calls torch.multiprocessing.spawn; ddpbench runs the "
                          "spawned function of the script's own process as its ranks")
        if int(nprocs) != self.local_world_size:
            raise refused(f"the script spawns {nprocs} processes (torch.multiprocessing.spawn) and the job runs "
                          f"{self.local_world_size} ranks on this node: ddpbench runs the spawned function as its "
                          'ranks, one per rank; pass "{world_size}" in script_args where the script takes its '
                          "world size (on GPUs it sees the node's ranks as its visible devices)", JOB)
        self.spawns += 1
        fn(self.local_rank, *args)
        return None if join else _Done()

    def no_ddp_line(self) -> str | None:
        """Why a script that built no DDP here probably trains in processes of its own, or None."""
        if not self.children:
            return None
        names = ", ".join(self.children[:4]) + (", ..." if len(self.children) > 4 else "")
        return (f"the script started {len(self.children)} processes with multiprocessing ({names}) and built no "
                "DistributedDataParallel in its own process: ddpbench measures the ranks it starts itself; start "
                "them with torch.multiprocessing.spawn (its function then runs as ddpbench's ranks), or write the "
                "script for torchrun")

    # -- the script's process group ----------------------------------------------------------
    def init(self, originals: dict, c10d, given: dict) -> None:
        """``init_process_group(**given)`` on ddpbench's rendezvous (see the module docstring)."""
        if os.getpid() != self.pid:
            raise refused("a process the script started with multiprocessing calls init_process_group: ddpbench "
                          "runs a script's ranks itself; start them with torch.multiprocessing.spawn, or write the "
                          "script for torchrun")
        given = dict(given)
        fixes = {"world_size": ("the job runs world size", 'pass "{world_size}" in script_args where the script '
                                "takes its world size"),
                 "rank": ("this process is rank", "take the rank from RANK, or from the spawned function's first "
                          "argument")}
        for name, (what, fix) in fixes.items():
            value = given.pop(name, -1)
            mine = self.world_size if name == "world_size" else self.rank
            if value is not None and int(value) != -1 and int(value) != mine:
                raise refused(f"the script passes {name}={value} to init_process_group and {what} {mine}: {fix}", JOB)
        method = given.pop("init_method", None)
        if method is not None and not str(method).startswith(OWN_RENDEZVOUS):
            given["init_method"] = method  # a rendezvous ddpbench does not know: as the script asks
        elif method is not None and method != "env://":
            self.note(f"init_method={method}")
        for name, value in self.rendezvous.items():
            if self.environ.get(name) != value:
                self.note(f"{name}={self.environ.get(name, '(unset)')}")
            if value is None:
                self.environ.pop(name, None)
            else:
                self.environ[name] = value
        if self.pending and c10d.is_initialized():
            # init after a deferred destroy: destroy the old group now, meet again on a fresh prefix
            base = self.store if self.store is not None else c10d._get_default_store()
            originals["destroy"]()
            self.pending = False
            if given.get("store") is None:
                given["store"] = c10d.PrefixStore(f"ddpbench/init{self.inits}", base)
        if given.get("store") is not None or "init_method" in given:  # not env://: say who this rank is
            given.update(rank=self.rank, world_size=self.world_size)
        originals["init"](**given)
        self.inits += 1
        if self.store is None:
            self.store = c10d._get_default_store()  # kept alive for the groups made after a destroy
