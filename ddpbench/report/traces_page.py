"""A trace folder's answers as files (:func:`write_trace_report`): the tables as CSV (:data:`CSV_FILES`),
one figure per job and ``index.html``: per job, the answer (where the step went, what to change,
how sure), the figure, each rank's device time, the collectives and the bucket layout DDP ran.

Every name and number from the traces enters the page as text (autoescaped): a trace from anyone
opens as an inert page.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
from markupsafe import Markup

from ddpbench.files.sanitize import csv_text
from ddpbench.files.sidefiles import replace_file
from ddpbench.report.page import DASH, INDEX_FILE, Section, html, html_table, left_out_section, num, render_page
from ddpbench.report.plots.common import leaving_out
from ddpbench.report.plots.traces import rank_breakdown
from ddpbench.show.answers import clock_words
from ddpbench.traces.answers import CONFIDENCE, MIN_STEPS

#: the tables beside the page, by the TraceJob attribute they hold
CSV_FILES = {"budget": "budget.csv", "steps": "steps.csv", "ranks": "ranks.csv", "collectives": "collectives.csv",
             "sizes": "collective_sizes.csv", "buckets": "buckets.csv", "kernels": "kernels.csv"}
FIGURE = "breakdown-{n}.png"
#: the comparison with the traces before a change (``traces --before``): the budget's lines (ms) and
#: the kernels (µs a step, by their whole names), each column named with its unit
COMPARE_FILE, COMPARE_KERNELS_FILE = "compare.csv", "compare_kernels.csv"
#: every name the report writes in its folder (its claim's)
WRITES = (INDEX_FILE, *CSV_FILES.values(), COMPARE_FILE, COMPARE_KERNELS_FILE, FIGURE.format(n="*"))
#: the most rows a per-rank table shows on the page (every row is in its CSV)
RANK_ROWS = 60


def write_trace_report(jobs: list, source: Path, out_dir: Path, comparisons: list = ()) -> Path:
    """Write the CSVs, figures and page for ``jobs`` (:class:`ddpbench.traces.folder.TraceJob`) read
    from ``source`` into ``out_dir``, with ``comparisons`` (:func:`ddpbench.traces.compare.paired`)
    against the traces before a change; the page's path."""
    out_dir = Path(out_dir)
    compared = [c for c in comparisons if "itself" not in c]
    parts = ((COMPARE_FILE, "lines", "line", "ms"), (COMPARE_KERNELS_FILE, "kernels", "kernel", "us"))
    for name, part, what, unit in parts:
        if compared:
            replace_file(out_dir / name, csv_text(pd.concat([_compare_csv(c, part, what, unit) for c in compared],
                                                            ignore_index=True)))
        else:
            (out_dir / name).unlink(missing_ok=True)  # an earlier run's, of another comparison
    for attr, name in CSV_FILES.items():
        frames = [getattr(job, attr).assign(job=job.name) for job in jobs] if attr != "budget" else \
            [job.budget.assign(job=job.name) for job in jobs]
        table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        replace_file(out_dir / name, csv_text(table))
    sections = [_overview(jobs, source)]
    with leaving_out() as left_out:
        for n, job in enumerate(jobs, start=1):
            picture = rank_breakdown(job.steps, out_dir / FIGURE.format(n=n), job.name)
            sections += _job_sections(job, picture)
    sections += [_comparison_section(c) for c in comparisons]
    if left_out:
        sections.append(left_out_section(left_out))
    page = render_page(f"ddpbench traces: {source}", sections, out_dir)
    return replace_file(out_dir / INDEX_FILE, page)


def _overview(jobs: list, source: Path) -> Section:
    return Section("Traces", html(
        '<p class="what">Read from <code>{{ source }}</code>: {{ n }} job(s), {{ files }} trace file(s). Every table '
        "is in a CSV beside this page ({{ csvs }}).</p>"
        '<p class="note">How sure: a trace folder is one run. Each figure is the median over its steps of the '
        "ranks' mean, with a distribution-free {{ level }} interval for that median (at least {{ min }} steps); it "
        "says how steady this run's steps were, not how a rerun would differ. docs/traces.md defines every "
        "line.</p>", source=str(source), n=len(jobs), files=sum(len(j.files) for j in jobs),
        csvs=", ".join(CSV_FILES.values()), level=f"{100 * CONFIDENCE:.0f} %", min=MIN_STEPS))


def _interval(row) -> Markup:
    if row["untold"]:
        return html("{{ why }}", why=row["untold"])
    if not math.isfinite(row["low_ms"]):
        return num(row["median_ms"], ".2f")
    return html("{{ m }} [{{ lo }}, {{ hi }}]", m=f"{row['median_ms']:.2f}", lo=f"{row['low_ms']:.2f}",
                hi=f"{row['high_ms']:.2f}")


