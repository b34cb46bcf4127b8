"""How a launch's step is counted: from each rank's window, bounded by the slowest rank's.

A rank times its steps back to back (each step starts where the one before it ended; what lies
between two rows is the harness's bookkeeping, microseconds, which ``benchmarks/harness_overhead.py``
measures), so a rank's *window* over a phase, its first step's start to its last step's end, is the sum
of its step times there, and its mean step is that window over its steps. The launch took as long as
its slowest rank's window: its step is the largest of its ranks' mean steps, and that rank *bounds* it.

Why not each step's slowest rank, as ddpbench counted before: where two ranks' step ends jitter against
each other, the mean over steps of the per-step maximum exceeds what either rank took (3 % to 14 % on
the sub-millisecond tutorial at world size 2), and in ``no_sync()`` steps, which nothing keeps in step,
the maximum pairs steps that did not run at the same time (7.8 ms to 30.5 ms above the slower rank's own
no-sync mean on a Hugging Face ``Trainer`` script). A window is what throughput divides by, and each
rank's own window is the only comparable one in steps that are not synchronised.

The steps of the bounding rank are kept as the launch's per-step distribution (median, IQR, the
exported step times), so their mean is the launch's step.
"""

from __future__ import annotations

import pandas as pd

#: the columns naming one launch, and one launch's rank
LAUNCH = ["key", "repeat"]
RANK = [*LAUNCH, "rank"]


def rank_windows(steps: pd.DataFrame, phase: str = "measure") -> pd.DataFrame:
    """One row per (key, repeat, rank) of ``phase``'s steps: ``window_ms`` (the sum of the rank's step
    times), ``steps`` (how many it timed) and ``step_ms`` (the window over its steps). A table without a
    ``rank`` column is one rank's."""
    part = steps[steps["phase"] == phase] if len(steps) else steps
    if part.empty:
        return pd.DataFrame(columns=[*RANK, "window_ms", "steps", "step_ms"])
    if "rank" not in part:
        part = part.assign(rank=0)
    group = part.groupby(RANK, sort=False)["step_ms"]
    out = pd.DataFrame({"window_ms": group.sum(min_count=1), "steps": group.count()})
    out["step_ms"] = out["window_ms"] / out["steps"].where(out["steps"] > 0)
    return out.reset_index()


def bounding_ranks(steps: pd.DataFrame, phase: str = "measure") -> pd.DataFrame:
    """One row per (key, repeat): the rank whose mean step over ``phase`` was the largest (ties: the
    lowest rank), its ``step_ms`` (the launch's step), ``window_ms`` and ``steps``."""
    windows = rank_windows(steps, phase)
    if windows.empty:
        return windows
    ordered = windows.sort_values(["step_ms", "rank"], ascending=[False, True], kind="stable", na_position="last")
    slowest = ordered.drop_duplicates(LAUNCH)
    # in the launches' own order (as the table holds them), not the slowest first
    return windows[LAUNCH].drop_duplicates().merge(slowest, on=LAUNCH, how="left")


def bounding_steps(steps: pd.DataFrame, phase: str = "measure") -> pd.DataFrame:
    """One row per (key, repeat, step) of ``phase``: the step time of the rank that bounds its launch
    (:func:`bounding_ranks`), so that a launch's mean of them is its step."""
    bound = bounding_ranks(steps, phase)
    if bound.empty:
        return pd.DataFrame(columns=["key", "repeat", "step", "step_ms"])
    part = steps[steps["phase"] == phase]
    if "rank" not in part:
        part = part.assign(rank=0)
    rows = part[[*RANK, "step", "step_ms"]].merge(bound[RANK], on=RANK, how="inner")
    return rows[["key", "repeat", "step", "step_ms"]].reset_index(drop=True)


def launch_steps(steps: pd.DataFrame, phase: str = "measure") -> pd.DataFrame:
    """One row per (key, repeat): the launch's step (ms), its slowest rank's window over that rank's
    steps."""
    bound = bounding_ranks(steps, phase)
    if bound.empty:
        return pd.DataFrame(columns=["key", "repeat", "step_ms"])
    return bound[["key", "repeat", "step_ms"]]
