"""The report's scaling sections: throughput, parallel efficiency and Karp-Flatt's serial fraction
against world size; where each step's time goes; step time against DDP's bucket size; memory."""

from __future__ import annotations

from markupsafe import Markup

from ddpbench.analysis.core import (
    EFFICIENCY,
    SAMPLES_PER_S,
    STEP_MS,
    bucket_settings,
    caps_text,
    describe,
    line_fields,
    model_name,
    ordered,
    strategies_vary,
)
from ddpbench.report.many import job_table
from ddpbench.report.page import (
    DASH,
    OWN_MEMORY_NOTE,
    ReportContext,
    Section,
    figure_section,
    flags_html,
    has_interval,
    has_memory,
    html,
    html_table,
    interval_note,
    num,
    skipped_note,
)
from ddpbench.report.plots import jobs as job_plots
from ddpbench.report.plots import scaling as scaling_plots
from ddpbench.report.plots.common import MEMORY_AXES, memory_column, ok_rows


def throughput_section(ctx: ReportContext) -> Section | None:
    if ctx.summary.empty or len(scaling_plots.world_sizes(ctx.summary)) < 2:
        return None
    ideal = ("; the dotted lines show perfect linear scaling, the world-size-1 throughput times the number "
             "of ranks" if scaling_plots.ideal_lines_drawn(ctx.summary) else "")
    return figure_section(
        ctx, "Throughput vs world size", scaling_plots.throughput_vs_world_size, "throughput.png",
        html('<p class="what">Training throughput of all ranks together (samples per second) at each '
             "world size, one line per configuration{{ ideal }}.</p>", ideal=ideal)
        + interval_note(ctx.summary, SAMPLES_PER_S))


def efficiency_section(ctx: ReportContext) -> Section | None:
    if ctx.summary.empty or len(scaling_plots.world_sizes(ctx.summary)) < 2:
        return None
    sizes = sizes_above_one(ctx.summary, EFFICIENCY)
    what = html('<p class="what">Parallel efficiency (%) at each world size: the speedup over the '
                "world-size-1 run divided by the number of ranks, so 100 %{% if drawn %} (dotted){% endif %} means "
                "every added rank adds a full rank's throughput.</p>", drawn=len(sizes) != 1)
    if len(sizes) == 1:  # a point per configuration: the summary table's column says all the figure would
        not_drawn(ctx, "efficiency.png")
        return Section("Parallel efficiency vs world size", what + html(
            '<p class="note">Only one world size above 1 was measured ({{ size }}), so each configuration has one '
            "efficiency: the Summary table&rsquo;s <em>efficiency (%)</em> column gives each job&rsquo;s, with its "
            "95 % interval over launches. A figure is drawn where two or more world sizes above 1 show a "
            "trend.</p>", size=sizes[0]))
    return figure_section(ctx, "Parallel efficiency vs world size", scaling_plots.efficiency_vs_world_size,
                          "efficiency.png", what + interval_note(ctx.summary, EFFICIENCY))


#: a section whose figure against world size is not drawn, as its table gives each job's value at each
#: world size and fewer than two world sizes above 1 show no trend (efficiency_section's rule)
TREND_NOTE = Markup('<p class="note">The table gives each job&rsquo;s figures at its world size; a figure '
                    "against world size is drawn where two or more world sizes above 1 show a trend.</p>")


def not_drawn(ctx: ReportContext, filename: str) -> None:
    """A figure this report does not draw: an earlier report's PNG of that name is removed, not left
    beside a page that does not show it."""
    try:
        ctx.image(filename).unlink(missing_ok=True)
    except OSError:  # a folder planted at that name: the page links no PNG there either way
        pass


def sizes_above_one(table, column: str) -> list[int]:
    """The world sizes above 1 of the ok jobs with a finite ``column``."""
    rows = ok_rows(table, column)
    return sorted(set(int(w) for w in rows["world_size"] if int(w) > 1)) if len(rows) else []


#: a change of e between two world sizes larger than this reads as rising or falling
SERIAL_FRACTION_CHANGE = 0.05


