"""The machine a launch ran on, from what its ranks read over their measured steps
(:mod:`ddpbench.rank.neighbours`): how much CPU other processes took meanwhile, how much the
hypervisor stole, the CPUs' clock; and whether two folders' machines differed.

A launch's **others** are the machine's busy cores over its measured window (the mean of its ranks'
readings: their windows are the same steps) less its ranks' own cores (their sum): what any other
process took meanwhile, a neighbour, a build, another sweep. With **steal** (the hypervisor's) it is
the launch's **contention**: CPU the machine had and the launch could not use. A launch is
*contended* where its contention is at least :data:`~ddpbench.analysis.core.thresholds.CONTENDED_CORES`.

Two folders' machines **differed** where the 95 % Welch interval over launches of the difference of
their mean contention lies wholly beyond :data:`~ddpbench.analysis.core.thresholds.MACHINE_DIFFERS_CORES`
either way (:func:`machine_difference`). ``compare`` then never calls B slower where B's machine was
the busier one, nor faster where A's was: the machine explains it as well as the code would.
Folders stored before these readings (or off Linux) have none, and no difference is claimed.

Two folders whose machines did not differ on average can still both have been busy: a neighbour in
each, or one that came and went. A launch is **surely contended** where its contention is at least
:data:`~ddpbench.analysis.core.thresholds.CONTENDED_CORES` beyond the coarseness of its reading
(:func:`reading_resolution`). ``compare`` calls no job slower where any of its launches in B was, nor
faster where any in A was (:data:`MACHINE_BUSY`, :func:`busy_launches`): what other work does to a step
depends on the work (a neighbour streaming through memory slows a step more than one spinning a core, at
the same cores), so the cores alone cannot say how much of a difference it made.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ddpbench.analysis.core.thresholds import CONFIDENCE, CONTENDED_CORES, MACHINE_DIFFERS_CORES

#: compare's verdict in place of "slower" where B's machine was the busier one, or of "faster" where A's
#: was: the machine explains the difference as well as the code would
MACHINE_DIFFERED = "machine differed"
#: compare's verdict in place of "slower" where other work took the machine during some of the job's launches
#: in B, or of "faster" where it did in A: two sweeps at two times cannot tell that from the code
MACHINE_BUSY = "machine busy"
#: the clock ticks a second of /proc/stat's counters (Linux's USER_HZ, 100 by its ABI whatever the kernel's HZ)
PROC_STAT_HZ = 100
#: per launch: (key, repeat) and what its machine did (cores over its measured window; MHz)
MACHINE_COLUMNS = ("key", "repeat", "own_cores", "others_cores", "steal_cores", "contention_cores", "cpu_mhz")


def launch_machine(ranks: pd.DataFrame) -> pd.DataFrame:
    """One row per launch whose ranks read the machine (:data:`MACHINE_COLUMNS`)."""
    needed = {"key", "repeat", "cpu_cores", "machine_busy_cores", "machine_steal_cores", "cpu_mhz"}
    if ranks is None or ranks.empty or not needed <= set(ranks.columns):
        return pd.DataFrame(columns=list(MACHINE_COLUMNS))
    table = ranks[list(needed)].copy()
    for column in needed - {"key", "repeat"}:
        table[column] = pd.to_numeric(table[column], errors="coerce")
    table = table.dropna(subset=["cpu_cores", "machine_busy_cores"])
    if table.empty:
        return pd.DataFrame(columns=list(MACHINE_COLUMNS))
    grouped = table.groupby(["key", "repeat"], sort=False)
    out = pd.DataFrame({"own_cores": grouped["cpu_cores"].sum(), "busy": grouped["machine_busy_cores"].mean(),
                        "steal_cores": grouped["machine_steal_cores"].mean(),
                        "cpu_mhz": grouped["cpu_mhz"].mean()}).reset_index()
    out["others_cores"] = out["busy"] - out["own_cores"]
    out["contention_cores"] = out["others_cores"] + out["steal_cores"].fillna(0.0)
    return out[list(MACHINE_COLUMNS)]


def reading_resolution(cpus: float, window_s) -> float:
    """The coarsest a launch's contention can be, in cores, over a window of ``window_s`` seconds on
    ``cpus`` CPUs: each CPU's busy and steal counters move in whole ticks (:data:`PROC_STAT_HZ`), so two
    readings of each sum differ from the time by up to one tick a CPU, and the contention adds both. A
    few milliseconds of steps read the machine to within cores, not tenths of one."""
    return 2 * cpus / PROC_STAT_HZ / np.asarray(window_s, float)


def recorded_cpus(*sweeps: pd.DataFrame | None) -> float:
    """The CPUs the machine had (``cores_logical``) by the sweep records of one or more folders: the most
    any records; NaN where none does."""
    found = [pd.to_numeric(t["cores_logical"], errors="coerce") for t in sweeps
             if t is not None and "cores_logical" in t]
    return float(pd.concat(found).max()) if found else math.nan


def busy_launches(ranks: pd.DataFrame | None, steps: pd.DataFrame | None, cpus: float = math.nan) -> dict[str, int]:
    """Per job key, how many of its launches ran surely contended (module docstring): contention at least
    :data:`~ddpbench.analysis.core.thresholds.CONTENDED_CORES` beyond its reading's resolution over the
    launch's slowest rank's window on ``cpus`` CPUs (where the CPUs are not known, beyond nothing). Jobs
    none of whose launches read the machine are absent."""
    from ddpbench.analysis.core.windows import bounding_ranks

    machine = launch_machine(ranks)
    if machine.empty or steps is None or steps.empty:
        return {}
    windows = bounding_ranks(steps)[["key", "repeat", "window_ms"]]
    table = machine.merge(windows.astype({"repeat": machine["repeat"].dtype}), on=["key", "repeat"], how="left")
    resolution = np.nan_to_num(reading_resolution(cpus, table["window_ms"].to_numpy(float) / 1000.0), nan=0.0)
    table["busy"] = table["contention_cores"].to_numpy(float) >= CONTENDED_CORES + resolution
    return {str(key): int(part.sum()) for key, part in table.groupby("key", sort=False)["busy"]}


def contended(machine: pd.DataFrame) -> pd.Series:
    """Whether each launch of a :func:`launch_machine` table ran contended."""
    return machine["contention_cores"] >= CONTENDED_CORES


def job_machine_figures(machine: pd.DataFrame | None) -> dict:
    """A job's summary columns of its launches' :func:`launch_machine` rows: the mean contention over
    those that read it and how many were contended; NaN and 0 where none did."""
    if machine is None or machine.empty:
        return {"contention_cores": math.nan, "contended_launches": 0}
    return {"contention_cores": float(machine["contention_cores"].mean()),
            "contended_launches": int(contended(machine).sum())}


@dataclass(frozen=True)
class MachineDifference:
    """How B's machine differed from A's over their launches: each side's mean contention (cores),
    B - A with its 95 % Welch interval, each side's mean clock (MHz), and the call."""

    launches_a: int
    launches_b: int
    contention_a: float
    contention_b: float
    low: float
    high: float
    mhz_a: float
    mhz_b: float

    @property
    def differed(self) -> bool:
        return self.low >= MACHINE_DIFFERS_CORES or self.high <= -MACHINE_DIFFERS_CORES

    @property
    def busier(self) -> str:
        """"A" or "B": the side whose machine was the busier, where they differed; else ""."""
        if not self.differed:
            return ""
        return "B" if self.low > 0 else "A"

    def words(self, advice: bool = True, names: tuple[str, str] = ("A", "B")) -> str:
        """What each side's machine did, the sides called ``names``; with ``advice``, what that means for a
        comparison of two separate runs (an interleaved A/B pairs its rounds, and needs none)."""
        a, b = names
        clock = (f"; the CPUs' clock {self.mhz_a:.0f} MHz in {a}, {self.mhz_b:.0f} in {b}"
                 if math.isfinite(self.mhz_a) and math.isfinite(self.mhz_b) and abs(self.mhz_b - self.mhz_a) >= 1
                 else "")
        span = (f"{b} - {a} {self.contention_b - self.contention_a:+.2f} cores, 95 % interval {self.low:+.2f} to "
                f"{self.high:+.2f}, over {self.launches_a} and {self.launches_b} launches")
        said = (f"other processes and the hypervisor took {self.contention_a:.2f} cores on average during {a}'s "
                f"measured steps and {self.contention_b:.2f} during {b}'s ({span}){clock}")
        if not advice:
            return said
        if self.differed:
            return (f"the machine differed: {said}. A slower side on the busier machine is not called slower: "
                    "run the two interleaved (python -m ddpbench ab) for a fair answer")
        return f"the machine did not differ beyond {MACHINE_DIFFERS_CORES:g} cores: {said}"


