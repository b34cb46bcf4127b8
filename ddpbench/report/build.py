"""The HTML report: stored results in, ``index.html`` and PNG figures out.

The report reads the results folder only (:func:`ddpbench.results.tables.load_tables`, then
:func:`ddpbench.analysis.summary.summarize`, and :func:`ddpbench.results.tables.load_collectives`
for the collective micro-benchmarks); it never runs anything. The page is :data:`SECTIONS`, in
reading order: first what to conclude, then the evidence, then how sure it is. A section that
does not apply to these results (no GPU job, one strategy, no collectives, ...) leaves no trace.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Sequence

from ddpbench.analysis.summary import datasheet_peak, summarize
from ddpbench.report.page import INDEX_FILE, ReportContext, SectionFn, experiment_names, render_page
from ddpbench.report.sections import (collectives, compute, diagnosis, frameworks, gpu, network, noise, overview,
                                      precision, projection, scaling, search, strategies, timeline, verdict)
from ddpbench.results.sidefiles import replace_file
from ddpbench.results.store import DamagedRecord
from ddpbench.results.tables import load_collectives, load_tables

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
    scaling.bucket_section,
    timeline.timeline_section,
    compute.compute_section,
    compute.data_section,
    gpu.gpu_section,
    strategies.strategies_section,
    frameworks.frameworks_section,
    precision.precision_section,
    strategies.communication_section,
    strategies.equivalence_section,
    strategies.memory_section,
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


def write_report(results_dir: str | Path, out_dir: str | Path | None = None,
                 sections: Sequence[SectionFn] | None = None) -> Path:
    """Write ``index.html`` (and its PNGs) for a results folder; return the path of index.html.

    ``out_dir`` defaults to ``results_dir``; ``sections`` to :data:`SECTIONS`, in that order.
    """
    return write_context(load_context(results_dir, out_dir), sections)


def write_context(ctx: ReportContext, sections: Sequence[SectionFn] | None = None) -> Path:
    """Write the report of a loaded results folder (:func:`load_context`); return index.html's path."""
    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", GLYPH_WARNING, UserWarning)
        rendered = [s for s in (fn(ctx) for fn in (SECTIONS if sections is None else sections)) if s is not None]
    return replace_file(ctx.out_dir / INDEX_FILE, render_page(page_title(ctx), rendered, ctx.out_dir))


def load_context(results_dir: str | Path, out_dir: str | Path | None = None) -> ReportContext:
    """A results folder loaded and summarised once, as every section of its report reads it."""
    results_dir = Path(results_dir)
    out_dir = Path(out_dir) if out_dir is not None else results_dir
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DamagedRecord)
        steps, runs, ranks, sweeps = load_tables(results_dir)
        collectives = load_collectives(results_dir)
    damaged = []  # damaged records go on the page and to the caller, once each; other warnings as they came
    for w in caught:
        if not issubclass(w.category, DamagedRecord):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        elif str(w.message) not in damaged:
            damaged.append(str(w.message))
            warnings.warn(str(w.message), DamagedRecord, stacklevel=2)
    summary = summarize(steps, runs, ranks, datasheet_tflops=datasheet_peak(sweeps))
    return ReportContext(summary, steps, runs, ranks, sweeps, results_dir, out_dir, collectives, damaged=damaged)


def page_title(ctx: ReportContext) -> str:
    names = experiment_names(ctx.sweeps)
    return "ddpbench report: " + (", ".join(names) if names else ctx.results_dir.name)
