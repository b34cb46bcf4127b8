"""Made-up launches for compare's tests: step times with launch-to-launch and step-to-step noise,
the job they are of, the machine they ran on and its readings of the ranks' cores, a 5 % gate on the
median, two sides compared, a folder of launches written through the real store, and compare's CSV
and console table read back.

And the simulations that hold the comparisons' intervals to what they say (:func:`sequences`,
:func:`shift_calls`), shared by the tests that assert them (tests/unit/analysis/core/test_sequential.py,
tests/unit/traces/test_reading.py) and the prose check that quotes their figures
(tests/examples/project/test_prose_figures.py): the same draws, from one place. Properties of the code on
seeded simulated data, not measurements of a machine."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

from ddpbench.analysis.core import t_bound
from ddpbench.analysis.history import Gate
from ddpbench.analysis.summary import summarize
from ddpbench.experiment.spec import JobSpec, spec_from_dict
from ddpbench.results.schema import TIMED_PHASES
from ddpbench.results.store import ResultStore
from ddpbench.results.tables import BATCH_COLUMNS
from ddpbench.testing.cli import ROOT
from ddpbench.testing.records import ResultsFolder, job, rank_entry, result_for, training_result
from ddpbench.testing.records import row as step_row
from ddpbench.traces.compare import shift

#: the environment block of the made-up machine both sides ran on
ENV = {"hostname": "host-a", "python": "3.11.7", "torch_version": "2.13.0+cpu", "torch_cuda": None,
       "nccl_version": None, "cpu_model": "Test CPU", "cores_usable": 2, "gpus": [], "gloo_available": True}


#: the committed reference results compare's tests plant regressions in: 6 jobs, 3 launches of 30 steps each
EXAMPLE = ROOT / "reports" / "examples" / "world-sizes-cpu"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
#: the step columns that are times: what :func:`plant_regression` multiplies
TIMING_FIELDS = (*TIMED_PHASES, "step_ms")


def write_folder(folder: Path, jobs, env=ENV) -> Path:
    """A results folder written the way a sweep writes it: (world_size, per-launch step times, status)."""
    results = ResultsFolder(folder, env=env)
    for world_size, launches, status in jobs:
        spec = dataclasses.replace(job_spec(world_size, repeats=len(launches)), steps=len(launches[0]))
        for repeat, times in enumerate(launches):
            rows = []
            for rank in range(world_size):
                rows.append(step_row(rank, "warmup", 0, 3.0, forward_ms=1.0, backward_ms=1.0, optimizer_ms=1.0))
                for phase in ("measure", "nosync"):
                    rows += [step_row(rank, phase, step, t, forward_ms=0.3 * t, backward_ms=0.5 * t,
                                      optimizer_ms=0.2 * t) for step, t in enumerate(times)]
            result = training_result(spec, rows, [rank_entry(r, peak_rss_mb=100.0) for r in range(world_size)],
                                     repeat, params=100, grad_bytes=400)
            results.launch(spec, repeat, status=status, error=None if status == "ok" else "boom", cores=2,
                           wall_s=1.0, result=result if status == "ok" else None)
    return folder


def plant_regression(source: Path, target: Path, factor: float) -> Path:
    """A copy of a results folder with every step's timings multiplied by ``factor``."""
    planted = ResultStore(target)
    for record in ResultStore(source).records():
        result = record.get("result") if record["kind"] == "run" else None
        if result:
            result["steps"] = [[v * factor if name in TIMING_FIELDS else v
                                for name, v in zip(result["step_columns"], step)] for step in result["steps"]]
        planted.append(record)
    return target


def assert_compare_outputs(out: Path) -> str:
    """compare's CSV, figure and page are in ``out``: the page's text."""
    assert (out / "compare.csv").is_file()
    assert (out / "ratios.png").read_bytes()[:8] == PNG_MAGIC
    page = (out / "index.html").read_text(encoding="utf-8")
    assert '<img src="ratios.png"' in page
    return page


