"""A results folder, loaded and summarised once: what every reader of a folder starts from.

The report (and the end of a sweep, which prints the report's table), ``export-benchmark``,
``compare`` and ``whatif --from`` each read a folder through :func:`load` (a folder the program
itself wrote) or :func:`load_given` (a folder named on the command line, with one-line errors), so
the tables are read once, :func:`ddpbench.analysis.summary.summarize` runs once, with the
datasheet peak the folder's experiment gave, and each damaged record is said once.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ddpbench.analysis import summary as _summary
from ddpbench.results.store import DamagedRecord
from ddpbench.results.tables import load_collectives, load_folder, load_tables


@dataclass(frozen=True)
class Measured:
    """One results folder: its stored tables and the per-job summary made from them."""

    results_dir: Path
    #: the training tables (:func:`ddpbench.results.tables.load_tables`)
    steps: pd.DataFrame
    runs: pd.DataFrame
    ranks: pd.DataFrame
    sweeps: pd.DataFrame
    #: one row per job (:func:`ddpbench.analysis.summary.summarize`); empty when no job ran
    summary: pd.DataFrame
    #: one row per (launch, op, placement, size) of the collective micro-benchmarks
    #: (:func:`ddpbench.results.tables.load_collectives`); empty when the folder holds none, or
    #: when they were not asked for
    collectives: pd.DataFrame
    #: what loading skipped or blanked, one line per damaged record, each once
    #: ("results.jsonl:8: damaged record skipped ...")
    damaged: tuple[str, ...] = ()


def load(results_dir: str | Path, collectives: bool = True) -> Measured:
    """The folder's tables and summary. FileNotFoundError without a results file; a folder that
    holds no training job gives an empty summary."""
    return _measure(Path(results_dir), load_tables, collectives)


def load_given(folder: str | Path, where: str | None = None, collectives: bool = True) -> Measured:
    """:func:`load` of a folder named on the command line: InputError naming ``where`` (default:
    the folder) when it is missing, unreadable or holds no training job
    (:func:`ddpbench.results.tables.load_folder`)."""
    return _measure(Path(folder), lambda f: load_folder(f, where), collectives)


def _measure(folder: Path, read, with_collectives: bool) -> Measured:
    caught: list = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", DamagedRecord)
            steps, runs, ranks, sweeps = read(folder)
            stored = load_collectives(folder) if with_collectives else pd.DataFrame()
    finally:  # a folder refused (InputError) still says what was damaged in it
        damaged = []  # said to the caller once each; other warnings as they came
        for w in caught:
            if not issubclass(w.category, DamagedRecord):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            elif str(w.message) not in damaged:
                damaged.append(str(w.message))
                warnings.warn(str(w.message), DamagedRecord, stacklevel=3)
    summary = _summary.summarize(steps, runs, ranks, datasheet_tflops=_summary.datasheet_peak(sweeps))
    return Measured(folder, steps, runs, ranks, sweeps, summary, stored, tuple(damaged))
