"""Mixed precision and torch.compile: each setting against fp32 eager, what it does to one rank,
to the job at every world size, to communication's share and to memory; and what compiling cost."""

from __future__ import annotations

import math

import pandas as pd
from markupsafe import Markup

from ddpbench.analysis.core import EFFICIENCY, describe, label_fields, ordered
from ddpbench.analysis.diagnosis import has_settings, ratio_text, scaling_sentences, setting_name, settings_table
from ddpbench.report.page import DASH, ReportContext, Section, html, html_table, num


def _wire(row) -> str:
    """What DDP sends: fp32 gradients, unless a communication hook compresses them."""
    hook = str(row.get("comm_hook", "none"))
    return {"none": "fp32", "fp16": "fp16 (hook)", "bf16": "bf16 (hook)"}.get(hook, f"{hook} (hook)")


def _pct(value) -> Markup | str:
    return DASH if value is None or (isinstance(value, float) and math.isnan(value)) else f"{100 * value:.0f}"


def precision_section(ctx: ReportContext) -> Section | None:
    summary = ctx.summary
    if not has_settings(summary):
        return None
    table = settings_table(summary)
    parts = [Markup('<p class="what">Each compute setting (precision: the forward and the loss under '
             "<code>torch.autocast</code> in bf16, or in fp16 with a <code>GradScaler</code>; compile: "
             "<code>torch.compile</code> of the DDP-wrapped model) set against the <strong>fp32 eager</strong> job "
             "alike in every other field, at the same world size. At world size 1 the throughput ratio is the "
             "compute speedup; at larger sizes it is what is left of it once the ranks communicate. Parameters, "
             "gradients, DDP's buckets and the optimizer stay fp32 (PyTorch's defaults): the bytes on the wire "
             "stay what they were unless a communication hook compresses them, so compute precision and wire "
             "precision are shown apart. Intervals are 95 % t intervals over launches.</p>")]
    sentences = scaling_sentences(table)
    if sentences:
        parts.append(html("<ul>{% for text in texts %}<li>{{ text }}</li>{% endfor %}</ul>",
                          texts=[text for text, _, _ in sentences]))
    if not table.empty:
        rows = []
        for _, r in table.sort_values(["job", "setting", "world_size"]).iterrows():
            rows.append([r["job"], r["setting"], _wire(r), r["world_size"],
                         ratio_text(r["throughput_ratio"], r["throughput_ratio_low"], r["throughput_ratio_high"]),
                         num(r["compute_ratio"], ".2f", "x") if not math.isnan(r["compute_ratio"]) else DASH,
                         _pct(r[EFFICIENCY]), _pct(r["base_efficiency"]),
                         _pct(r["exposed_comm_share"]), _pct(r["base_exposed_comm_share"])])
        parts.append(html_table(
            ["job", "compute", "wire", "world size", "throughput vs fp32 eager", "compute vs fp32 eager (no-sync step)",
             "efficiency (%)", "fp32 eager efficiency (%)", "exposed comm (% of step)",
             "fp32 eager exposed comm (%)"], rows, numeric={3, 5, 6, 7, 8, 9}))
    else:
        parts.append(Markup('<p class="note">No setting here has an fp32-eager job alike in every other field to be '
                            "set against: add <code>precision = [\"fp32\", ...]</code> and <code>compile = [false, "
                            "...]</code> to the experiment's grid.</p>"))
    parts.append(_compile_table(summary))
    parts.append(_memory_table(summary))
    return Section("Mixed precision and compilation", Markup("\n").join(p for p in parts if p))


def _compile_table(summary: pd.DataFrame) -> Markup:
    compiled = summary[(summary["status"] == "ok") & (summary["compile"].astype(str) == "True")]
    if compiled.empty:
        return Markup()
    fields = [f for f in label_fields(summary) if f not in ("precision", "compile")]
    rows = [[describe(r, fields), setting_name(r), num(r["compile_s_cold"], ".1f"),
             num(r["compile_s_warm"], ".1f"), num(r["compiled_graphs"], ".0f"), num(r["graph_breaks"], ".0f"),
             num(r["ddp_optimizer_subgraphs"], ".0f"), num(r["recompiles_after_compile_phase"], ".0f")]
            for _, r in ordered(compiled).iterrows()]
    return (Markup('<p class="note">What compiling cost, in the compile phase (one untimed step before the warmup, '
            "never among the measured steps; the median rank's seconds, that one step's own run included). "
            "<em>Cold</em>: a launch that found the job's compile cache empty (its first); <em>warm</em>: later "
            "repeats, fresh processes that load the compiled graphs from the job's own Inductor cache "
            "(<code>TORCHINDUCTOR_CACHE_DIR</code> under the results folder's <code>.work/inductor-cache/</code>). "
            "Graph breaks include DDP's own: Dynamo does not trace DDP's forward but the module inside it, which "
            "DDPOptimizer splits at DDP's bucket boundaries (its subgraphs). A recompile after the compile phase "
            "happened inside timed steps.</p>\n")
            + html_table(["job", "setting", "compile, cold (s)", "compile, warm (s)", "graphs", "graph breaks",
                          "DDPOptimizer subgraphs", "recompiles after the compile phase"], rows,
                         numeric={2, 3, 4, 5, 6, 7}))


def _memory_table(summary: pd.DataFrame) -> Markup:
    ok = summary[summary["status"] == "ok"]
    if ok.empty or "rank_memory_mb" not in ok or ok["rank_memory_mb"].isna().all():
        return Markup()
    fields = [f for f in label_fields(summary) if f not in ("precision", "compile", "world_size")]
    ok = ordered(ok)
    rows = [[describe(r, fields), setting_name(r), r["world_size"], num(r["rank_memory_mb"], ".0f"),
             num(r.get("gpu_peak_allocated_mb", math.nan), ".0f"), num(r.get("amp_skipped_steps", math.nan), ".0f")]
            for _, r in ok.iterrows()]
    return (Markup('<p class="note">Memory per setting, strategy and world size: the largest rank\'s own memory '
                   'at the end '
            "of the measured steps (MB, 10<sup>6</sup> bytes: its anonymous and shared resident memory, the same "
            "whether the rank was forked from the warm server or started as a new interpreter; library code, "
            "page cache every torch process shares, is left out), and on CUDA the peak the rank's tensors held. "
            "<em>Skipped steps</em>: optimizer steps fp16's GradScaler skipped for inf or NaN gradients.</p>\n")
            + html_table(["job", "setting", "world size", "rank memory (MB)", "GPU peak allocated (MB)",
                          "skipped steps (fp16)"], rows, numeric={2, 3, 4, 5}))
