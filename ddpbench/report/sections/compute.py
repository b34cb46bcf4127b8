"""The report's compute and data sections: what each job's model costs in FLOPs and what share
of a peak it reached, and how long its steps waited for their data."""

from __future__ import annotations

import math

from markupsafe import Markup

from ddpbench.analysis.core import DATA_BOUND_SHARE, STEP_MS, describe, line_fields, model_name
from ddpbench.analysis.summary import datasheet_peak
from ddpbench.report.many import job_table
from ddpbench.report.page import DASH, ReportContext, Section, html, html_table, num
from ddpbench.report.plots import data as data_plots
from ddpbench.report.plots import scaling as scaling_plots
from ddpbench.report.sections.gpu import LEFT_OUT_OF_LABELS
from ddpbench.report.sections.scaling import TREND_NOTE, not_drawn, sizes_above_one


def _pct_or_wrong(value: float) -> Markup:
    """An efficiency; above 100 % it says the peak is wrong rather than pass as a figure."""
    if value != value:
        return DASH
    text = num(100 * value, ".0f", " %")
    return html('<span class="wrong-note">{{ text }}: peak wrong</span>', text=text) if value > 1 else text


def compute_section(ctx: ReportContext) -> Section | None:
    summary = ctx.summary
    if summary.empty or "flops_per_step" not in summary or not summary["flops_per_step"].notna().any():
        return None
    jobs = summary[summary["flops_per_step"].notna()]
    datasheet = datasheet_peak(ctx.sweeps) if ctx.sweeps is not None else math.nan
    fields = [f for f in line_fields(summary)
              if f not in LEFT_OUT_OF_LABELS or f in ("loader_workers", "bucket_cap_mb")]
    fields = [f for f in fields if f != "world_size"]
    # a CPU's rates read better in GFLOP/s
    unit, scale = ("TFLOP/s", 1.0) if (jobs["total_tflops"] >= 1).any() else ("GFLOP/s", 1e3)
    header = ["job", "ws", "params", "tensors", "GFLOP / step", "GFLOP / sample", f"{unit} per process",
              f"{unit}, all", f"GEMM peak ({unit})", "of GEMM peak", *(["MFU"] if datasheet == datasheet else [])]
    rows = []
    for _, r in jobs.iterrows():
        processes = 1 if r["strategy"] == "dp" else r["world_size"]  # one DataParallel process takes it all
        per_sample = r["flops_per_step"] / (r["global_batch"] / processes)
        rows.append([describe(r, fields, summary), num(r["world_size"], ".0f"), num(r["params"], ",.0f"),
                     num(r["tensors"], ".0f"),
                     num(r["flops_per_step"] / 1e9, ",.3g") + ("" if r["flops_source"] == "counted" else "*"),
                     num(per_sample / 1e9, ",.3g"), num(r["achieved_tflops"] * scale, ".3g"),
                     num(r["total_tflops"] * scale, ".3g"), num(r["gemm_peak_tflops"] * scale, ".3g"),
                     _pct_or_wrong(r["compute_efficiency"]),
                     *([_pct_or_wrong(r["mfu"])] if datasheet == datasheet else [])])
    methods = sorted(set(jobs["peak_method"].dropna()))
    given = [m for m in jobs["flops_source"].dropna().unique() if m != "counted"]
    text = html('<p class="what">What each job computes and how fast: FLOPs per optimizer step of one process '
            "(forward and backward), counted in a job&rsquo;s first launch with PyTorch&rsquo;s own counter "
            "(<code>torch.utils.flop_counter.FlopCounterMode</code>) on one micro-batch of the bare model (a job "
            "that differs from an earlier one of the sweep only in its bucket size or its check takes that "
            "count), and the rate reached: "
            "those FLOPs over the mean step, communication and waiting included.</p>"
            '<p class="note"><em>GEMM peak</em>: measured by every rank as it started, at its threads (or on its '
            "GPU) while the other ranks did the same, as the best of repeated square matmuls, once per device, "
            "thread count and number of ranks measuring at once: a job&rsquo;s first launch measures it unless an "
            "earlier launch of the sweep did, or an earlier sweep on this machine under the same conditions (then "
            "reused, and said so below with when it was measured; <code>DDPBENCH_CACHE_DIR=off</code> keeps "
            "nothing between sweeps) ("
                "{{ methods }}); <em>of GEMM peak</em> is the rate over that peak, the median over "
                "ranks. The counter sees matrix products, convolutions and attention, not elementwise work, "
                "normalisation or the loss, so the figures are a lower bound of the work done."
                "{% if mfu %} <em>MFU</em>: the rate over the datasheet peak the experiment gave, {{ datasheet }} "
                "TFLOP/s per device (<code>datasheet_tflops</code>).{% endif %}"
                "{% if given %} * the workload&rsquo;s own figure (<code>Workload.flops_per_sample</code>).{% endif %}"
                "</p>", methods="; ".join(methods), mfu=datasheet == datasheet, datasheet=num(datasheet, ".4g"),
                given=bool(given))
    images = ()
    if len(sizes_above_one(summary, "total_tflops")) >= 2:
        path = scaling_plots.flops_vs_world_size(summary, ctx.image("flops.png"))
        images = (path,) if path is not None else ()
    else:  # a point or two per configuration: the table's column says all the figure would
        not_drawn(ctx, "flops.png")
        if len(scaling_plots.world_sizes(summary)) >= 2:
            text += TREND_NOTE
    skipped = summary[summary["check_skipped"].notna()] if "check_skipped" in summary else summary.iloc[0:0]
    if len(skipped):
        names = sorted({model_name(r, summary) for _, r in skipped.iterrows()})
        reasons = sorted(set(skipped["check_skipped"]))
        text += html('<p class="note">The equivalence check against single-process training was skipped for '
                     "{{ names }}, because its workload says: {{ reasons }}. Its replicas were still checked to be "
                     "identical.</p>", names=", ".join(names), reasons=" / ".join(map(str, reasons)))
    table = job_table(ctx, "compute", header, rows, list(jobs[STEP_MS]), numeric=set(range(1, len(header))))
    return Section("Compute", text + table, images)


