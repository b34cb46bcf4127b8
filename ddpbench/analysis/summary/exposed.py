"""Exposed communication with its interval over launches.

A job's exposed communication is its mean measured step less its mean ``no_sync()`` step: what
gradient communication adds to a step that backward did not hide. Each is its phase's slowest-rank
window over its steps (:mod:`ddpbench.analysis.core.windows`): no-sync steps are not kept in step, so
each rank's own window is the only comparable one (never each step's maximum over ranks). Each launch measures both, so
each launch gives one difference (its mean step less its own mean ``no_sync()`` step), and the 95 %
Student t interval of their mean (:func:`ddpbench.analysis.core.stats.difference_mean_ci`: a paired
t, each launch's own placement cancelling) says how well the launches pin the figure down: NaN with
fewer than two launches that measured both. A figure whose interval includes 0 is not a
measurement of anything (:mod:`ddpbench.analysis.diagnosis.wording`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ddpbench.analysis.core import stats


def launch_differences(launch_means: pd.DataFrame, nosync_steps: pd.DataFrame) -> list[float]:
    """Each launch's mean step (``launch_means``: repeat, step_ms) less its mean no_sync() step
    (``nosync_steps``: repeat, step_ms per bounded step), for the launches that measured both (ms)."""
    if launch_means.empty or nosync_steps.empty:
        return []
    nosync = nosync_steps.groupby("repeat")["step_ms"].mean()
    step = launch_means.set_index("repeat")["step_ms"]
    both = step.index.intersection(nosync.index)
    return [float(step[r] - nosync[r]) for r in sorted(both)]


def figures(step_mean_ms: float, launch_means: pd.DataFrame, nosync_steps: pd.DataFrame) -> dict:
    """The summary's no_sync() step and exposed communication figures, the latter with its 95 %
    interval over launches (ms, and as a share of the mean step)."""
    values = nosync_steps["step_ms"].to_numpy(dtype=float) if len(nosync_steps) else np.array([])
    values = values[~np.isnan(values)]
    nosync_mean = float(values.mean()) if values.size else math.nan
    exposed = step_mean_ms - nosync_mean
    low, high = stats.difference_mean_ci(launch_differences(launch_means, nosync_steps))
    share = (lambda ms: ms / step_mean_ms) if step_mean_ms else (lambda ms: math.nan)
    return {"nosync_step_ms": nosync_mean, "exposed_comm_ms": exposed, "exposed_comm_share": share(exposed),
            "exposed_comm_ms_low": low, "exposed_comm_ms_high": high,
            "exposed_comm_share_low": share(low), "exposed_comm_share_high": share(high)}


#: the exposed-communication figures (:func:`figures`), withheld together where the no-sync steps all-reduced
FIGURES = ("nosync_step_ms", "exposed_comm_ms", "exposed_comm_share", "exposed_comm_ms_low",
           "exposed_comm_ms_high", "exposed_comm_share_low", "exposed_comm_share_high")


def withheld(job_runs: pd.DataFrame) -> dict:
    """A script job whose no-sync steps all-reduced all the same (the script defeated ddpbench's hold on
    DDP's flag; the runs' ``nosync_allreduced``): its exposed-communication figures NaN, and why in
    ``exposed_reason``. Nothing for any other job."""
    counts = pd.to_numeric(job_runs.get("nosync_allreduced", pd.Series(dtype=float)), errors="coerce").fillna(0)
    if not (counts > 0).any():
        return {}
    why = (f"withheld: {int(counts.sum())} of the script's no-sync steps all-reduced all the same (the script "
           "overrode DDP's require_backward_grad_sync where ddpbench could not steer it), so mean step - mean "
           "no-sync step would measure nothing")
    return {**{name: math.nan for name in FIGURES}, "exposed_reason": why}