def _serial_fraction_trends(table, rows) -> Markup:
    """Per configuration measured at two or more world sizes above 1: e at the smallest and the
    largest, and whether it rises, falls or stays about flat."""
    items, missing = [], 0
    for line in scaling_plots.scaling_lines(table):
        part = line["rows"][line["rows"]["key"].isin(set(rows["key"]))].sort_values("world_size")
        if part["world_size"].nunique() < 2:
            continue
        first, last = part.iloc[0], part.iloc[-1]
        a, b = float(first["serial_fraction"]), float(last["serial_fraction"])
        change = b - a
        apart = (has_interval(first, "serial_fraction") and has_interval(last, "serial_fraction")
                 and (float(last["serial_fraction_low"]) > float(first["serial_fraction_high"])
                      or float(first["serial_fraction_low"]) > float(last["serial_fraction_high"])))
        span = html("from {{ a }} at {{ wa }} ranks to {{ b }} at {{ wb }}", a=num(a, ".2f"), wa=first["world_size"],
                    b=num(b, ".2f"), wb=last["world_size"])
        if abs(change) <= SERIAL_FRACTION_CHANGE:
            trend = html("e stays about flat ({{ span }}): the loss behaves like serial work", span=span)
        else:
            trend = (html("e rises {{ span }}: overhead that grows with the ranks", span=span) if change > 0 else
                     html("e falls {{ span }}: the overhead does not grow with the ranks", span=span))
            both = has_interval(first, "serial_fraction") and has_interval(last, "serial_fraction")
            if both:
                trend += ("; the 95 % intervals do not overlap" if apart else
                          "; the 95 % intervals overlap, so the change is not established")
            else:
                missing += 1
        if max(a, b) > 1:
            trend += "; above 1 the job ran slower than on one rank"
        over = [int(w) for w, o in zip(part["world_size"], part["oversubscribed"]) if bool(o)]
        caveat = (f" (world size {', '.join(map(str, over))} is oversubscribed: its e measures contention for "
                  "cores as well)" if over else "")
        items.append(html("<li>{{ label }}: {{ trend }}{{ caveat }}.</li>",
                          label=line["label"] or model_name(first, table),
                          trend=trend, caveat=caveat))
    if not items:
        return Markup()
    return html('<ul class="note">{{ items | join("") }}</ul>{% if missing %}<p class="note">Where a job or its '
                "baseline ran in one launch there is no interval to tell a change of e from run-to-run noise: treat "
                "those trends as a hint.</p>{% endif %}", items=items, missing=missing)


def serial_fraction_section(ctx: ReportContext) -> Section | None:
    if ctx.summary.empty:
        return None
    rows = scaling_plots.serial_fraction_rows(ctx.summary)
    if rows.empty:
        return None
    sizes = sorted(set(int(w) for w in rows["world_size"]))
    path = None
    if len(sizes) > 1:  # at one world size above 1, a point per configuration: the summary table's column
        path = scaling_plots.serial_fraction_vs_world_size(ctx.summary, ctx.image("serial_fraction.png"))
        if path is None:
            return None
    drawn = path is not None
    what = html('<p class="what">Karp&ndash;Flatt&rsquo;s <em>experimentally determined serial fraction</em> '
                "e = (1/S &minus; 1/p) / (1 &minus; 1/p), from the measured speedup S on p ranks: the share of the "
                "one-rank work that behaves as if it could not be parallelised. 0{% if drawn %} (dotted){% endif %} "
                "is perfect linear scaling; 1{% if drawn %} (dashed){% endif %} is no speedup at all; above 1 the "
                "job ran slower than on one rank.</p>"
                '<p class="note">How to read it across world sizes: a <strong>flat</strong> e is serial work that '
                "every rank repeats (data loading, the optimizer step, Python overhead); a <strong>rising</strong> "
                "e is overhead that grows with the number of ranks, usually communication or ranks waiting for "
                "each other.{% if drawn %} Error bars are 95 % t intervals over launches, absent where a job or its "
                "baseline ran once; several configurations at one world size are spread slightly sideways."
                "{% endif %}</p>", drawn=drawn)
    if not drawn:  # one world size above 1
        not_drawn(ctx, "serial_fraction.png")
        trend = html('<p class="note">Only one world size above 1 was measured ({{ size }}): each e says how far '
                     "that size is from linear scaling, but telling serial work from overhead that grows with the "
                     "ranks needs the trend over at least two world sizes above 1. Each job&rsquo;s e, with its "
                     "95 % interval over launches, is the Summary table&rsquo;s <em>serial fraction e</em> column; "
                     "a figure is drawn where two or more world sizes above 1 show a trend.</p>", size=sizes[0])
        return Section("Serial fraction (Karp\u2013Flatt)", what + trend)
    trend = _serial_fraction_trends(ctx.summary, rows)
    return Section("Serial fraction (Karp\u2013Flatt)", what + trend + skipped_note(ctx), (path,))