def data_section(ctx: ReportContext) -> Section | None:
    """Shown when the results read data from disk or try several loader worker counts."""
    summary = ctx.summary
    if summary.empty or "data_share" not in summary:
        return None
    ok = summary[(summary["status"] == "ok") & summary["data_share"].notna()]
    if ok.empty or not ((ok["data"] == "disk").any() or ok["loader_workers"].nunique() > 1):
        return None
    # the jobs this section is about: data from files, a data-bound job, or a loader_workers sweep
    swept = {key for part in data_plots.loader_groups(summary) for key in part["key"]}
    ok = ok[(ok["data"] == "disk") | (ok["data_share"] >= DATA_BOUND_SHARE) | ok["key"].isin(swept)]
    fields = line_fields(summary, but=(*LEFT_OUT_OF_LABELS, "data", "world_size"))
    header = ["job", "ws", "data", "loader workers", "step (ms)", "waiting for data (ms)", "share of the step"]
    rows, classes = [], []
    for _, r in ok.iterrows():
        rows.append([describe(r, fields, summary), num(r["world_size"], ".0f"), r["data"],
                     num(r["loader_workers"], ".0f"),
                     num(r[STEP_MS], ".1f"), num(r["data_ms"], ".1f"), num(100 * r["data_share"], ".0f", " %")])
        classes.append("bad" if r["data_share"] >= DATA_BOUND_SHARE else "")
    text = html('<p class="what">How long each step waited for its next batch (data time, the mean over measured '
                "steps) against the whole step. A job waiting more than "
                "{{ share }} % of its step is data-bound (marked).</p>"
            '<p class="note"><em>memory</em>: the dataset as the workload built it; <em>disk</em>: its samples '
            "written once as files (images as JPEG) and read and decoded per sample by the DataLoader, in "
            "<code>loader_workers</code> worker processes per rank, or in the training process with 0.</p>",
                share=num(100 * DATA_BOUND_SHARE, ".0f"))
    path = data_plots.data_vs_loader_workers(summary, ctx.image("data.png"))
    return Section("Data loading", text + html_table(header, rows, row_classes=classes, numeric={1, 3, 4, 5, 6}),
                   (path,) if path is not None else ())
