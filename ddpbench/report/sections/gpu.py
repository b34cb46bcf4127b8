"""The report's GPU section: for every job that ran on CUDA, where each step's device time went
(CUDA events), how full its fullest GPU got, and how the same job ran on CPU where the results hold one."""

from __future__ import annotations

from markupsafe import Markup

from ddpbench.analysis.core import SAMPLES_PER_S, STEP_MS, describe, line_fields
from ddpbench.analysis.summary import gpu_table
from ddpbench.report.page import ReportContext, Section, html, html_table, num, throughput_format, with_interval
from ddpbench.results.phases import TIMED

#: the timed phases' columns, and their names in the table's header
PHASES = tuple((phase.column, phase.name) for phase in TIMED)
#: fields that say where or how long a job was measured, not what it ran: left out of a job's label here and in
#: the compute and cost sections (a deliberate choice of columns, not the spec's MEASURED_HOW role)
LEFT_OUT_OF_LABELS = ("bucket_cap_mb", "device", "backend", "threads_per_rank", "loader_workers", "warmup_steps",
                      "steps", "repeats", "check_steps")


def gpu_section(ctx: ReportContext) -> Section | None:
    table = gpu_table(ctx.summary)
    if table.empty:
        return None
    summary = ctx.summary
    extra = line_fields(summary, but=LEFT_OUT_OF_LABELS)
    jobs = summary.set_index("key")
    header = ["job", "GPUs", "samples/s", "step (ms, mean)", *(f"{label} (ms)" for _, label in PHASES),
              "peak allocated (MB)", "peak reserved (MB)", "same job on CPU (samples/s)", "GPU / CPU"]
    rows = []
    for _, r in table.iterrows():
        job = jobs.loc[r["key"]]
        rows.append([describe(job, extra, summary), num(r["gpus"], ".0f"),
                     with_interval(job, SAMPLES_PER_S, throughput_format(r[SAMPLES_PER_S]), mark_missing=False),
                     num(r[STEP_MS], ".2f"), *(num(r[p], ".2f") for p, _ in PHASES),
                     num(r["gpu_peak_allocated_mb"], ",.0f"), num(r["gpu_peak_reserved_mb"], ",.0f"),
                     num(r["cpu_samples_per_s"], throughput_format(r["cpu_samples_per_s"])),
                     num(r["gpu_over_cpu"], ".1f", "×")])
    compared = table["gpu_over_cpu"].notna()
    verdict = Markup()
    if compared.any():
        best = table.loc[table.loc[compared, "gpu_over_cpu"].idxmax()]
        verdict = html(" Where the same job also ran on this machine&rsquo;s CPU, the GPU ran it "
                       "{{ low }}&ndash;{{ high }}&times; faster.",
                       low=num(table.loc[compared, "gpu_over_cpu"].min(), ".1f"), high=num(best["gpu_over_cpu"], ".1f"))
    text = (Markup('<p class="what">Every job that ran on CUDA: its throughput, where each step&rsquo;s time went, '
                   "how much memory its fullest GPU held, and how the same job ran on CPU.") + verdict + Markup("</p>"
            '<p class="note">Phase times are means over measured steps, taken with CUDA events on each '
            "rank&rsquo;s stream and read once per step (the only synchronisation): device time in stream "
            "order, including any time the GPU waited for the host (a slow data loader shows as data time). "
            "DDP&rsquo;s all-reduce overlaps the backward pass and is counted there. <em>Peak allocated</em>: "
            "the most memory the job&rsquo;s tensors held at once (<code>torch.cuda.max_memory_allocated</code>); "
            "<em>peak reserved</em>: what PyTorch&rsquo;s caching allocator took from the driver for them "
            "(<code>max_memory_reserved</code>); both on the fullest GPU, the largest over ranks and "
            "launches, read after the measured steps; 1 MB = 10<sup>6</sup> bytes. <em>GPUs</em>: how many "
            "GPUs one process drove (DataParallel: all of its world size). <em>Same job on CPU</em>: the "
            "CPU job of these results with the same strategy, model, per-rank batch and world size.</p>"))
    return Section("GPU", text + html_table(header, rows, numeric=set(range(1, len(header)))))
