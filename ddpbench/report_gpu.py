"""The report's GPU section (registered on import by report.py): for every job that ran on CUDA,
where each step's device time went (CUDA events), how full its fullest GPU got, and how the
same job ran on CPU where the results hold one."""

from __future__ import annotations

import math

import pandas as pd

from ddpbench.report import (ReportContext, Section, esc, html_table, num, section, throughput_format,
                             with_interval)

#: what a CPU job must share with a CUDA job to be its counterpart (device, backend, threads and
#: how long each was measured may differ)
SAME_WORK = ("strategy", "comm_hook", "model", "model_size", "per_rank_batch", "world_size", "grad_accum",
             "optimizer", "scaling")
#: fields that say where or how long a job was measured, not what it ran: left out of its label here
HOW_MEASURED = ("bucket_cap_mb", "device", "backend", "threads_per_rank", "loader_workers", "warmup_steps", "steps",
                "repeats", "check_steps")
PHASES = (("data_ms", "data"), ("forward_ms", "forward"), ("backward_ms", "backward"), ("comm_ms", "comm"),
          ("optimizer_ms", "optimizer"))


def cuda_jobs(summary: pd.DataFrame) -> pd.DataFrame:
    if summary.empty or "device" not in summary:
        return summary.iloc[0:0]
    return summary[(summary["device"] == "cuda") & (summary["status"] == "ok")]


def cpu_counterpart(job, summary: pd.DataFrame):
    """The ok CPU job doing the same work as ``job`` (the fastest if several), or None."""
    cpu = summary[(summary["device"] == "cpu") & (summary["status"] == "ok") & summary["samples_per_s"].notna()]
    for field in SAME_WORK:
        if field in cpu:
            cpu = cpu[cpu[field] == job[field]]
    return cpu.loc[cpu["samples_per_s"].idxmax()] if len(cpu) else None


def gpu_table(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per ok CUDA job: its throughput, mean phase times, GPU memory and CPU counterpart."""
    rows = []
    for _, job in cuda_jobs(summary).iterrows():
        cpu = cpu_counterpart(job, summary)
        cpu_rate = float(cpu["samples_per_s"]) if cpu is not None else math.nan
        rows.append({"key": job["key"], "gpus": job.get("gpus", math.nan), "samples_per_s": job["samples_per_s"],
                     "step_ms_median": job["step_ms_median"], **{p: job[p] for p, _ in PHASES},
                     "gpu_peak_allocated_mb": job.get("gpu_peak_allocated_mb", math.nan),
                     "gpu_peak_reserved_mb": job.get("gpu_peak_reserved_mb", math.nan),
                     "cpu_samples_per_s": cpu_rate, "gpu_over_cpu": job["samples_per_s"] / cpu_rate})
    return pd.DataFrame(rows)


@section
def gpu_section(ctx: ReportContext) -> Section | None:
    from ddpbench import plots

    table = gpu_table(ctx.summary)
    if table.empty:
        return None
    summary = ctx.summary
    extra = [f for f in plots.line_fields(summary) if f not in HOW_MEASURED]
    jobs = summary.set_index("key")
    header = ["job", "GPUs", "samples/s", "step (ms)", *(f"{label} (ms)" for _, label in PHASES),
              "peak allocated (MB)", "peak reserved (MB)", "same job on CPU (samples/s)", "GPU / CPU"]
    rows = []
    for _, r in table.iterrows():
        job = jobs.loc[r["key"]]
        rows.append([esc(plots.describe(job, extra, summary)), num(r["gpus"], ".0f"),
                     with_interval(job, "samples_per_s", throughput_format(r["samples_per_s"]), mark_missing=False),
                     num(r["step_ms_median"], ".2f"), *(num(r[p], ".2f") for p, _ in PHASES),
                     num(r["gpu_peak_allocated_mb"], ",.0f"), num(r["gpu_peak_reserved_mb"], ",.0f"),
                     num(r["cpu_samples_per_s"], throughput_format(r["cpu_samples_per_s"])),
                     num(r["gpu_over_cpu"], ".1f", "×")])
    compared = table["gpu_over_cpu"].notna()
    verdict = ""
    if compared.any():
        best = table.loc[table.loc[compared, "gpu_over_cpu"].idxmax()]
        verdict = (f" Where the same job also ran on this machine&rsquo;s CPU, the GPU ran it "
                   f"{num(table.loc[compared, 'gpu_over_cpu'].min(), '.1f')}&ndash;"
                   f"{num(best['gpu_over_cpu'], '.1f')}&times; faster.")
    text = ('<p class="what">Every job that ran on CUDA: its throughput, where each step&rsquo;s time went, '
            "how much memory its fullest GPU held, and how the same job ran on CPU." + verdict + "</p>"
            '<p class="note">Phase times are means over measured steps, taken with CUDA events on each '
            "rank&rsquo;s stream and read once per step (the only synchronisation): device time in stream "
            "order, including any time the GPU waited for the host (a slow data loader shows as data time). "
            "DDP&rsquo;s all-reduce overlaps the backward pass and is counted there. <em>Peak allocated</em>: "
            "the most memory the job&rsquo;s tensors held at once (<code>torch.cuda.max_memory_allocated</code>); "
            "<em>peak reserved</em>: what PyTorch&rsquo;s caching allocator took from the driver for them "
            "(<code>max_memory_reserved</code>); both on the fullest GPU, the largest over ranks and "
            "launches, read after the measured steps; 1 MB = 10<sup>6</sup> bytes. <em>GPUs</em>: how many "
            "GPUs one process drove (DataParallel: all of its world size). <em>Same job on CPU</em>: the "
            "CPU job of these results with the same strategy, model, per-rank batch and world size.</p>")
    return Section("GPU", text + html_table(header, rows, numeric=set(range(1, len(header)))))
