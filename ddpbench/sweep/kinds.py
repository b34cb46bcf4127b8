"""The kinds of launch a sweep runs, and what the runner's one loop asks of each: whether it can run
on this machine, which launcher runs it, how the console names it and sums up its result, and how
long its timed steps took. Keyed by a spec's ``kind``, the kind of its record: a new kind of
launch is a class here, and nothing in the loop."""

from __future__ import annotations

import statistics

from ddpbench.experiment.machine import Machine, oversubscribed
from ddpbench.launch.base import Launch, Launcher
from ddpbench.launch.options import launcher_for
from ddpbench.results.schema import step_rows
from ddpbench.strategies import strategy_class


class TrainingLaunches:
    """Launches of a training job (a JobSpec)."""

    @staticmethod
    def skip_reason(spec, machine: Machine) -> str | None:
        """Why the job cannot run on ``machine`` (its strategy says), or None."""
        return strategy_class(spec.strategy).skip_reason(spec, machine)

    @staticmethod
    def launcher(spec, chosen: Launcher) -> Launcher:
        return launcher_for(spec, chosen)

    @staticmethod
    def describe(launch: Launch, machine: Machine, names: dict | None = None) -> str:
        """The job's label, the repeat, and whether it is oversubscribed; ``names``: a script job's name by its
        (script, script_args) among the sweep's jobs (:func:`ddpbench.sweep.progress.job_names`), not its
        whole command line."""
        spec = launch.spec
        model = (names or {}).get((spec.script, spec.script_args), "") if spec.script else ""
        return f"{spec.label(model)} rep {launch.repeat}" + (" [oversubscribed]" if oversubscribed(spec, machine)
                                                             else "")

    @staticmethod
    def timed_seconds(result: dict) -> float:
        """Rank 0's timed step windows (every kind of step), in seconds."""
        return sum(row.step_ms for row in step_rows(result) if row.rank == 0) / 1e3

    @staticmethod
    def one_line(launch: Launch, result: dict) -> str:
        """The mean slowest-rank step of the measure steps, and the throughput it gives."""
        bound: dict[int, float] = {}
        for row in step_rows(result):
            if row.phase == "measure":
                bound[row.step] = max(bound.get(row.step, 0.0), row.step_ms)
        step = statistics.fmean(bound.values())
        return f"{step:8.2f} ms/step (mean)  {launch.spec.global_batch / step * 1e3:10.1f} samples/s"


class CollectiveLaunches:
    """Launches of the collective micro-benchmarks (a CollectiveSpec): they run everywhere, under
    the launcher chosen for them, and time no training steps."""

    @staticmethod
    def skip_reason(spec, machine: Machine) -> str | None:
        return None

    @staticmethod
    def launcher(spec, chosen: Launcher) -> Launcher:
        return chosen

    @staticmethod
    def describe(launch: Launch, machine: Machine, names: dict | None = None) -> str:
        return launch.spec.label()

    @staticmethod
    def timed_seconds(result: dict) -> float:
        return 0.0

    @staticmethod
    def one_line(launch: Launch, result: dict) -> str:
        return f"{len(result['rows'])} measurements"


#: every kind of launch, by its spec's ``kind``
KINDS = {"run": TrainingLaunches, "collective": CollectiveLaunches}


def kind_of(spec):
    return KINDS[spec.kind]
