"""One rank's record: the per-rank figures every kind of rank hands back (``result["ranks"]``), built
by :func:`rank_record` from the rank's meters, whichever kind of rank it is (the built-in training,
a user's script, TensorFlow).

A :class:`Meter` is one kind of measurement of the rank: the figures it gives (each declared per rank
in :mod:`ddpbench.results.figures`), and when it reads them:

  start  as the measured steps start (the CPUs the rank runs on, a counter's first reading);
  stop   as they end (the counter's second reading: per step, or over the window);
  take   the rank as its training left them (memory, the strategy's own figures), read where the
         rank says (after its measured steps; TensorFlow after it hashed its replicas);
  read   its figures when the record is built: each measured or, with the reason where the meter
         has one, not measured (never a guess: :func:`ddpbench.rank.energy.not_measured`).

:data:`METERS` registers every meter, in the order the record stores their figures. A rank gives
its meters what it has (:class:`Side`); a meter that cannot apply to a kind of rank makes none
(:meth:`Meter.make` returns None) and its figures are not stored for it. A new per-rank figure is
its declaration in ``results/figures.py``, its meter here (or in the module that measures it) and
its name in :data:`METERS`: every kind of rank then stores it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ddpbench.rank import affinity as placement
from ddpbench.rank import devices as memory
from ddpbench.rank import neighbours
from ddpbench.rank.energy import FIGURES as ENERGY_FIGURES
from ddpbench.rank.energy import EnergyWindow, not_measured


@dataclass
class Side:
    """What a rank gives its meters; None where it has no such thing.

    ``gpus``: its GPUs as torch devices, when asked ([] on CPU); None where they are not known to
    ddpbench (TensorFlow's), and no GPU memory is stored. ``energy``: makes its energy counter
    (:func:`ddpbench.rank.energy.meter_for`); ``no_energy``: why none is read instead.
    ``strategy``: the strategy's own figures, read as training left it; ``gemm``: the matmul peak it
    measured as it started (:func:`ddpbench.rank.flops.measure_gemm_peak`); ``trace_error``: why its
    trace could not be read back (the built-in training gives all three)."""

    gpus: Callable[[], Sequence] | None = None
    energy: Callable | None = None
    no_energy: str | None = None
    strategy: Callable[[], dict] | None = None
    gemm: Callable[[], dict] | None = None
    trace_error: Callable[[], str | None] | None = None


class Meter:
    """One kind of measurement of a rank; see the module docstring. ``figures``: the per-rank
    figures it gives, each declared in :mod:`ddpbench.results.figures`."""

    figures: tuple[str, ...] = ()

    def __init__(self, side: Side):
        self.side = side
        self.found: dict | None = None  # what it read, once it has

    @classmethod
    def make(cls, side: Side) -> Meter | None:
        """This rank's meter, or None where the rank cannot have one (its figures are then not stored)."""
        return cls(side)

    def start(self) -> None:
        """The measured steps start."""

    def stop(self, steps: int, samples: float) -> None:
        """The measured steps, ``steps`` of them, ``samples`` samples in all, have ended."""

    def take(self) -> None:
        """The rank as its training left it."""

    def read(self) -> dict:
        """Its figures: what it found, else their not-measured form."""
        return self.found if self.found is not None else self.not_measured()

    def not_measured(self, why: str | None = None) -> dict:
        """Its figures when nothing was measured (None each; a meter with a note says ``why``)."""
        return dict.fromkeys(self.figures)


class HostMemory(Meter):
    """The rank process's memory (:mod:`ddpbench.rank.devices`): its peak resident memory and the
    memory that is its own, taken as training left it (or read as the record is built)."""

    figures = ("peak_rss_mb", "rank_memory_mb", "uss_mb", "pss_mb", "rss_file_mb")

    def take(self) -> None:
        self.found = {"peak_rss_mb": memory.peak_rss_mb(), **memory.own_memory_mb()}

    def read(self) -> dict:
        if self.found is None:
            self.take()
        return self.found


class GpuMemory(HostMemory):
    """The peak memory of the rank's GPUs (``gpus`` 0 and None on CPU); none where they are not known."""

    figures = ("gpus", "gpu_peak_allocated_mb", "gpu_peak_reserved_mb")

    @classmethod
    def make(cls, side: Side) -> Meter | None:
        return cls(side) if side.gpus is not None else None

    def take(self) -> None:
        self.found = memory.gpu_memory(self.side.gpus())


class GemmPeak(Meter):
    """What a matmul reached on the rank's threads (or GPU) as it started; None in a repeat that did not
    measure it (its first did)."""

    figures = ("gemm_peak_flops",)

    @classmethod
    def make(cls, side: Side) -> Meter | None:
        return cls(side) if side.gemm is not None else None

    def read(self) -> dict:
        return {"gemm_peak_flops": self.side.gemm()["peak_flops"]}


class TraceError(Meter):
    """Why the rank's profiler trace could not be read back (None when it could, or was not traced)."""

    figures = ("trace_error",)

    @classmethod
    def make(cls, side: Side) -> Meter | None:
        return cls(side) if side.trace_error is not None else None

    def read(self) -> dict:
        return {"trace_error": self.side.trace_error()}


class Affinity(Meter):
    """The CPUs the rank may run on, read as its measured steps start (:mod:`ddpbench.rank.affinity`)."""

    figures = ("affinity",)

    def start(self) -> None:
        self.found = {"affinity": placement.affinity()}


class Switches(Meter):
    """The rank's involuntary context switches per measured step."""

    figures = ("involuntary_switches_per_step",)
    before: int | None = None

    def start(self) -> None:
        self.before = placement.involuntary_switches()

    def stop(self, steps: int, samples: float) -> None:
        self.found = {"involuntary_switches_per_step": placement.per_step(self.before, placement.involuntary_switches(),
                                                                           steps)}


class Neighbours(Meter):
    """The rank's own CPU and the machine's over its measured steps (:mod:`ddpbench.rank.neighbours`)."""

    figures = neighbours.FIGURES

    def __init__(self, side: Side):
        super().__init__(side)
        self.window = neighbours.Window()

    def start(self) -> None:
        self.window.start()

    def stop(self, steps: int, samples: float) -> None:
        self.found = self.window.stop()


class Energy(Meter):
    """The energy of the rank's devices over its measured steps (:class:`ddpbench.rank.energy.EnergyWindow`;
    the counter is made with the meter), or why it is not read."""

    figures = ENERGY_FIGURES

    def __init__(self, side: Side):
        super().__init__(side)
        self.window = EnergyWindow(side.energy) if side.energy is not None else None

    def start(self) -> None:
        if self.window is not None:
            self.window.start()

    def stop(self, steps: int, samples: float) -> None:
        if self.window is not None:
            self.found = self.window.stop(steps, samples)

    def not_measured(self, why: str | None = None) -> dict:
        return not_measured(why or self.side.no_energy or ("the measured steps never ended" if self.window is not None
                                                           else "this rank reads no energy counter"))


class Strategy(Meter):
    """The strategy's own figures, as training left it: those of the rank's ``strategy`` (its statistics,
    :meth:`~ddpbench.strategies.base.Strategy.stats`, its traffic, its optimizer state, what the precision
    and the compilation did), as many of ``figures`` as it gives."""

    figures = ("bucket_bytes", "allreduce_bytes_per_step", "ddp_buckets_rebuilt", "ddp_unused_parameter_bytes",
               "ddp_forward_compute_ms", "ddp_backward_compute_ms", "ddp_backward_comm_ms",
               "ddp_backward_compute_comm_overlap_ms", "dp_replicas", "dp_note", "bytes_sent_per_step",
               "bytes_recv_per_step", "traffic_source", "optimizer_state_mb", "amp_skipped_steps", "amp_loss_scale",
               "compile_s", "compiled_graphs", "graph_breaks", "graph_break_reasons", "ddp_optimizer_subgraphs",
               "recompiles_after_compile_phase", "compile_cache")

    @classmethod
    def make(cls, side: Side) -> Meter | None:
        return cls(side) if side.strategy is not None else None

    def take(self) -> None:
        self.found = self.side.strategy()


#: where a record stores the rank's checksum and the figures its kind gives itself (:func:`rank_record`)
OWN = "own"
#: what a kind of rank may give itself there, besides its strategy's figures (a script's DDP statistics,
#: TensorFlow's replicas): the checksum of its parameters, a script's buckets' times, TensorFlow's own
OWN_FIGURES = ("checksum", "bucket_comm_ms", "framework_version", "reduction")
#: every meter, in the order a record stores their figures, with :data:`OWN` in its place; they start in
#: this order and stop in the reverse (the energy window innermost), and are taken in this order
METERS: tuple = (HostMemory, GpuMemory, OWN, GemmPeak, TraceError, Affinity, Switches, Energy, Strategy,
                  Neighbours)


class Meters:
    """A rank's meters (those of :data:`METERS` it can have), run together."""

    def __init__(self, side: Side, kinds: Iterable = METERS):
        self.kinds = tuple(kinds)
        self.meters = {kind: kind.make(side) for kind in self.kinds if kind is not OWN}

    def each(self, reverse: bool = False) -> list[Meter]:
        made = [m for m in self.meters.values() if m is not None]
        return made[::-1] if reverse else made

    def start(self) -> None:
        for meter in self.each():
            meter.start()

    def stop(self, steps: int, samples: float) -> None:
        for meter in self.each(reverse=True):
            meter.stop(steps, samples)

    def take(self, missing: bool = False) -> None:
        """Each meter takes the rank as it is now; ``missing``: only those that have not yet."""
        for meter in self.each():
            if not (missing and meter.found is not None):
                meter.take()

    def found(self) -> dict:
        """What the meters have found so far (none read now)."""
        return {name: value for meter in self.each() for name, value in (meter.found or {}).items()}

    def sections(self, own: dict) -> Iterable[dict]:
        """Each meter's figures and ``own``, in :data:`METERS`' order."""
        for kind in self.kinds:
            if kind is OWN:
                yield own
            elif self.meters[kind] is not None:
                yield self.meters[kind].read()


def rank_record(rank: int, threads, checksum: str, meters: Meters, own: dict | None = None) -> dict:
    """The record a rank hands back (an entry of ``result["ranks"]``): who it is (``rank``, ``pid``,
    ``threads``), then its meters' figures, and where :data:`OWN` stands, the checksum of its parameters
    and ``own``, the figures its kind of rank gives itself (its strategy's, its framework's)."""
    record = {"rank": rank, "pid": os.getpid(), "threads": int(threads)}
    for section in meters.sections({"checksum": checksum, **(own or {})}):
        record.update(section)
    return record


def declared(kinds: Iterable = METERS) -> tuple[str, ...]:
    """Every figure a record of the meters of ``kinds`` may hold, in the order it stores them."""
    return ("rank", "pid", "threads",
            *(name for kind in kinds for name in (OWN_FIGURES if kind is OWN else kind.figures)))