def _job_sections(job, picture) -> list[Section]:
    steps = job.steps["step"].nunique() if len(job.steps) else 0
    head = html('<p class="what"><strong>{{ name }}</strong>: {{ ranks }} of {{ world }} ranks traced, '
                "{{ backend }} on {{ device }}, {{ steps }} steps each.</p>", name=job.name, ranks=len(job.ranks),
                world=job.world_size, backend=job.backend or "an unnamed backend", device=job.device.upper(),
                steps=steps)
    if job.advice:
        head += _advice_html(job.advice)
    elif steps >= MIN_STEPS:
        head += Markup('<p class="what">Nothing to change stands out: no line of the budget is past its threshold '
                       "over its whole interval.</p>")
    for note in job.notes:
        head += html('<p class="note">{{ note }}.</p>', note=note[:1].upper() + note[1:])
    head += html('<p class="note">Clocks: {{ words }}.</p>', words=clock_words(job))
    rows = [[r["label"], _interval(r), DASH if r["untold"] else num(100 * r["share"], ".1f", " %")]
            for _, r in job.budget.iterrows()]
    head += html_table(["line", "ms per step (median [95 % interval])", "share of the step"], rows, numeric=(1, 2))
    sections = [Section(f"{job.name}: where each step went", head)]
    if picture is not None:
        sections.append(Section(f"{job.name}: by rank", Markup(""), images=(picture,)))
    sections.append(Section(f"{job.name}: device time per rank", _ranks_html(job)))
    sections.append(Section(f"{job.name}: collectives", _collectives_html(job)))
    return sections


def _advice_html(advice: list) -> Markup:
    if not advice[0]["sure"]:  # too few steps for an interval: the likeliest alone, no call
        (a,) = advice
        return html('<p class="what">Cannot tell: the likeliest is <strong>{{ label }}</strong>, {{ ms }} ms a step '
                    "({{ share }} of it, by its median: too few steps for an interval). {{ change }}.</p>",
                    label=a["label"], ms=f"{a['median_ms']:.2f}", share=f"{100 * a['share']:.1f} %",
                    change=a["change"][:1].upper() + a["change"][1:])
    items = [html("<li><strong>{{ label }}</strong>: {{ ms }} ms a step ({{ share }} of it; {{ level }} interval "
                  "{{ lo }} to {{ hi }} ms). {{ change }}.</li>", label=a["label"], ms=f"{a['median_ms']:.2f}",
                  share=f"{100 * a['share']:.1f} %", level=f"{100 * CONFIDENCE:.0f} %", lo=f"{a['low_ms']:.2f}",
                  hi=f"{a['high_ms']:.2f}", change=a["change"][:1].upper() + a["change"][1:]) for a in advice]
    return Markup('<p class="what">What to change, largest first:</p><ol>') + Markup("").join(items) + Markup("</ol>")


def _ranks_html(job) -> Markup:
    table = job.ranks.sort_values("rank")
    if job.device != "gpu":
        rows = [[int(r["rank"]), r["host"], _offset(r), num(r["clock_skew_us"] / 1e3, ".3f")]
                for _, r in table.head(RANK_ROWS).iterrows()]
        return html('<p class="note">A CPU-only trace: no GPU work, so the device breakdown Holistic Trace Analysis '
                    "defines does not apply. Each rank's host and clock:</p>") + html_table(
            ["rank", "host", "clock offset (ms)", "skew (ms)"], rows, numeric=(2, 3))
    more = len(table) - RANK_ROWS
    shown = table.head(RANK_ROWS)
    rows = []
    for _, r in shown.iterrows():
        span = r["span_us"]
        rows.append([int(r["rank"]), num(100 * r["compute_us"] / span, ".2f", " %"),
                     num(100 * r["non_compute_us"] / span, ".2f", " %"), num(100 * r["idle_us"] / span, ".2f", " %"),
                     num(100 * r["overlap_us"] / r["comm_us"] if r["comm_us"] else math.nan, ".2f", " %"),
                     _offset(r), num(r["clock_skew_us"] / 1e3, ".3f")])
    text = html('<p class="note">As Holistic Trace Analysis defines them (docs/traces.md): of the span from the '
                "first to the last GPU work launched before the last step began, the time compute kernels ran, the "
                "time only other work ran, the time none ran; and the share of communication time that compute "
                "overlapped."
                "{% if more > 0 %} The first {{ shown }} ranks; ranks.csv holds all {{ total }}.{% endif %}</p>",
                more=more, shown=RANK_ROWS, total=len(table))
    return text + html_table(["rank", "compute", "non-compute", "idle", "comm overlapped", "clock offset (ms)",
                              "skew (ms)"], rows, numeric=range(1, 7))


def _offset(rank) -> Markup:
    """A rank's clock offset (ms), where it lies beyond the rank's own skew; else said to be within it."""
    offset, skew = rank["clock_offset_us"], rank["clock_skew_us"]
    if offset and math.isfinite(skew) and abs(offset) <= skew:
        return html("within the skew")
    return num(offset / 1e3, ".3f")


