"""One job's ranks together: their clocks aligned from the collectives themselves, the rank whose
compute ended last in each step and what the others lost waiting for it, and each collective's
size and bandwidth.

* **Clocks.** Every rank's times are first put on one epoch (each trace's ``baseTimeNanoseconds``).
  Ranks on different hosts still differ by their hosts' clock offset, so each rank's offset from
  the lowest rank is the median, over the collectives both ran (matched by step and order), of the
  difference of their ends: an all-reduce, all-gather, reduce-scatter, barrier or broadcast ends on
  every rank within about one message's latency (:data:`~ddpbench.traces.kinds.ALIGNING_OPS`). A
  point-to-point operation does not (a send ends when its part has gone, the receive when it has
  come): where the ranks have only those in common, the clocks cannot be aligned.
  Ranks whose traces name the same host (``host_name``) read one clock, so they share one offset
  (the median of theirs; none on the lowest rank's host). The spread of the differences around
  the offset (their median absolute deviation, the worst rank's) is the residual skew, said beside
  every cross-rank figure.
* **Waiting.** In each step, the rank whose last compute ended last is the one the others waited
  for: each other rank lost the time from its own compute's end to that one's, at most its exposed
  communication (where a collective's kernel spun waiting for its peers). The rest of the exposed
  communication is ``transfer``.
* **Collectives** (:func:`collective_table`): per collective as the ranks ran it, its bytes, dtype
  and group, and nccl-tests' algbw (bytes / time) and busbw (algbw times the bus factor of the
  op and group size, :func:`ddpbench.experiment.collectives.bus_factor`). The time is the
  shortest among the ranks: the rank that arrived last waited least, so its kernel is the transfer
  closest to alone.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ddpbench.experiment.collectives import bandwidths
from ddpbench.traces.columns import COLLECTIVE_COLUMNS, RANK_COLUMNS, STEP_COLUMNS
from ddpbench.traces.kinds import ALIGNING_OPS
from ddpbench.traces.read import Checked

#: why a job's clocks were not aligned (``clock["why"]``): the ranks ran no collective in common, or only
#: point-to-point operations, whose ends do not coincide
NOTHING_IN_COMMON, ONLY_POINT_TO_POINT = "no collective in common", "only point-to-point operations in common"


def job_tables(checked: Checked) -> dict:
    """The job's tables: ``steps`` (STEP_COLUMNS, times aligned, plus ``wait_ms``, ``transfer_ms``,
    ``last_rank``), ``collectives``, ``ranks`` (RANK_COLUMNS plus each rank's clock offset and skew),
    and ``clock`` (what the alignment found)."""
    ranks = checked.ranks
    epoch = min(t.clock_ns for t in ranks)
    steps = _frame([r for t in ranks for r in t.steps], STEP_COLUMNS)
    coll = _frame([r for t in ranks for r in t.collectives], COLLECTIVE_COLUMNS)
    shift = {t.rank: (t.clock_ns - epoch) / 1e3 for t in ranks}
    for frame, cols in ((steps, ("start_us", "compute_end_us")), (coll, ("start_us", "end_us"))):
        for col in cols:
            frame[col] = frame[col] + frame["rank"].map(shift).astype(float)
    offsets, skews = _offsets(coll, [t.rank for t in ranks], {t.rank: t.host for t in ranks})
    for frame, cols in ((steps, ("start_us", "compute_end_us")), (coll, ("start_us", "end_us"))):
        for col in cols:
            frame[col] = frame[col] - frame["rank"].map(offsets).astype(float)
    _waits(steps)
    table = _frame([r for t in ranks for r in t.breakdown], RANK_COLUMNS)
    table["clock_offset_us"] = table["rank"].map(offsets)
    table["clock_skew_us"] = table["rank"].map(skews)
    table["host"] = [t.host for t in ranks]
    table["file"] = [t.path for t in ranks]
    # aligned only where every rank is: a rank with no collective in common keeps its host's own clock
    aligned = len(skews) > 1 and all(math.isfinite(s) for s in skews.values())
    hosts = {t.host for t in ranks}
    clock = {"aligned": aligned, "skew_us": max(skews.values()) if aligned else math.nan,
             "largest_offset_us": max((abs(v) for v in offsets.values()), default=0.0),
             "one_host": len(hosts) == 1 and "" not in hosts,
             "why": None if aligned or len(ranks) < 2 else _why_unaligned(coll, [t.rank for t in ranks])}
    return {"steps": steps, "collectives": coll, "ranks": table, "clock": clock,
            "collective_sizes": collective_table(coll, checked.world_size), "kernels": kernel_table(ranks)}


def kernel_table(ranks: list) -> pd.DataFrame:
    """Per step and GPU kernel (by name): its time in the step, the ranks' mean (µs)."""
    total: dict = {}
    for t in ranks:
        for key, us in t.kernels.items():
            total[key] = total.get(key, 0.0) + us
    rows = [(step, name, us / len(ranks)) for (step, name), us in total.items()]
    return pd.DataFrame(rows, columns=["step", "kernel", "us"]).sort_values(["step", "kernel"], ignore_index=True)


def _frame(rows: list, columns) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(columns))


def _aligning(coll: pd.DataFrame) -> pd.DataFrame:
    """The collectives whose ends coincide across ranks (:data:`ALIGNING_OPS`), each with its order among
    them in its rank's step (``index``): a point-to-point operation between them shifts no match."""
    mine = coll[coll["op"].isin(ALIGNING_OPS)].sort_values(["rank", "step", "index"])
    return mine.assign(index=mine.groupby(["rank", "step"]).cumcount())


