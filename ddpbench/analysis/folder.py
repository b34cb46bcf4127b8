"""A results folder, loaded and summarised once: what every reader of a folder starts from.

The report (and the end of a sweep, which prints the report's table), ``report --check``,
``export-benchmark``, ``compare`` and ``whatif --from`` each read a folder through :func:`load` (a
folder the program itself wrote) or :func:`load_given` (a folder named on the command line, with
one-line errors), so the tables are read once, :func:`ddpbench.analysis.summary.table.summarize` runs
once, with the datasheet peak the folder's experiment gave, and each damaged record is said once.

The object is the one way to what the analysis concludes of the folder, each computed on first use
and kept (as HTA's ``TraceAnalysis`` is the one way into a trace folder): :attr:`Measured.model`
(the cost model; :attr:`Measured.network` and :attr:`Measured.link_check` for emulated links),
:attr:`Measured.findings` (the diagnosis), :attr:`Measured.verdict` (its headline lines) and
:attr:`Measured.contradictions` (what the independent checker finds wrong in them). The
report's sections and the command line display them; none recomputes them. A reader that shows
none of them (``export-benchmark``, ``compare``, ``whatif --from``) computes none of them.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ddpbench.analysis.diagnosis.choice import Choice, choices
from ddpbench.analysis.diagnosis.finders import diagnose
from ddpbench.analysis.diagnosis.findings import Finding
from ddpbench.analysis.diagnosis.verdict import Answer, answers, headline
from ddpbench.analysis.models.costmodel import fit_collectives
from ddpbench.analysis.models.model import Model, cost_model
from ddpbench.analysis.models.network import held_out_check, network_table
from ddpbench.analysis.summary import table as _summary
from ddpbench.analysis.summary.cost import stored_cost
from ddpbench.experiment.cost import Cost
from ddpbench.results.store import DamagedRecord
from ddpbench.results.strings import python_strings
from ddpbench.results.tables import load_collectives, load_folder, load_tables


@dataclass(frozen=True)
class Measured:
    """One results folder: its stored tables, the per-job summary made from them, and what the
    analysis concludes of them (each computed on first use, then kept: the object is frozen and its
    tables are not changed after loading)."""

    results_dir: Path
    #: the training tables (:func:`ddpbench.results.tables.load_tables`)
    steps: pd.DataFrame
    runs: pd.DataFrame
    ranks: pd.DataFrame
    sweeps: pd.DataFrame
    #: one row per job (:func:`ddpbench.analysis.summary.table.summarize`); empty when no job ran
    summary: pd.DataFrame
    #: one row per (launch, op, placement, size) of the collective micro-benchmarks
    #: (:func:`ddpbench.results.tables.load_collectives`); empty when the folder holds none, or
    #: when they were not asked for
    collectives: pd.DataFrame
    #: what loading skipped or blanked, one line per damaged record, each once
    #: ("results.jsonl:8: damaged record skipped ...")
    damaged: tuple[str, ...] = ()
    #: the price the costs are computed with: the stored one, or one given for the report
    cost: Cost = Cost()

    @functools.cached_property
    def choices(self) -> list[Choice]:
        """The fastest and, with a price, the cheapest setting of each model, and the cheapest that meets
        the deadline (:func:`ddpbench.analysis.diagnosis.choice.choices`): verdict lines beside the diagnosis's."""
        return choices(self.summary, self.cost) if len(self.summary) else []

    @functools.cached_property
    def model(self) -> Model:
        """The cost model (:func:`ddpbench.analysis.models.model.cost_model`): what the diagnosis quotes and
        the report's projection draws. Fitted to the collectives too, so from a folder loaded with them."""
        return cost_model(self.summary, self.ranks, self.collectives, self.sweeps, self.steps)

    @functools.cached_property
    def network(self) -> pd.DataFrame:
        """The emulated-network jobs against the alpha-beta model of their link rates
        (:func:`ddpbench.analysis.models.network.network_table`); empty without such jobs."""
        return network_table(self.summary, self.ranks)

    @functools.cached_property
    def link_check(self) -> pd.DataFrame:
        """The network model checked across link rates, each rate held out of the fit in turn
        (:func:`ddpbench.analysis.models.network.held_out_check`): quoted by the diagnosis, shown by the report."""
        return held_out_check(self.network)

    @functools.cached_property
    def findings(self) -> list[Finding]:
        """The diagnosis (:func:`ddpbench.analysis.diagnosis.finders.diagnose`) of the summary, with the cost
        model's projection and its checks, the held-out check across emulated link rates and the
        machine's fitted all-reduce curve; empty when no job ran."""
        if self.summary.empty:
            return []
        model = self.model
        return diagnose(self.summary, model.shown_projection, model.primary_checks, self.link_check,
                        link=fit_collectives(self.collectives))

    @functools.cached_property
    def verdict(self) -> list[tuple[str, str]]:
        """The headline lines (label, text) of the findings (:func:`ddpbench.analysis.diagnosis.verdict.headline`):
        the report's first section and what a sweep prints at its end; empty when no job ran."""
        if not len(self.summary):
            return []
        return [*headline(self.findings, self.summary), *((c.label, c.text) for c in self.choices)]

    @functools.cached_property
    def answers(self) -> list[Answer]:
        """The verdict as a table, a row per question (:func:`ddpbench.analysis.diagnosis.verdict.answers`):
        what the report and a sweep's console show first; empty when no job ran or every job failed."""
        if not len(self.summary):
            return []
        return answers(self.findings, self.summary, self.choices)

    @functools.cached_property
    def contradictions(self) -> list:
        """What the independent checker (:mod:`ddpbench.audit`, through
        :func:`ddpbench.analysis.diagnosis.claims.audit_findings`) finds wrong in the verdict and the findings,
        against the figures it re-derives from the stored records: what ``report --check`` lists."""
        # the checker (and scipy.stats, which it imports) only for ``report --check``: a second of a report's start
        from ddpbench.analysis.diagnosis.claims import audit_findings

        if not len(self.summary):  # no job: nothing said, nothing to check
            return []
        return audit_findings(self.results_dir, self.findings, self.verdict, self.summary, self.cost.to_dict(),
                              self.choices, self.answers)


