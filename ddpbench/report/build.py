"""The HTML report: stored results in, ``index.html`` and PNG figures out.

The report reads the results folder only, loaded and summarised once
(:func:`ddpbench.analysis.folder.load`: the stored tables, the collective micro-benchmarks and the
per-job summary); it never runs anything. The page is :data:`SECTIONS`, in
reading order: first what to conclude, then the evidence, then how sure it is. A section that
does not apply to these results (no GPU job, one strategy, no collectives, ...) leaves no trace.
"""

from __future__ import annotations

import gc
import os
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ddpbench.analysis import folder
from ddpbench.experiment.cost import Cost
from ddpbench.files.sidefiles import replace_file
from ddpbench.report import workers
from ddpbench.report.page import INDEX_FILE, ReportContext, SectionFn, experiment_names, left_out_section, render_page
from ddpbench.report.plots.common import leaving_out
from ddpbench.report.plots.memo import remembering
from ddpbench.report.sections import (
    budget,
    collectives,
    compute,
    cost,
    diagnosis,
    frameworks,
    gpu,
    network,
    noise,
    overview,
    precision,
    projection,
    scaling,
    search,
    strategies,
    timeline,
    verdict,
)
from ddpbench.report.workers import Helper, usable_cpus
from ddpbench.results.strings import python_strings

#: matplotlib's warning for a character its font cannot draw: a stored label may hold control
#: characters (figures drop them before drawing, plots.common.save), and the warning would quote them
GLYPH_WARNING = r"Glyph \d+ .* missing from font"

#: the page, in reading order
SECTIONS: tuple[SectionFn, ...] = (
    verdict.verdict_section,
    diagnosis.diagnosis_section,
    search.search_section,
    overview.summary_section,
    overview.header_section,
    scaling.throughput_section,
    scaling.efficiency_section,
    scaling.serial_fraction_section,
    scaling.breakdown_section,
    budget.budget_section,
    scaling.bucket_section,
    timeline.timeline_section,
    compute.compute_section,
    compute.data_section,
    gpu.gpu_section,
    cost.cost_section,
    strategies.strategies_section,
    frameworks.frameworks_section,
    precision.precision_section,
    strategies.communication_section,
    strategies.equivalence_section,
    scaling.memory_overview_section,
    collectives.collectives_busbw_section,
    collectives.collectives_table_section,
    collectives.ddp_buckets_section,
    network.network_section,
    network.recovery_section,
    projection.projection_section,
    noise.repeats_section,
    noise.noise_section,
)


#: the sections that show the diagnosis and the cost model: the helper process writes them first, so
#: that the report process draws while the helper computes them (:mod:`ddpbench.report.workers`)
ANALYSIS_SECTIONS: tuple[SectionFn, ...] = (verdict.verdict_section, diagnosis.diagnosis_section,
                                            projection.projection_section)


@python_strings
def write_report(results_dir: str | Path, out_dir: str | Path | None = None,
                 sections: Sequence[SectionFn] | None = None, processes: int = 1, cost: Cost | None = None) -> Path:
    """Write ``index.html`` (and its PNGs) for a results folder; return the path of index.html.

    ``out_dir`` defaults to ``results_dir``; ``sections`` to :data:`SECTIONS`, in that order.
    ``processes=2`` writes the sections in two processes where two CPUs are free
    (:class:`~ddpbench.report.workers.Helper`, forked before the folder is read): the same page.
    ``cost``: a price other than the one the folder stored (:class:`ddpbench.experiment.cost.Cost`).
    """
    sections = SECTIONS if sections is None else sections
    with helping(sections, processes) as helper:
        return write_context(load_context(results_dir, out_dir, cost), sections, helper)


@contextmanager
def helping(sections: Sequence[SectionFn] | None = None, processes: int = 2,
            first: Sequence[SectionFn] = ANALYSIS_SECTIONS) -> Iterator[Helper | None]:
    """A helper process to write ``sections`` with (:class:`~ddpbench.report.workers.Helper`), forked
    now, before the folder is read, and ended and reaped on leaving; None where ``processes`` is 1,
    ``DDPBENCH_REPORT_HELPER=0`` turns it off, or fewer than two CPUs or no fork are there. Either way
    the garbage collector is paused inside (:func:`collector_paused`), in both processes. ``first``:
    the sections the helper writes before any other (the analysis's, which it computes while the
    report process draws); none where the report process computes the analysis itself first (a
    sweep prints the verdict before its report)."""
    with collector_paused():
        if processes < 2 or not workers.enabled() or usable_cpus() < 2 or not hasattr(os, "fork"):
            yield None
            return
        sections = SECTIONS if sections is None else sections
        with remembering(), Helper.start(sections, first, _section) as helper:  # the helper remembers
            yield helper


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a report is written, as it was on leaving. What a
    report makes (tables, figures) lives until the page is written, so its collections find little to
    free; reference counting still frees everything else at once. What it saves and costs (peak
    memory) is measured by ``python benchmarks/report_speed.py`` (benchmarks/measured.md)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def write_context(ctx: ReportContext, sections: Sequence[SectionFn] | None = None,
                  helper: Helper | None = None) -> Path:
    """Write the report of a loaded results folder (:func:`load_context`); return index.html's path.
    ``helper``: a second process to write sections with (:func:`write_report`)."""
    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    with remembering():  # what several sections derive from the summary, derived once (plots.memo)
        if helper is None:
            written = [_section(fn, ctx) for fn in (SECTIONS if sections is None else sections)]
        else:
            helper.send(ctx)
            written = helper.run(ctx)
    parts = [section for section, _ in written if section is not None]
    left_out = [line for _, lines in written for line in lines]
    if left_out:  # closes the page: each figure whose values could not be placed, one line each
        parts.append(left_out_section(left_out))
    return replace_file(ctx.out_dir / INDEX_FILE, render_page(page_title(ctx), parts, ctx.out_dir))


def _section(fn: SectionFn, ctx: ReportContext):
    """One section written, and the figures it left out (:func:`~ddpbench.report.plots.common.leaving_out`):
    as a pair, so that a section the helper process writes hands its lines back with it."""
    with warnings.catch_warnings(), leaving_out() as left_out:
        warnings.filterwarnings("ignore", GLYPH_WARNING, UserWarning)
        return fn(ctx), left_out


def load_context(results_dir: str | Path, out_dir: str | Path | None = None, cost: Cost | None = None) -> ReportContext:
    """A results folder loaded and summarised once (:func:`ddpbench.analysis.folder.load`), as every
    section of its report reads it (the folder object, ``ctx.folder``, holds the findings, the verdict
    and the cost model they display); its damaged records go on the page and to the caller, once each."""
    measured = folder.load(results_dir, cost=cost)
    out_dir = Path(out_dir) if out_dir is not None else measured.results_dir
    return ReportContext(measured.summary, measured.steps, measured.runs, measured.ranks, measured.sweeps,
                         measured.results_dir, out_dir, measured.collectives, damaged=list(measured.damaged),
                         folder=measured)


def page_title(ctx: ReportContext) -> str:
    names = experiment_names(ctx.sweeps)
    return "ddpbench report: " + (", ".join(names) if names else ctx.results_dir.name)