def step_times(mean_ms: float, launches: int = 3, steps: int = 8, seed: int = 0, launch_sd=0.01, step_sd=0.02):
    """Step times (ms) of a job measured in ``launches`` launches: launch-level and step-level noise."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(launches):
        level = mean_ms * (1 + launch_sd * rng.standard_normal())
        out.append([float(level * (1 + step_sd * rng.standard_normal())) for _ in range(steps)])
    return out


def job_spec(world_size: int, repeats: int = 3) -> JobSpec:
    """mlp-xs on gloo, 8 steps a launch, ``repeats`` launches."""
    return JobSpec(world_size=world_size, batch_size=8, threads_per_rank=1, device="cpu", backend="gloo",
                   model="mlp", model_size="xs", steps=8, repeats=repeats)


def tables(jobs):
    """(summary, steps) of jobs given as (world_size, per-launch step times, status)."""
    steps, runs, ranks = [], [], []
    for world_size, launches, status in jobs:
        spec = job_spec(world_size)
        for repeat, times in enumerate(launches):
            ident = {"key": spec.key, **spec.to_dict(), **{c: getattr(spec, c) for c in BATCH_COLUMNS},
                     "repeat": repeat}
            runs.append({**ident, "status": status, "error": None if status == "ok" else "boom",
                         "oversubscribed": False, "wall_s": 1.0, "params": 100, "grad_bytes": 400})
            if status != "ok":
                continue
            for rank in range(world_size):
                ranks.append({**ident, "rank": rank, "peak_rss_mb": 100.0, "bucket_bytes": [400],
                              "ddp_backward_comm_ms": 1.0, "ddp_backward_compute_comm_overlap_ms": 0.5,
                              "allreduce_bytes_per_step": 400})
                for step, ms in enumerate(times):
                    t = ms * (1 - 0.05 * rank)  # rank 0 is the slowest: the bounded step is ``ms``
                    for kind, value in (("measure", t), ("nosync", 0.9 * t)):
                        steps.append({**ident, "rank": rank, "phase": kind, "step": step, "data_ms": 0.0,
                                      "forward_ms": 0.3 * value, "backward_ms": 0.5 * value, "comm_ms": 0.0,
                                      "optimizer_ms": 0.2 * value, "step_ms": value})
    steps = pd.DataFrame(steps)
    return summarize(steps, runs=runs, ranks=ranks), steps


#: compare's gate: the median step time at most 5 % slower
MEDIAN_5 = Gate("median", 5.0, "%")


def read_csv(path: Path) -> list[dict]:
    """The rows of a CSV file compare wrote, by column name."""
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def write_launches(folder: Path, levels: dict[int, list[float]]) -> Path:
    """A results folder written through the real store: per world size, an mlp-s job launched once per
    level given, each launch's steps about that level (ms: :func:`ddpbench.testing.records.result_for`)."""
    results = ResultsFolder(folder)
    for world_size, launches in levels.items():
        spec = job(world_size=world_size, repeats=len(launches))
        for repeat, ms in enumerate(launches):
            results.launch(spec_from_dict(spec), repeat, result=result_for(spec, ms, repeat=repeat))
    return folder


def console_verdicts(stdout: str) -> dict[str, str]:
    """Per job, the verdict in compare's console table (its first and third cells)."""
    cells = [line.split("\u2502") for line in stdout.splitlines() if line.startswith("\u2502")]
    return {row[1].strip(): row[3].strip() for row in cells if len(row) > 4}


def compare_jobs(jobs_a, jobs_b) -> pd.DataFrame:
    """compare's per-job table of two sides of made-up jobs (:func:`tables`' ``jobs`` each)."""
    from ddpbench.analysis.history import compare_tables

    return compare_tables(*tables(jobs_a), *tables(jobs_b))