def machine_difference(ranks_a: pd.DataFrame, ranks_b: pd.DataFrame) -> MachineDifference | None:
    """The difference of two folders' machines over their launches; None where a side has fewer
    than two launches that read it (no interval)."""
    a, b = launch_machine(ranks_a), launch_machine(ranks_b)
    return contention_difference(a["contention_cores"], b["contention_cores"], float(a["cpu_mhz"].mean()),
                                 float(b["cpu_mhz"].mean()))


def commits_difference(commits_a, commits_b) -> MachineDifference | None:
    """:func:`contention_difference` of two runs of a history's commits, each commit a list of its
    launches' contention (a trend table's ``launch_contention_cores``); None where a side has fewer than
    two launches that read the machine."""
    def launches(commits) -> np.ndarray:
        return np.concatenate([np.asarray(c, float) for c in commits] or [np.array([])])

    return contention_difference(launches(commits_a), launches(commits_b))


def contention_difference(a, b, mhz_a: float = math.nan, mhz_b: float = math.nan) -> MachineDifference | None:
    """:class:`MachineDifference` of two sides' launches' contention (cores); None where a side has fewer
    than two (no interval)."""
    from scipy import stats

    xa, xb = np.asarray(a, float), np.asarray(b, float)
    xa, xb = xa[np.isfinite(xa)], xb[np.isfinite(xb)]
    if len(xa) < 2 or len(xb) < 2:
        return None
    diff = float(xb.mean() - xa.mean())
    if np.ptp(xa) == 0 and np.ptp(xb) == 0:
        low = high = diff
    else:
        low, high = stats.ttest_ind(xb, xa, equal_var=False).confidence_interval(CONFIDENCE)
    return MachineDifference(len(xa), len(xb), float(xa.mean()), float(xb.mean()), float(low), float(high),
                             mhz_a, mhz_b)
