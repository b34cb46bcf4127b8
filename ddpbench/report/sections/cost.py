"""The report's cost and energy section: what a sample costs at each setting (at the price given),
how long a training run takes, the energy each sample took where a counter measured it, and
why not where none did (docs/cost-and-energy.md)."""

from __future__ import annotations

from markupsafe import Markup

from ddpbench.analysis.core import COLUMNS, SAMPLES_PER_S, STEP_MS, describe, line_fields
from ddpbench.analysis.summary import MILLION
from ddpbench.report.many import job_table
from ddpbench.report.page import ReportContext, Section, figure, html, html_cell, num, throughput_format
from ddpbench.report.plots import scaling as scaling_plots
from ddpbench.report.sections.gpu import LEFT_OUT_OF_LABELS
from ddpbench.report.sections.scaling import TREND_NOTE, not_drawn, sizes_above_one
from ddpbench.show.tables import Col, build, shown


class _Jobs:
    """What the cost table's columns read besides a row: its rows (the finished jobs), the whole
    summary, the fields that tell them apart, the price, and the training run."""

    def __init__(self, table, summary, cost, run: str):
        self.table, self.summary, self.cost, self.run = table, summary, cost, run
        self.fields = [f for f in line_fields(summary) if f not in LEFT_OUT_OF_LABELS or f == "bucket_cap_mb"]

    @property
    def deadline(self) -> bool:
        return self.cost.priced and self.cost.deadline_h is not None

    def mark_missing(self, row) -> bool:
        return False  # a figure of one launch shows no [–]: the text says what the brackets hold


def _priced(jobs) -> bool:
    return jobs.cost.priced


#: the cost table, one declaration a column (:mod:`ddpbench.show.tables`); the figures SHOWN declares
#: for it (the energy's) at its end
COST = (
    Col("job", lambda r, jobs: describe(r, jobs.fields, jobs.summary), numeric=False),
    Col("ws", lambda r, jobs: num(r["world_size"], ".0f")),
    Col("devices", lambda r, jobs: num(r["devices"], ".0f")),
    Col(COLUMNS[SAMPLES_PER_S].unit, figure(SAMPLES_PER_S, throughput_format)),
    Col(lambda jobs: f"hours for {jobs.run}", figure("time_to_train_h", ".3g")),
    Col(lambda jobs: f"{jobs.cost.currency} per million samples", figure("cost_per_sample", ".3g", 1e6),
        when=_priced),
    Col(lambda jobs: f"{jobs.cost.currency} for {jobs.run}", figure("cost_to_train", ".3g"), when=_priced),
    Col(lambda jobs: f"within {jobs.cost.deadline_h:g} h",
        lambda r, jobs: {True: "yes", False: "no"}.get(r["meets_deadline"], "cannot tell"), numeric=False,
        when=lambda jobs: jobs.deadline),
    *shown("cost", html_cell),
)


def cost_section(ctx: ReportContext) -> Section | None:
    summary = ctx.summary
    if summary.empty or "cost_per_sample" not in summary:
        return None
    ok = summary[(summary["status"] == "ok") & summary[STEP_MS].notna()]
    if ok.empty:
        return None
    cost = ctx.folder.cost
    energy = "energy_j_per_sample" in ok and ok["energy_j_per_sample"].notna().any()
    samples = cost.samples or MILLION
    run = f"{samples:,} samples" if cost.samples else "a million samples"
    jobs = _Jobs(ok, summary, cost, run)
    header, rows, numeric = build(COST, [r for _, r in ok.iterrows()], jobs)
    text = html('<p class="what">What a sample costs at each setting: the price of the job&rsquo;s devices and '
                "nodes for an hour, times its mean step, over the samples of a step; and how long a training run "
                "of {{ run }} takes at its throughput. Each in brackets: the 95 % interval over launches (the mean "
                "step&rsquo;s).</p>", run=run)
    if cost.priced:
        text += html('<p class="note">Price: {{ price }}. A device is a GPU; on CPU, a rank (its '
                     "<code>threads_per_rank</code> cores). A price is not a measurement: "
                     "<code>python -m ddpbench report DIR --price-per-device-hour X</code> gives the costs at "
                     "another from the same stored steps.</p>", price=cost.described())
    else:
        text += Markup('<p class="note">No price was given, so no cost: give one with <code>[cost] '
                       "price_per_device_hour</code> in the experiment, or <code>--price-per-device-hour X</code> to "
                       "<code>sweep</code> or <code>report</code> (docs/cost-and-energy.md).</p>")
    text += _energy_note(ok, energy)
    figures = [("time_to_train_h", 1.0, f"hours to train {run}", "Time to train vs world size", "time-to-train.png")]
    if cost.priced:
        figures.insert(0, ("cost_per_sample", 1e6, f"cost of a million samples ({cost.currency})",
                           "Cost per sample vs world size", "cost.png"))
    if energy:
        figures.append(("energy_j_per_sample", 1.0, "energy per sample (J)", "Energy per sample vs world size",
                        "energy.png"))
    images = []
    for column, scale, ylabel, title, name in figures:
        if len(sizes_above_one(summary, column)) >= 2:
            images.append(scaling_plots.per_sample_vs_world_size(summary, ctx.image(name), column, scale, ylabel,
                                                                 title))
        else:  # a point or two per configuration: the table's column says all the figure would
            not_drawn(ctx, name)
    if len(images) < len(figures) and len(scaling_plots.world_sizes(summary)) >= 2:
        text += TREND_NOTE
    images = [path for path in images if path is not None]
    table = job_table(ctx, "cost", header, rows, list(ok[STEP_MS]), numeric=numeric)
    return Section("Cost and energy", text + table, tuple(images))


def _energy_note(ok, measured: bool) -> Markup:
    """How the energy was measured, or in one line why it was not (each distinct reason once)."""
    methods = sorted(set(ok["energy_method"].dropna())) if "energy_method" in ok else []
    notes = sorted(set(ok["energy_note"].dropna())) if "energy_note" in ok else []
    if measured:
        return html('<p class="note">Energy: {{ methods }}, over the timed steps only; a counter ranks share (a '
                    "host&rsquo;s RAPL package) is counted once a launch.{% if notes %} Not for every job: "
                    "{{ notes }}.{% endif %}</p>", methods="; ".join(methods), notes="; ".join(notes))
    if notes:
        return html('<p class="note">Energy: {{ notes }}.</p>', notes="; ".join(notes))
    return Markup('<p class="note">Energy: these results predate the energy figures.</p>')