# -- strategies side by side (only when more than one strategy or DDP comm hook was run) --------

def breakdown_section(ctx: ReportContext) -> Section | None:
    explicit = ""
    if not ctx.summary.empty and (ctx.summary["strategy"] != "ddp").any():
        explicit = Markup(" Strategies that combine gradients after backward or after the optimizer step (master, "
                    "ring, the explicit all-reduces) show that time as the orange <em>comm after "
                    "backward / step</em> part instead.")
    return figure_section(
        ctx, "Step time breakdown", job_plots.step_breakdown, "breakdown.png",
        Markup('<p class="what">Where each job\'s step time goes, in milliseconds: the mean time per '
               "rank and step of each phase (data, forward, backward, optimizer).</p>")
        + Markup(
        '<p class="note">DDP all-reduces gradient buckets while backward is still running, so most '
        "communication hides inside backward. The red <em>exposed comm</em> part is what it does not "
        "hide, measured as the step time with gradient sync minus the step time under DDP's "
        "<code>no_sync()</code> (both means); <em>backward compute</em> is the backward time less that. "
        "Where that difference's 95 % interval over launches includes 0, or a job ran one launch, it is "
        "drawn pale: not told apart from nothing. "
        "The black tick is the mean step of the slowest rank: it sits past the bars by the time a rank "
        "waited for the slowest one. Hatched bars are oversubscribed jobs.") + explicit + Markup("</p>"))


#: a bucket sweep of one model at one world size above 1 and at most this many caps is a table: a line of so
#: few points shows nothing its rows do not say
BUCKET_TABLE_CAPS = 3


def bucket_section(ctx: ReportContext) -> Section | None:
    if ctx.summary.empty or not job_plots.has_bucket_sweep(ctx.summary):
        return None
    groups = list(job_plots.bucket_groups(ctx.summary).values())
    if len(groups) == 1 and groups[0]["bucket_cap_mb"].nunique() <= BUCKET_TABLE_CAPS:
        not_drawn(ctx, "bucket_step_time.png")
        return Section("Step time vs gradient bucket size", html(
            '<p class="what">Mean step time (ms, slowest rank) of {{ job }} at each DDP gradient bucket size '
            "(<code>bucket_cap_mb</code>): lower is better. The 95 % interval is the mean's over launches (none "
            "for a job measured once). Small buckets start all-reducing earlier but pay a per-message cost more "
            'often.</p>', job=describe(groups[0].iloc[0], ["model", "world_size"], ctx.summary))
            + _bucket_table(groups[0]) + html(
                '<p class="note">One line of {{ n }} bucket sizes: a figure is drawn where more bucket sizes, or '
                "more models or world sizes above 1, make lines to compare.</p>",
                n=groups[0]["bucket_cap_mb"].nunique())
            + _same_buckets_note(ctx.summary))
    return figure_section(
        ctx, "Step time vs gradient bucket size", job_plots.step_time_vs_bucket, "bucket_step_time.png",
        Markup('<p class="what">Mean step time (ms, slowest rank) for each DDP gradient bucket size '
               "(<code>bucket_cap_mb</code>, log scale), one line per model and world size above 1: lower "
               "is better.</p><p class=\"note\">Error bars are the 95 % interval of the mean over launches "
               "(none for a job measured once). Small buckets start all-reducing earlier but pay a "
               "per-message cost more often.</p>") + _same_buckets_note(ctx.summary))


def _bucket_table(part) -> Markup:
    """Each bucket size's mean step, its interval over launches, DDP's buckets and the job's flags."""
    rows = []
    for _, row in part.iterrows():
        layout = row.get("bucket_layout")
        buckets = len(layout) if isinstance(layout, (list, tuple)) else DASH
        interval = (html("[{{ low }}, {{ high }}]", low=num(row["step_ms_mean_low"], ".2f"),
                         high=num(row["step_ms_mean_high"], ".2f")) if has_interval(row, "step_ms_mean") else DASH)
        rows.append([num(row["bucket_cap_mb"], "g"), buckets, num(row[STEP_MS], ".2f"), interval, flags_html(row)])
    return html_table(["bucket cap (MB)", "DDP's buckets", "step ms", "95 % interval", "flags"], rows,
                      numeric={0, 1, 2})