@python_strings
def load(results_dir: str | Path, collectives: bool = True, loss_budget: bool = True,
         cost: Cost | None = None) -> Measured:
    """The folder's tables and summary. FileNotFoundError without a results file; a folder that
    holds no training job gives an empty summary. ``loss_budget`` and ``cost`` (a price other than
    the stored one): see :func:`summarize`."""
    return _measure(Path(results_dir), load_tables, collectives, loss_budget, cost)


def load_given(folder: str | Path, where: str | None = None, collectives: bool = True,
               loss_budget: bool = True, cost: Cost | None = None) -> Measured:
    """:func:`load` of a folder named on the command line: InputError naming ``where`` (default:
    the folder) when it is missing, unreadable or holds no training job
    (:func:`ddpbench.results.tables.load_folder`). ``loss_budget``, ``cost``: see :func:`summarize`."""
    return _measure(Path(folder), lambda f: load_folder(f, where), collectives, loss_budget, cost)


def _measure(folder: Path, read, with_collectives: bool, loss_budget: bool = True,
             cost: Cost | None = None) -> Measured:
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
    stored_price, unused = stored_cost(sweeps)
    if unused and cost is None:
        damaged.append(unused)
        warnings.warn(unused, DamagedRecord, stacklevel=3)
    cost = stored_price if cost is None else cost
    summary = _summary.summarize(steps, runs, ranks, datasheet_tflops=_summary.datasheet_peak(sweeps),
                                 loss_budget=loss_budget, cost=cost)
    return Measured(folder, steps, runs, ranks, sweeps, summary, stored, tuple(damaged), cost)
