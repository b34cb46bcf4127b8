"""Frameworks (Accelerate, Lightning Fabric) beside raw DDP on the same work: their throughput and
efficiency against their own world-size-1 runs, and what each costs against raw DDP."""

from __future__ import annotations

from markupsafe import Markup

from ddpbench.analysis.core import EFFICIENCY, SAMPLES_PER_S, STEP_MS
from ddpbench.analysis.diagnosis import against_raw_ddp
from ddpbench.analysis.summary import overhead_table
from ddpbench.report.page import ReportContext, Section, html, html_table, num
from ddpbench.report.plots.frameworks import overhead_plot


def frameworks_section(ctx: ReportContext) -> Section | None:
    table = overhead_table(ctx.summary)
    if table.empty:
        return None
    rows = [[r["framework"], r["model"], r["world_size"], num(r[STEP_MS], ".2f"), num(r["ddp_step_ms_mean"], ".2f"),
             _against(r), num(r[SAMPLES_PER_S], ".1f"), num(r["ddp_samples_per_s"], ".1f"),
             num(100 * r[EFFICIENCY], ".0f"), num(100 * r["ddp_efficiency"], ".0f"),
             f"{r['launches']} / {r['ddp_launches']}"]
            for _, r in table.iterrows()]
    path = overhead_plot(table, ctx.image("frameworks_overhead.png"))
    text = (
        Markup('<p class="what">The same model object, data, optimizer, batch and steps, trained through each '
        "framework's own calls (Accelerate: <code>prepare</code>, <code>accelerator.backward</code>, "
        "<code>no_sync</code>; Lightning Fabric: <code>setup</code>, <code>fabric.backward</code>, "
        "<code>no_backward_sync</code>; Lightning's Trainer: one <code>fit</code> of the warmup and measured "
        "steps, timed by a callback), by TensorFlow (the preset's Keras twin, with the same layers and parameter "
        "count, on the same samples, through <code>Model.fit</code> under <code>MirroredStrategy</code>: one "
        "process, a replica per device; or <code>MultiWorkerMirroredStrategy</code>: a process per worker) and by "
        "raw DistributedDataParallel at the same world size. The two mean steps are compared as a speedup from the "
        "faster side, with its 95 % t interval over both jobs' launches; the difference is significant only when "
        "the interval excludes 1. Efficiency is against the framework's own "
        "world-size-1 run. At world size 1 Accelerate trains the bare model (it wraps nothing in DDP for one "
        "process), where raw DDP, Fabric and the Trainer run DDP over one process. For Accelerate and Fabric every "
        "phase is timed as for raw DDP: their calls sit inside the same phases. The Trainer's step is timed from "
        "the end of the step before to its own end, all it does per step included; it fetches the next batch "
        "inside its own loop and has no step without gradient sync, so its data time and its exposed "
        "communication are not seen (left blank, never guessed). Keras runs forward, backward, the reduction and "
        "the update as one compiled step: TensorFlow shows the step alone.</p>\n")
        + html_table(["framework", "model", "world size", "step (ms)", "raw DDP step (ms)",
                      "against raw DDP (mean step)", "samples/s", "raw DDP samples/s", "efficiency (%)",
                      "raw DDP efficiency (%)", "launches (framework / DDP)"], rows, numeric={2, 3, 4, 6, 7, 8, 9}))
    return Section("Frameworks", text + _versions(ctx), (path,) if path is not None else ())


def _against(r) -> str:
    """The framework's mean step against raw DDP's, a speedup from the faster side, and whether it differs."""
    if r["overhead_low"] != r["overhead_low"]:  # NaN: one launch on a side
        return f"{against_raw_ddp(r)} (one launch on a side: no interval)"
    return f"{against_raw_ddp(r)}, {'significant' if r['significant'] else 'not significant'}"


def _versions(ctx: ReportContext) -> Markup:
    """The frameworks' versions (the latest sweep's environment) and TensorFlow's cross-device reductions."""
    sweeps = ctx.sweeps
    names = {"accelerate_version": "Accelerate", "lightning_version": "Lightning", "tensorflow_version": "TensorFlow",
             "tf_keras_version": "tf-keras"}
    found = [f"{label} {sweeps[column].dropna().iloc[-1]}" for column, label in names.items()
             if column in sweeps and sweeps[column].notna().any()]
    table = ctx.summary
    reductions = sorted(set(table["reduction"].dropna())) if "reduction" in table else []
    parts = ([f"Versions: {', '.join(found)}."] if found else []) + (
        [f"TensorFlow's cross-device reduction: {', '.join(reductions)}."] if reductions else [])
    return html('<p class="note">{{ text }}</p>', text=" ".join(parts)) if parts else Markup()