def _collectives_html(job) -> Markup:
    if job.sizes.empty:
        return Markup('<p class="note">No collective in these traces.</p>')
    rows = [[r["op"], num(r["bytes"] / 2**20, ".2f"), r["dtype"], r["group"], int(r["group_size"]), int(r["count"]),
             num(r["time_us"], ".1f"), num(r["algbw_gbps"], ".2f"), num(r["busbw_gbps"], ".2f")]
            for _, r in job.sizes.iterrows()]
    text = html('<p class="note">Each collective as it ran: its time is the median over its runs of the shortest '
                "rank's (the rank that arrived last waited least); algbw and busbw as nccl-tests defines them "
                "(GB/s).</p>")
    text += html_table(["op", "MB", "dtype", "group", "ranks", "runs", "time (µs)", "algbw", "busbw"], rows,
                       numeric=(1, 4, 5, 6, 7, 8))
    if not job.buckets.empty:
        layouts = job.buckets["mb"].map(tuple).value_counts()
        text += html('<p class="what">The all-reduces of a step on rank {{ rank }} (DDP\'s buckets as they ran), '
                     "in MB: {% for layout, n in layouts %}<br>{{ n }} step(s): {{ layout }}{% endfor %}</p>",
                     rank=int(job.collectives["rank"].min()),
                     layouts=[(_layout(layout), n) for layout, n in layouts.items()])
    return text


def _layout(sizes: tuple) -> str:
    """A step's all-reduces in MB, in order; a size the trace does not give said so, never as NaN."""
    known = [v for v in sizes if math.isfinite(v)]
    if not known:
        return f"{len(sizes)} all-reduce(s), sizes not in the trace"
    return ", ".join(f"{v:g}" if math.isfinite(v) else "size not in the trace" for v in sizes)


def _compare_csv(c: dict, part: str, what: str, unit: str) -> pd.DataFrame:
    """One comparison's lines or kernels as its CSV holds them: whole names (and, for a kernel, the name
    the page and the console show), each figure's column named with its unit."""
    table = c[part]
    out = pd.DataFrame({"job": c["after"], "before_job": c["before"], what: table["what"],
                        "label" if part == "lines" else "shown": table["label"]})
    for column, name in (("before", "before"), ("after", "after"), ("change", "shift"), ("low", "low"),
                         ("high", "high")):
        out[f"{name}_{unit}"] = table[column]
    out["verdict"] = table["verdict"]
    return out


def _comparison_section(c: dict) -> Section:
    from ddpbench.traces.compare import ANYWAY, DIFFERS

    if "itself" in c:
        return Section(f"{c['after']}: before and after", html('<p class="note">{{ why }}.</p>',
                                                               why=c["itself"][:1].upper() + c["itself"][1:]))

    def rows(table, kernel=False):
        return [[html('<span title="{{ full }}">{{ shown }}</span>', full=r["what"], shown=r["label"]) if kernel
                 else r["label"], num(r["before"], ".3f"), num(r["after"], ".3f"), num(r["change"], "+.3f"),
                 html("{{ lo }} to {{ hi }}", lo=f"{r['low']:+.3f}", hi=f"{r['high']:+.3f}")
                 if math.isfinite(r["low"]) else "-", r["verdict"]] for _, r in table.iterrows()]

    def header(unit):
        return ["", f"before ({unit})", f"after ({unit})", f"shift ({unit})",
                f"{100 * CONFIDENCE:.0f} % interval ({unit})", "verdict"]

    kernels = c["kernels"]
    moved = kernels[kernels["verdict"] == DIFFERS] if len(kernels) else kernels
    text = html('<p class="note"><strong>Compared although these are not runs of one job</strong> ({{ flag }}): '
                "{{ why }}. Their differences are the jobs' as much as the change's.</p>", flag=ANYWAY,
                why="; ".join(c["overridden"])) if c.get("overridden") else Markup("")
    text += html('<p class="what">{{ after }} against the traces before the change ({{ before }}): each line is the '
                "median over steps (the ranks' mean); the shift is the median of every after-minus-before "
                "difference of one step of each, with its distribution-free interval. A line <em>differs</em> only "
                "where the whole interval excludes 0.</p><p class=\"note\">The steps are samples of each run: the "
                "interval says whether the two runs' steps differ, not whether a rerun would. Two runs at two times "
                "are two machines: a line no change could move that differs says the machine moved.</p>",
                after=c["after"], before=c["before"])
    text += html_table(header("ms"), rows(c["lines"]), numeric=(1, 2, 3, 4))
    if len(kernels):
        text += html('<p class="what">GPU kernels (time a step, µs), of the {{ n }} that ran longest: {{ moved }} '
                     "moved; every one compared is in {{ csv }}, by its whole name (here shortened: hover for "
                     "it).</p>", n=len(kernels), moved=len(moved), csv=COMPARE_KERNELS_FILE)
        if len(moved):
            text += html_table(header("µs"), rows(moved, kernel=True), numeric=(1, 2, 3, 4))
    return Section(f"{c['after']}: before and after", text)