def row_at(table: pd.DataFrame, world_size: int) -> pd.Series:
    """The row of ``table`` at ``world_size`` (the first, where there are more)."""
    return table[table["world_size"] == world_size].iloc[0]


def as_flag(value):
    """A table cell as True, False or None (pandas hands back numpy booleans)."""
    return None if value is None else bool(value)


def ranks_table(others: list[float], own=(0.9, 0.8), key: str = "k", steal: float = 0.0) -> pd.DataFrame:
    """The machine's readings of two ranks a launch, each launch with ``others[r]`` cores taken by
    other processes."""
    rows = []
    for repeat, other in enumerate(others):
        busy = sum(own) + other  # /proc/stat counts steal apart from busy time
        for rank, cores in enumerate(own):
            rows.append({"key": key, "repeat": repeat, "rank": rank, "cpu_cores": cores,
                         "machine_busy_cores": busy + (0.02 if rank else -0.02), "machine_steal_cores": steal,
                         "cpu_mhz": 2600.0})
    return pd.DataFrame(rows)


def slower_b() -> tuple:
    """(summary a, steps a, summary b, steps b): one world-size-2 job, b's launches about 20 % slower."""
    summary_a, steps_a = tables([(2, [[10.0] * 5, [10.2] * 5, [9.9] * 5, [10.1] * 5], "ok")])
    summary_b, steps_b = tables([(2, [[12.0] * 5, [12.1] * 5, [11.9] * 5, [12.2] * 5], "ok")])
    return summary_a, steps_a, summary_b, steps_b


class Sequences(NamedTuple):
    """Seeded normal rounds (sd 2) of a true ``mean``, ``trials`` sequences of ``looks`` looks: each look's error
    in standard errors, the confidence sequence's bound (:func:`.t_bound`) and a fixed-sample 95 % t interval's."""

    x: np.ndarray
    mean: float
    error: np.ndarray
    bound: np.ndarray
    fixed: np.ndarray

    def missed(self) -> float:
        """The share of sequences that exclude the true mean at any look."""
        return float((self.error > self.bound).any(axis=1).mean())

    def peeked(self) -> float:
        """The same for the fixed-sample interval read at every look (peeking)."""
        return float((self.error > self.fixed).any(axis=1).mean())


def sequences(trials: int = 4000, looks: int = 60, mean: float = 0.3, seed: int = 56) -> Sequences:
    """Optional stopping, as the A/B does it, on :class:`Sequences` of normal rounds."""
    rng = np.random.default_rng(seed)
    x = rng.normal(mean, 2.0, (trials, looks))
    n = np.arange(1, looks + 1)
    means = x.cumsum(axis=1) / n
    spread = np.sqrt(np.maximum((x * x).cumsum(axis=1) - n * means**2, 0) / np.maximum(n - 1, 1))
    with np.errstate(divide="ignore"):  # one value has no spread: its error is infinite, its bound too
        error = np.abs(means - mean) / (spread / np.sqrt(n))
    bound = np.array([t_bound(k) for k in n])
    fixed = np.array([stats.t.ppf(0.975, k - 1) if k > 1 else np.inf for k in n])
    return Sequences(x, mean, error, bound, fixed)


def shift_calls(draws: int = 400, steps: int = 12, seed: int = 7) -> tuple[float, float]:
    """The traces' before/after shift interval (:func:`ddpbench.traces.compare.shift`) on gamma steps: the share of
    ``draws`` pairs of runs shifted by 1 whose interval holds 1, and of identical pairs it calls different."""
    rng = np.random.default_rng(seed)
    covered = called = 0
    for _ in range(draws):
        a, b = rng.gamma(4.0, 1.0, steps), rng.gamma(4.0, 1.0, steps)
        _, low, high = shift(a, b + 1.0)
        covered += low <= 1.0 <= high
        _, low, high = shift(a, b)
        called += low > 0 or high < 0
    return covered / draws, called / draws
