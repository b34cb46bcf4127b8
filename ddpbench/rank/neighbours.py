"""What else the machine ran while a rank measured its steps.

Over its measured steps (the window its energy and context switches are read over) each rank reads:

  cpu_cores            its own CPU time (every thread of its process, and of the processes it
                       started that are alive at both ends: DataLoader workers) over the window,
                       in cores: 1.0 is one core busy all the window;
  machine_busy_cores   every CPU's busy time over the window, in cores, from Linux's ``/proc/stat``
                       (user, nice, system, irq and softirq; the whole machine a container sees);
  machine_steal_cores  the time the hypervisor gave the machine's virtual CPUs to someone else, in cores;
  cpu_mhz              the CPUs' mean clock as the window ends (``/proc/cpuinfo``), where it is said.

The ranks of a launch measure over the same steps, so the machine's busy cores less the sum of its
ranks' own are what *other* processes took meanwhile: a neighbour, a build, another sweep
(:func:`ddpbench.analysis.core.machine.launch_machine`). Where ``/proc/stat`` cannot be read (not Linux)
the machine's figures are None, the rank's own CPU is still read.
"""

from __future__ import annotations

import os
import time

STAT = "/proc/stat"
CPUINFO = "/proc/cpuinfo"
#: the figures a rank stores (each declared in :mod:`ddpbench.results.figures`)
FIGURES = ("cpu_cores", "machine_busy_cores", "machine_steal_cores", "cpu_mhz")
#: the busy fields of /proc/stat's ``cpu`` line (user, nice, system, irq, softirq; guest time is inside user)
_BUSY = (0, 1, 2, 5, 6)
_STEAL = 7


def machine_ticks(path: str = STAT) -> tuple[int, int] | None:
    """(busy, steal) clock ticks of every CPU since boot, or None where not readable."""
    try:
        with open(path, encoding="ascii") as handle:
            fields = handle.readline().split()
    except (OSError, UnicodeDecodeError):
        return None
    if not fields or fields[0] != "cpu" or len(fields) < 9:
        return None
    try:
        values = [int(v) for v in fields[1:]]
    except ValueError:
        return None
    return sum(values[i] for i in _BUSY), values[_STEAL]


def clock_mhz(path: str = CPUINFO) -> float | None:
    """The mean of the CPUs' ``cpu MHz`` lines, or None where none is said."""
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            clocks = [float(line.split(":", 1)[1]) for line in handle if line.startswith("cpu MHz")]
    except (OSError, ValueError):
        return None
    return sum(clocks) / len(clocks) if clocks else None


def own_cpu_s() -> float:
    """This process's CPU seconds (every thread), and those of its live child processes."""
    total = time.process_time()
    try:
        import psutil

        for child in psutil.Process().children(recursive=True):
            try:
                times = child.cpu_times()
                total += times.user + times.system
            except psutil.Error:  # it ended meanwhile
                continue
    except Exception:  # noqa: BLE001 - the rank's own CPU is still its process's
        pass
    return total


class Window:
    """The readings as the measured steps start (:meth:`start`) and their figures as they end (:meth:`stop`)."""

    def __init__(self, stat: str = STAT, cpuinfo: str = CPUINFO):
        self.stat, self.cpuinfo = stat, cpuinfo
        self.begun: tuple[float, float, tuple[int, int] | None] | None = None

    def start(self) -> None:
        self.begun = (time.monotonic(), own_cpu_s(), machine_ticks(self.stat))

    def stop(self) -> dict:
        if self.begun is None:
            return dict.fromkeys(FIGURES)
        wall = time.monotonic() - self.begun[0]
        own, ticks = own_cpu_s() - self.begun[1], machine_ticks(self.stat)
        found = dict.fromkeys(FIGURES)
        if wall <= 0:
            return found
        found["cpu_cores"] = own / wall
        if ticks is not None and self.begun[2] is not None:
            per_second = os.sysconf("SC_CLK_TCK")
            found["machine_busy_cores"] = (ticks[0] - self.begun[2][0]) / per_second / wall
            found["machine_steal_cores"] = (ticks[1] - self.begun[2][1]) / per_second / wall
        found["cpu_mhz"] = clock_mhz(self.cpuinfo)
        return found
