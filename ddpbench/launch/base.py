"""What a launcher is: the one interface (:class:`Launcher`) every way of starting ranks implements,
a :class:`Launch` it is given, and the one :class:`LaunchOutcome` it hands back for each."""

from __future__ import annotations

import abc
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple


class Launch(NamedTuple):
    """One launch of a sweep: a spec (a training JobSpec or a CollectiveSpec), which repeat of it
    this is, and the work folder its ranks hand back in (:mod:`ddpbench.launch.handback`)."""

    spec: Any
    repeat: int
    work_dir: Path


@dataclass
class LaunchOutcome:
    status: str  # ok | failed | timed_out | skipped
    result: dict | None = None
    error: str | None = None
    wall_s: float = 0.0
    logs: list[str] = field(default_factory=list)
    #: when the launch's own work began (seconds since the epoch), where the launcher knows it better
    #: than the sweep that called it (after starting a cluster first); None: when it was called
    started: float | None = None
    #: seconds this launch waited for a cluster its launcher started first (Ray's), apart from ``wall_s``
    cluster_start_s: float | None = None
    #: a refusal of the script's shape (the record's ``refusal``): on the refused launch ``{"scope": "job" |
    #: "world_sizes"}``, on a launch skipped for it also ``"launch": {"key", "repeat"}``, the refused one
    #: (:mod:`ddpbench.sweep.refusals`); None for any other outcome
    refusal: dict | None = None


class Launcher(abc.ABC):
    """How the ranks of a launch start: every launcher runs ``spec.processes`` ranks of
    ``python -m ddpbench.rank`` (:mod:`ddpbench.rank.protocol`) and reads back one outcome.

    What a launcher can do beyond one launch at a time is declared, not probed:

    * ``stores_results``: False where another node stores the results (node > 0 of a multi-node
      torchrun sweep, which runs its agents and leaves the store alone);
    * ``nodes_share_work``: True where another node's processes hand back into the same work
      folders (a multi-node torchrun sweep: global rank 0 may run on any node), so their names must
      be the same on every node rather than made per sweep;
    * ``submits_arrays``: True when the launcher takes all of a sweep's launches at once
      (:meth:`launch_all`: Slurm job arrays) instead of one after another;
    * :meth:`for_restarts`: the launcher a job that restarts its workers runs under;
    * :meth:`dry_run_scripts`: what it would submit, for ``--dry-run`` to print;
    * :meth:`close`: what it keeps between launches let go (a Ray cluster it started).
    """

    #: recorded with every launch it runs
    name: str = "launcher"
    stores_results: bool = True
    submits_arrays: bool = False
    nodes_share_work: bool = False

    @abc.abstractmethod
    def launch(self, spec, repeat: int, work_dir: Path, log_dir: Path, timeout_s: float,
               stall_s: float | None = None) -> LaunchOutcome:
        """Run one launch to its end (or its timeout, or its stall limit ``stall_s``: no rank moved for
        that long, :class:`~ddpbench.launch.handback.Stall`) and read back its outcome."""

    def launch_all(self, launches: list[Launch], log_dir: Path, timeout_s: float,
                   stall_s: float | None = None) -> Iterator[tuple[Launch, LaunchOutcome]]:
        """Run ``launches`` at once and yield each with its outcome as it ends (launchers that
        declare ``submits_arrays``). Closing the generator early (``contextlib.closing``), or any
        exception, must leave nothing of the launches running."""
        raise NotImplementedError(f"the {self.name} launcher runs one launch at a time")

    def for_restarts(self) -> Launcher:
        """The launcher a job whose workers are restarted after a failure (``max_restarts``) runs
        under: this one, unless it cannot restart ranks and has one on the same machine that can."""
        return self

    def close(self) -> None:  # noqa: B027 - a hook: most launchers keep nothing between launches
        """Let go of what the launcher keeps between launches (a Ray cluster it started); called
        once the sweep is done with it, however the sweep ends. Nothing, for most."""

    def dry_run_scripts(self, launches: list[Launch], log_dir: Path, timeout_s: float) -> list[tuple[str, str]]:
        """(file name, text) of every script this launcher would submit for ``launches``; none for
        launchers that submit nothing."""
        return []
