"""The report's last word: which jobs deserve less trust (noisy, one launch, oversubscribed, run beside
other work) and what would help."""

from __future__ import annotations

import math

from markupsafe import Markup

from ddpbench.analysis.core import (
    CONTENDED_CORES,
    NOISE_THRESHOLD,
    SAMPLES_PER_S,
    STEP_MS,
    describe,
    line_fields,
    ordered,
    pct,
)
from ddpbench.report.many import job_table
from ddpbench.report.page import ReportContext, Section, has_interval, html, num


def _noise_rows(table):
    """ok jobs that are noisy, ran in one launch (no interval) or were oversubscribed, with why."""
    found = []
    if table.empty:
        return found
    for _, r in ordered(table[table["status"] == "ok"]).iterrows():
        launches = int(r["repeats_ok"]) if "repeats_ok" in r and r["repeats_ok"] == r["repeats_ok"] else 0
        why = []
        if bool(r.get("noisy")):
            why.append("noisy")
        if launches < 2 or not has_interval(r, SAMPLES_PER_S):
            why.append("one launch")
        if bool(r.get("oversubscribed")):
            why.append("oversubscribed")
        if (r.get("contended_launches") or 0) > 0:
            why.append("contended")
        if why:
            found.append((r, launches, why))
    return found


NOISE_ADVICE = {
    "noisy": Markup("more steps per launch, and more launches; keep other work off the machine"),
    "one launch": Markup("set <code>repeats</code> &ge; 3 for an interval"),
    "oversubscribed": Markup("fewer ranks (or threads per rank) than cores"),
    "contended": Markup("measure when the machine is idle, or A/B interleaved (<code>ddpbench ab</code>) so that "
                        "other work falls on both sides"),
}


def noise_section(ctx: ReportContext) -> Section | None:
    found = _noise_rows(ctx.summary)
    if not found:
        return None
    table = ctx.summary
    extra = line_fields(table, but=("bucket_cap_mb",))
    header = ["job", "world size", "bucket (MB)", "step IQR / median (%)", "launches",
              "95 % CI width (% of samples/s)", "listed because", "what to do"]
    rows = []
    for r, launches, why in found:
        median = float(r["step_ms_median"])
        spread = 100 * float(r["step_ms_iqr"]) / median if median else math.nan
        width = (100 * (float(r["samples_per_s_high"]) - float(r["samples_per_s_low"])) / float(r[SAMPLES_PER_S])
                 if has_interval(r, SAMPLES_PER_S) and float(r[SAMPLES_PER_S]) else math.nan)
        rows.append([describe(r, extra, table), r["world_size"], num(r["bucket_cap_mb"], "g"),
                     num(spread, ".1f"), launches, num(width, ".1f"), ", ".join(why),
                     Markup("; ").join(NOISE_ADVICE[w] for w in why)])
    reasons = {w for _, _, why in found for w in why}
    cores = ctx.runs["cores"].dropna() if "cores" in ctx.runs.columns else []
    cores_text = f" (the machine had {int(max(cores))} usable cores)" if len(cores) else ""
    advice = []
    if "one launch" in reasons:
        advice.append(Markup("<strong>More launches</strong>: set <code>repeats</code> to 3 or more in the experiment. "
                      "Steps within one launch share its process placement and warm caches, so only fresh "
                      "launches show how much the next run can differ; with one launch there is no interval."))
    if "noisy" in reasons:
        advice.append(Markup("<strong>More steps</strong> per launch (<code>steps</code>) and more "
                             "<code>warmup_steps</code> steady the median; close other programs while measuring."))
    if reasons & {"noisy", "oversubscribed"}:
        advice.append(html("<strong>Fewer ranks than cores, and pinned threads</strong>: keep "
                      "world_size &times; threads_per_rank at or below the cores{{ cores }}, set "
                      "<code>threads_per_rank</code> explicitly rather than letting ranks share cores, and pin "
                      "the run to its cores (<code>taskset -c</code> or <code>numactl --physcpubind</code>) so "
                      "ranks do not migrate. Oversubscribed jobs measure contention for cores, not scaling.",
                      cores=cores_text))
    if "contended" in reasons:
        advice.append(html("<strong>A quiet machine, or an interleaved A/B</strong>: some launches ran beside "
                           "{{ cores }} cores or more of other processes' or the hypervisor's time (what each rank "
                           "read of <code>/proc/stat</code> over its measured steps, less the ranks' own). Their "
                           "steps carry it. To compare two versions on such a machine, <code>python -m ddpbench "
                           "ab</code> runs them in interleaved rounds, so that the other work falls on both.",
                           cores=f"{CONTENDED_CORES:g}"))
    items = html("{% for a in advice %}<li>{{ a }}</li>{% endfor %}", advice=advice)
    return Section(
        "Noise and confidence",
        html('<p class="what">Jobs whose figures deserve less trust: a step time whose inter-quartile range is '
             "more than {{ bar }} of its median (<em>noisy</em>), no confidence interval because the job ran in a "
             "single launch (<em>one launch</em>), more busy threads than cores (<em>oversubscribed</em>), or "
             "launches that ran beside other work (<em>contended</em>). "
             "The CI width is the 95 % t interval of the throughput over launches, as a share of the "
             "throughput.</p>\n", bar=pct(NOISE_THRESHOLD))
        + html('<div class="jobs">{{ table }}</div>\n<p class="note">What helps:</p>\n'
               '<ul class="note">{{ items }}</ul>',
               table=job_table(ctx, "noise", header, rows, [r[STEP_MS] for r, _, _ in found],
                               numeric={1, 2, 3, 4, 5}), items=items))


def repeats_section(ctx: ReportContext) -> Section | None:
    """Jobs under ``repeats = "auto"``: the launches each took, the interval it reached, and which
    stopped without reaching its target (at ``max_repeats``, or when the sweep's budget ran out)."""
    table = ctx.summary
    if table.empty or "ci_reached" not in table or not table["ci_reached"].notna().any():
        return None
    extra = line_fields(table, but=("bucket_cap_mb",))
    rows, short = [], 0
    jobs = ordered(table[table["ci_reached"].notna()])
    for _, r in jobs.iterrows():
        reached = bool(r["ci_reached"])
        short += not reached
        verdict = "reached" if reached else ("hit max_repeats" if r["repeats_bound"] == "max_repeats"
                                             else "stopped by repeat_budget_s")
        rows.append([describe(r, extra, table), r["world_size"], num(r["bucket_cap_mb"], "g"),
                     int(r["repeats_ok"]), html("&plusmn; {{ v }} %", v=num(r["ci_halfwidth_pct"], ".1f")),
                     html("&plusmn; {{ v }} %", v=num(r["ci_target_pct"], "g")), verdict])
    header = ["job", "world size", "bucket (MB)", "launches", "95 % interval of samples/s", "target", "verdict"]
    note = (f"{short} job(s) stopped before their interval was tight: their launches disagree more than "
            "the target allows; more steps per launch, a quieter machine, or a wider target."
            if short else "Every job reached its target.")
    return Section(
        "Repeats until the interval is tight",
        Markup('<p class="what">Jobs with <code>repeats = "auto"</code> were launched until the 95 % interval of '
        "their throughput over launches was within the target either way (or they reached "
        "<code>max_repeats</code>, or the sweep's <code>repeat_budget_s</code>): the launches each spent, "
        "and the interval it reached.</p>\n")
        + html('<div class="jobs">{{ table }}</div>\n<p class="note">{{ note }}</p>',
               table=job_table(ctx, "repeats", header, rows, list(jobs[STEP_MS]), numeric={1, 2, 3}), note=note))