def _why_unaligned(coll: pd.DataFrame, ranks: list) -> str:
    """Why the clocks of ``ranks`` were not aligned: :data:`ONLY_POINT_TO_POINT` where every rank ran
    collectives but some rank no aligning one, else :data:`NOTHING_IN_COMMON`."""
    ran = set(coll["rank"]) if len(coll) else set()
    aligning = set(_aligning(coll)["rank"]) if len(coll) else set()
    return ONLY_POINT_TO_POINT if ran >= set(ranks) and not aligning >= set(ranks) else NOTHING_IN_COMMON


def _offsets(coll: pd.DataFrame, ranks: list, hosts: dict) -> tuple[dict, dict]:
    """Each rank's clock offset from the lowest rank, and the residual skew (module docstring), from the
    collectives whose ends coincide (:func:`_aligning`). Ranks whose traces name one host share its
    clock: its offset is the median of theirs (the lowest rank's host: 0)."""
    offsets, skews = {r: 0.0 for r in ranks}, {r: math.nan for r in ranks}
    coll = _aligning(coll) if len(coll) else coll
    if coll.empty or len(ranks) < 2:
        return offsets, skews
    ends = coll.pivot_table(index=["step", "index"], columns="rank", values="end_us", aggfunc="first")
    ref = ranks[0]
    if ref not in ends:
        return offsets, skews
    differences = {r: (ends[r] - ends[ref]).dropna().to_numpy() for r in ranks if r in ends}
    found = {r: float(np.median(d)) for r, d in differences.items() if len(d)}
    by_host: dict = {}
    for r in found:
        if hosts.get(r):
            by_host.setdefault(hosts[r], []).append(found[r])
    shared = {host: 0.0 if host == hosts.get(ref) else float(np.median(v)) for host, v in by_host.items()}
    for r, d in differences.items():
        if r in found:
            offsets[r] = shared.get(hosts.get(r), found[r]) if hosts.get(r) else found[r]
            skews[r] = float(np.median(np.abs(d - offsets[r])))
    return offsets, skews


def _waits(steps: pd.DataFrame) -> None:
    """``last_rank``, ``wait_ms`` and ``transfer_ms`` of every row (module docstring)."""
    if steps.empty:
        for col in ("last_rank", "wait_ms", "transfer_ms"):
            steps[col] = pd.Series(dtype=float)
        return
    last_end = steps.groupby("step")["compute_end_us"].transform("max")
    idx = steps["compute_end_us"].fillna(-np.inf).groupby(steps["step"]).idxmax()
    last_rank = steps.loc[idx.values, ["step", "rank"]].set_index("step")["rank"]
    steps["last_rank"] = steps["step"].map(last_rank)
    wait = ((last_end - steps["compute_end_us"]) / 1e3).clip(lower=0)
    steps["wait_ms"] = np.minimum(wait.fillna(0.0), steps["exposed_ms"])
    steps["transfer_ms"] = steps["exposed_ms"] - steps["wait_ms"]


def collective_table(coll: pd.DataFrame, world_size: int) -> pd.DataFrame:
    """Per distinct collective (op, bytes, dtype, group): how often it ran, its time (median over its
    runs of the shortest rank's) and nccl-tests' algbw and busbw in GB/s."""
    columns = ["op", "bytes", "dtype", "group", "group_size", "count", "time_us", "algbw_gbps", "busbw_gbps"]
    if coll.empty:
        return pd.DataFrame(columns=columns)
    runs = coll.groupby(["step", "index"]).agg(op=("op", "first"), bytes=("bytes", "first"), dtype=("dtype", "first"),
                                               group=("group", "first"), group_size=("group_size", "first"),
                                               time_us=("dur_us", "min")).reset_index()
    runs["group_size"] = runs["group_size"].where(runs["group_size"] > 0, world_size)
    keys = ["op", "bytes", "dtype", "group", "group_size"]
    out = runs.groupby(keys, dropna=False).agg(count=("time_us", "size"), time_us=("time_us", "median")).reset_index()
    bw = [_bandwidth(r.op, r.bytes, r.time_us, int(r.group_size)) for r in out.itertuples()]
    out["algbw_gbps"] = [a for a, _ in bw]
    out["busbw_gbps"] = [b for _, b in bw]
    return out[columns].sort_values(["op", "bytes"], kind="stable").reset_index(drop=True)


def _bandwidth(op: str, size: float, time_us: float, group_size: int) -> tuple[float, float]:
    if not (isinstance(size, float) and math.isfinite(size)) or group_size < 1:
        return math.nan, math.nan
    try:
        return bandwidths(op, int(size), time_us / 1e6, group_size)
    except ValueError:  # an op nccl-tests has no bus factor for
        return size / (time_us / 1e6) / 1e9 if time_us > 0 else math.nan, math.nan


def bucket_layout(coll: pd.DataFrame) -> pd.DataFrame:
    """The all_reduce sizes each step ran, in order, on the lowest rank: DDP's bucket layout as it ran."""
    if coll.empty:
        return pd.DataFrame(columns=["step", "buckets", "mb"])
    first = coll[(coll["rank"] == coll["rank"].min()) & (coll["op"] == "all_reduce")]
    rows = [(step, len(g), [round(b / 2**20, 3) if math.isfinite(b) else math.nan
                            for b in g.sort_values("index")["bytes"]]) for step, g in first.groupby("step")]
    return pd.DataFrame(rows, columns=["step", "buckets", "mb"])
