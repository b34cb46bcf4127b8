"""Where a rank's process may run: the job's ``cpu_affinity`` applied, and what the rank saw of it.

:func:`pin` runs in every rank before torch starts its threads (threads inherit the CPUs of the
thread that starts them; the threads already running, such as the watch on the launcher, are pinned
too). :func:`cpus_for` says which CPUs a rank gets:

  ""        nothing is pinned: the rank keeps what its launcher gave it;
  "spread"  rank r (its rank on the node) gets ``threads_per_rank`` CPUs of its own, r*t to r*t+t-1
            of the CPUs it was started with (the launcher's), wrapping around when there are fewer;
  a list    every rank on those CPUs ("0", "0,1", "0-3").

:func:`affinity` and :func:`involuntary_switches` are what a rank records of its placement (its
record's ``affinity`` and ``involuntary_switches_per_step``).
"""

from __future__ import annotations

import os

from ddpbench.experiment.spec import parse_cpus


class AffinityError(RuntimeError):
    """A job's ``cpu_affinity`` this rank cannot have."""


def cpus_for(setting: str, local_rank: int, threads: int, usable) -> list[int] | None:
    """The CPUs a rank gets (sorted), or None when nothing is pinned. ``usable``: the CPUs the rank
    was started with. AffinityError when a list names a CPU that is not among them."""
    if not setting:
        return None
    usable = sorted(usable)
    if setting == "spread":
        t = max(1, int(threads))
        return sorted({usable[(local_rank * t + i) % len(usable)] for i in range(t)})
    cpus = parse_cpus(setting)
    missing = sorted(set(cpus) - set(usable))
    if missing:
        raise AffinityError(f"cpu_affinity {setting!r} names CPUs {', '.join(map(str, missing))} that this rank "
                            f"may not run on (it may run on {', '.join(map(str, usable))})")
    return cpus


def affinity() -> list[int] | None:
    """The CPUs this process may run on, sorted (None where the system does not say)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return None


def pin(spec, local_rank: int) -> list[int] | None:
    """Apply the job's ``cpu_affinity`` to this process (every thread it has); the CPUs it now runs
    on, or None when the job pins nothing."""
    setting = getattr(spec, "cpu_affinity", "")
    if not setting:
        return None
    usable = affinity()
    if usable is None:
        raise AffinityError(f"cpu_affinity {setting!r}: this system does not let a process choose its CPUs")
    threads = spec.threads_per_rank if isinstance(spec.threads_per_rank, int) else 1
    cpus = cpus_for(setting, local_rank, threads, usable)
    try:
        tasks = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        tasks = [0]
    for task in tasks:
        try:
            os.sched_setaffinity(task, cpus)
        except ProcessLookupError:  # a thread that ended meanwhile
            pass
        except OSError as err:
            raise AffinityError(f"cpu_affinity {setting!r}: CPUs {cpus} cannot be set: {err}") from None
    os.sched_setaffinity(0, cpus)
    return cpus


def involuntary_switches() -> int | None:
    """This process's involuntary context switches so far, every thread's (ended ones too: the
    kernel's rusage; psutil's figure, where that is missing, counts the main thread alone on Linux);
    None where the system cannot say."""
    try:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw)
    except (ImportError, OSError, AttributeError):
        pass
    try:
        import psutil

        return int(psutil.Process().num_ctx_switches().involuntary)
    except Exception:  # noqa: BLE001 - a figure, never the job's failure
        return None


def per_step(before: int | None, after: int | None, steps: int) -> float | None:
    """Switches per step between two readings (None when either is unknown, or no step ran)."""
    if before is None or after is None or steps <= 0:
        return None
    return (after - before) / steps