def _same_buckets_note(summary) -> Markup:
    """Which caps gave DDP the same buckets: the points of one setting, whatever their cap says."""
    items = []
    for part in job_plots.bucket_groups(summary).values():
        for same in bucket_settings(part):
            if len(same) > 1:
                first = same.iloc[0]
                layout = first["bucket_layout"]
                items.append(html(
                    "<li>{{ job }}: {{ caps }} gave the same {{ n }} bucket(s) ([{{ sizes }}{{ more }}] MB); their "
                    "step times differ by {{ pct }} % (mean steps)</li>",
                    job=describe(first, ["model", "world_size"], summary),
                    caps=caps_text(same["bucket_cap_mb"]), n=len(layout),
                    sizes=", ".join(f"{b / 1e6:.1f}" for b in list(layout)[:6]),
                    more=", ..." if len(layout) > 6 else "",
                    pct=num(100 * (same[STEP_MS].max() / same[STEP_MS].min() - 1), ".0f")))
    if not items:
        return Markup()
    return (Markup('<p class="note">DDP never splits a tensor, so caps below a model&rsquo;s largest tensors '
                   'can give the '
            "very same buckets. These caps did; their points are one setting measured more than once, and "
            "their spread is the noise of the measurements, not an effect of the cap:</p><ul>")
            + html("{{ items | join('') }}</ul>", items=items))


#: the memory figures earlier reports drew, which a table now gives
MEMORY_FIGURES = ("memory.png", "strategies_memory.png")
#: what each strategy keeps of the optimizer state, where strategies vary
SHARDED_STATE_NOTE = Markup(
    '<p class="note">ZeRO and FSDP shard the optimizer state, so each rank holds about 1/n of it; '
    "master-params runs the only optimizer on rank 0, so rank 0 holds all of it and the others none. "
    "Momentum SGD keeps one buffer the size of the parameters, Adam two.</p>")


def memory_overview_section(ctx: ReportContext) -> Section | None:
    """Each job's memory as a table, its strategy among its settings where strategies vary: a bar per
    job said no more (``memory.png`` and ``strategies_memory.png`` are no longer drawn: an earlier
    report's are removed)."""
    if not has_memory(ctx.summary):
        return None
    for name in MEMORY_FIGURES:
        not_drawn(ctx, name)
    memory = memory_column(ctx.summary)
    rows = ordered(ok_rows(ctx.summary, memory))
    if rows.empty:
        return None
    state = "optimizer_state_mb" in rows.columns and rows["optimizer_state_mb"].astype(float).notna().any()
    over = rows["oversubscribed"].astype(bool).any() if "oversubscribed" in rows.columns else False
    fields = line_fields(ctx.summary, but=("world_size",))
    own = memory == "rank_memory_mb"
    header = ["job", "ws", MEMORY_AXES[memory], *(["optimizer state, largest rank (MB)"] if state else []),
              *([""] if over else [])]
    table = [[describe(r, fields, ctx.summary), num(r["world_size"], ".0f"), num(r[memory], ",.0f"),
              *([num(r["optimizer_state_mb"], ".3g")] if state else []),
              *([flags_html({"oversubscribed": r["oversubscribed"]})] if over else [])]
             for _, r in rows.iterrows()]
    text = (Markup('<p class="what">') + Markup("The own memory" if own else "Peak resident memory (RSS, MB)")
            + Markup(" of each job&rsquo;s largest rank")
            + Markup(", and the optimizer state that rank holds (MB)" if state else "")
            + Markup(".</p>")
            + (OWN_MEMORY_NOTE + Markup("</p>") if own else Markup(
                '<p class="note">RSS counts everything the process keeps in memory: the Python interpreter and '
                "PyTorch&rsquo;s libraries (a few hundred MB before any model), the model, its gradients, "
                "DDP&rsquo;s gradient buckets and the optimizer state. Peak RSS is the high-water mark the "
                "operating system reports (VmHWM), the largest over ranks and launches; 1 MB = 10<sup>6</sup> "
                "bytes.</p>"))
            + (SHARDED_STATE_NOTE if strategies_vary(ctx.summary) else Markup()))
    shown = job_table(ctx, "memory", header, table, list(rows[STEP_MS]), numeric=set(range(1, 3 + bool(state))))
    return Section("Memory", text + shown
                   + skipped_note(ctx, "table"))
