"""The HTML report: stored results in, ``index.html`` and PNG figures out.

The report reads the results folder only (:func:`ddpbench.results.load_tables`, then
:func:`ddpbench.analysis.summarize`, and :func:`ddpbench.results.load_collectives` for the
collective micro-benchmarks); it never runs anything. It is a list of sections:

    @section
    def my_section(ctx: ReportContext) -> Section | None: ...

A section function gets the :class:`ReportContext` (summary table, the stored tables, the
output folder) and returns a :class:`Section` -- a title, an HTML fragment, and the PNG files
it wrote into ``ctx.out_dir`` -- or None when it does not apply to these results. Sections
appear in the order they were registered. Every string that comes from an experiment file or
a results file is passed through :func:`esc` (``html.escape``) before it enters the page.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any, Callable, Sequence

from ddpbench.results import STATUSES

INDEX_FILE = "index.html"


@dataclass(frozen=True)
class Section:
    """One part of the page. ``html`` is trusted markup: escape what goes into it."""

    title: str
    html: str
    images: tuple[Path, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class ReportContext:
    summary: Any  # DataFrame, one row per job (analysis.summarize); empty when nothing ran
    steps: Any
    runs: Any
    ranks: Any
    sweeps: Any
    results_dir: Path
    out_dir: Path
    #: one row per (launch, op, placement, size) of the collective micro-benchmarks
    #: (results.load_collectives); an empty DataFrame when the folder holds none
    collectives: Any = None
    #: what loading skipped: one line per damaged record ("results.jsonl:8: damaged record skipped ...")
    damaged: list = field(default_factory=list)
    #: what several sections derive from the same data (e.g. the cost model), computed once per report
    derived: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        if self.collectives is None:
            import pandas as pd

            object.__setattr__(self, "collectives", pd.DataFrame())

    def image(self, name: str) -> Path:
        """Where a section writes its PNG: a stable name in the output folder."""
        return self.out_dir / name


SectionFn = Callable[[ReportContext], "Section | None"]
SECTIONS: list[SectionFn] = []


def section(fn: SectionFn) -> SectionFn:
    """Register ``fn`` as the next section of the report."""
    SECTIONS.append(fn)
    return fn


def write_report(results_dir: str | Path, out_dir: str | Path | None = None,
                 sections: Sequence[SectionFn] | None = None) -> Path:
    """Write ``index.html`` (and its PNGs) for a results folder; return the path of index.html.

    ``out_dir`` defaults to ``results_dir``; ``sections`` to every registered section.
    """
    import warnings

    from ddpbench.analysis import summarize
    from ddpbench.results import DamagedRecord, load_collectives, load_tables

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
    summary = summarize(steps, runs, ranks)
    out_dir.mkdir(parents=True, exist_ok=True)
    ctx = ReportContext(summary, steps, runs, ranks, sweeps, results_dir, out_dir, collectives, damaged=damaged)
    rendered = [s for s in (fn(ctx) for fn in (SECTIONS if sections is None else sections)) if s is not None]
    index = out_dir / INDEX_FILE
    tmp = index.with_suffix(".html.tmp")
    tmp.write_text(render_page(page_title(ctx), rendered, out_dir), encoding="utf-8")
    os.replace(tmp, index)
    return index


# ---------------------------------------------------------------------------------------------
# page
# ---------------------------------------------------------------------------------------------

CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; margin: 0 auto;
       max-width: 1200px; padding: 1em 2em 4em; }
h1 { margin-bottom: .2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; padding-bottom: .2em; }
nav a { margin-right: 1.2em; }
p.what { font-size: 1.05em; } p.note { color: #555; font-size: .92em; }
table { border-collapse: collapse; font-size: .88em; margin: .6em 0; }
th, td { border: 1px solid #ddd; padding: .25em .55em; vertical-align: top; }
th { background: #f3f3f3; text-align: left; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr:nth-child(even) td { background: #fafafa; }
tr.bad td { background: #fdecea; }
tr.best td { background: #e8f5e9; }
.status-ok { color: #1a7f37; } .status-failed, .status-timed_out { color: #c62828; font-weight: 600; }
.status-skipped { color: #a36b00; }
.flag { display: inline-block; font-size: .8em; padding: 0 .4em; border-radius: .6em; margin: 0 .15em;
        background: #fff3cd; border: 1px solid #e0c36a; }
.flag.over { background: #e8eaf6; border-color: #9fa8da; }
.flag.straggler { background: #fde2d6; border-color: #e09f7d; }
.ci { color: #666; font-size: .85em; white-space: nowrap; } .nowrap { white-space: nowrap; }
div.jobs td:first-child { white-space: nowrap; }
code.err { white-space: pre-wrap; word-break: break-word; color: #8b1a1a; display: block; min-width: 22em; max-width: 36em; }
img { max-width: 100%; height: auto; display: block; margin: .8em 0; }
td.wrong { color: #c62828; font-weight: 700; background: #fdecea !important; }
details { margin: .4em 0; } details > summary { cursor: pointer; font-weight: 600; padding: .2em 0; }
details .wrong-note { color: #c62828; font-weight: 600; }
dl.defs dt { font-weight: 600; float: left; clear: left; width: 11em; } dl.defs dd { margin-left: 11.5em; }
"""


def esc(value: Any) -> str:
    """Any value as HTML-safe text (None and NaN as a dash)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "&ndash;"
    return escape(str(value), quote=True)


def page_title(ctx: ReportContext) -> str:
    names = experiment_names(ctx.sweeps)
    return "ddpbench report: " + (", ".join(names) if names else ctx.results_dir.name)


def render_page(title: str, sections: Sequence[Section], out_dir: Path) -> str:
    ids = [f"s{number}-{_slug(s.title)}" for number, s in enumerate(sections, start=1)]
    nav = " ".join(f'<a href="#{i}">{esc(s.title)}</a>' for i, s in zip(ids, sections))
    body = []
    for anchor, part in zip(ids, sections):
        images = "".join(f'<img src="{esc(_relative(p, out_dir))}" alt="{esc(part.title)}">' for p in part.images)
        body.append(f'<section id="{anchor}">\n<h2>{esc(part.title)}</h2>\n{part.html}\n{images}\n</section>')
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{esc(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
            f"<h1>{esc(title)}</h1>\n<nav>{nav}</nav>\n" + "\n".join(body) + "\n</body>\n</html>\n")


def _relative(path: Path, out_dir: Path) -> str:
    return Path(os.path.relpath(Path(path), out_dir)).as_posix()


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def html_table(header: Sequence[str], rows: Sequence[Sequence[str]], row_classes=None, numeric=()) -> str:
    """A table from already-escaped cells; ``numeric`` lists column indexes to right-align."""
    head = "".join(f"<th>{h}</th>" for h in header)
    lines = []
    for index, row in enumerate(rows):
        cls = f' class="{row_classes[index]}"' if row_classes and row_classes[index] else ""
        cells = "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row))
        lines.append(f"<tr{cls}>{cells}</tr>")
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(lines) + "\n</tbody>\n</table>"


def num(value: Any, fmt: str = ".1f", suffix: str = "") -> str:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return esc(value)
    return "&ndash;" if math.isnan(value) else esc(format(value, fmt) + suffix)


def experiment_names(sweeps) -> list[str]:
    if sweeps is None or sweeps.empty or "experiment" not in sweeps.columns:
        return []
    return [str(n) for n in dict.fromkeys(sweeps["experiment"].dropna())]


def flags_html(row) -> str:
    parts = []
    if bool(row.get("oversubscribed")):
        parts.append('<span class="flag over" title="more busy threads than cores">oversubscribed</span>')
    if bool(row.get("noisy")):
        parts.append('<span class="flag" title="IQR / median above 10 %">noisy</span>')
    straggler = straggler_text(row)
    if straggler:
        parts.append('<span class="flag straggler" title="a rank whose own compute time (without waiting for the '
                     "others) was more than 10 % above the other ranks' median in most steps; the figure is the "
                     f'largest such excess">{esc(straggler)}</span>')
    return "".join(parts)


def straggler_text(row) -> str:
    """``straggler: rank 1 +14 %`` (``ranks 1, 3 up to +14 %``), or "" when no rank straggles."""
    ranks = row.get("straggler_ranks")
    if not isinstance(ranks, (list, tuple)) and not hasattr(ranks, "tolist"):
        return ""
    ranks = [int(r) for r in (ranks.tolist() if hasattr(ranks, "tolist") else ranks)]
    if not ranks:
        return ""
    pct = row.get("straggler_pct")
    pct = float(pct) if isinstance(pct, (int, float)) else math.nan
    amount = "" if math.isnan(pct) else format(pct, "+.0f") + " %"
    if len(ranks) == 1:
        return f"straggler: rank {ranks[0]}" + (f" {amount}" if amount else "")
    return f"straggler: ranks {', '.join(map(str, ranks))}" + (f" up to {amount}" if amount else "")


def has_interval(row, column: str) -> bool:
    low, high = row.get(f"{column}_low"), row.get(f"{column}_high")
    try:
        return math.isfinite(float(low)) and math.isfinite(float(high))
    except (TypeError, ValueError):
        return False


def throughput_format(value) -> str:
    """Figures to show a throughput (and its interval) with: about four significant digits."""
    try:
        value = abs(float(value))
    except (TypeError, ValueError):
        return ".1f"
    return ".0f" if value >= 100 else (".1f" if value >= 10 else ".2f")


def with_interval(row, column: str, fmt: str, scale: float = 1.0, mark_missing: bool = True) -> str:
    """``value [low, high]`` with the job's 95 % bootstrap interval; ``value [–]`` when it has
    none (one launch) and ``mark_missing``; a dash when the value itself is missing."""
    try:
        value = float(row.get(column))
    except (TypeError, ValueError):
        value = math.nan
    if math.isnan(value):
        return "&ndash;"
    text = num(value * scale, fmt)
    if has_interval(row, column):
        low, high = float(row[f"{column}_low"]) * scale, float(row[f"{column}_high"]) * scale
        return f'{text} <span class="ci">[{num(low, fmt)}, {num(high, fmt)}]</span>'
    if mark_missing:
        return f'{text} <span class="ci" title="one launch: no interval">[&ndash;]</span>'
    return text


def any_interval(table) -> bool:
    """Whether some ok job has a throughput interval (ran in more than one launch)."""
    if table.empty or "samples_per_s_low" not in table.columns:
        return False
    ok = table[table["status"] == "ok"]
    return bool(ok["samples_per_s_low"].astype(float).notna().any())


# ---------------------------------------------------------------------------------------------
# sections, in page order
# ---------------------------------------------------------------------------------------------

ENV_ROWS = (
    ("experiment", "experiment"), ("sweep started (UTC)", "utc"), ("host", "hostname"),
    ("CPU", "cpu_model"), ("cores usable / logical / physical", "cores"), ("memory (GB)", "memory_gb"),
    ("GPUs", "gpus"), ("torch", "torch"), ("python", "python"), ("platform", "platform"),
    ("ddpbench", "ddpbench_version"), ("git commit", "git"), ("sweep id", "sweep_id"),
)


def _env_value(env: dict, name: str) -> str:
    if name == "cores":
        return " / ".join(esc(env.get(k)) for k in ("cores_usable", "cores_logical", "cores_physical"))
    if name == "gpus":
        gpus = env.get("gpus")
        return esc(", ".join(map(str, gpus))) if isinstance(gpus, list) and gpus else "none"
    if name == "torch":
        extra = [f"{label} {env[key]}" for label, key in (("CUDA", "torch_cuda"), ("NCCL", "nccl_version"))
                 if env.get(key)]
        return esc(env.get("torch_version")) + (esc(f" ({', '.join(extra)})") if extra else "")
    if name == "git":
        commit = env.get("git_commit")
        if not commit or (isinstance(commit, float) and math.isnan(commit)):
            return "unknown (not run from a git checkout)"
        dirty = env.get("git_dirty")
        state = " <strong>dirty</strong> (uncommitted changes)" if dirty is True else (" clean" if dirty is False else "")
        return f"<code>{esc(commit)}</code>{state}"
    return esc(env.get(name))


def _collectives_counts(coll) -> str:
    """One sentence on the collective micro-benchmarks' launches, or "" when there are none."""
    if coll is None or coll.empty or "key" not in coll.columns:
        return ""
    launches = coll.drop_duplicates("key")
    by_status = launches["status"].value_counts()
    known = [s for s in STATUSES if by_status.get(s, 0)] + [s for s in by_status.index if s not in STATUSES]
    listed = ", ".join(f'<span class="status-{esc(s)}">{int(by_status[s])} {esc(s)}</span>' for s in known)
    rows = coll[coll["op"].notna()] if "op" in coll.columns else coll.iloc[0:0]
    what = ""
    if len(rows):
        sizes = ", ".join(esc(w) for w in sorted(set(int(w) for w in rows["world_size"])))
        what = (f": {len(rows)} measurements of {rows['op'].nunique()} op(s) at world size(s) {sizes}")
    return f'<p class="what">Collective micro-benchmarks: {len(launches)} launch(es) ({listed}){what}.</p>'


def _wrong_measurements(coll) -> int:
    if coll is None or coll.empty or "wrong" not in coll.columns:
        return 0
    return int((coll["wrong"].fillna(0).astype(float) > 0).sum())


@section
def header_section(ctx: ReportContext) -> Section:
    summary = ctx.summary
    sweeps = ctx.sweeps.to_dict("records") if ctx.sweeps is not None and len(ctx.sweeps) else []
    collectives = _collectives_counts(ctx.collectives)
    if summary.empty:
        counts = collectives or "<p class=\"what\">No jobs are recorded in these results yet.</p>"
    else:
        by_status = summary["status"].value_counts()
        known = [s for s in STATUSES if by_status.get(s, 0)] + [s for s in by_status.index if s not in STATUSES]
        listed = ", ".join(f'<span class="status-{esc(s)}">{int(by_status[s])} {esc(s)}</span>' for s in known)
        launches = len(ctx.runs)
        wall = float(ctx.runs["wall_s"].fillna(0).sum()) if "wall_s" in ctx.runs.columns else math.nan
        counts = (f'<p class="what">{len(summary)} jobs ({launches} launches, {num(wall, ".0f")} s of launch '
                  f"wall time): {listed}.</p>") + collectives
    notes = []
    if ctx.damaged:
        notes.append(f'<strong class="status-failed">{len(ctx.damaged)} damaged record(s) skipped</strong> '
                     "(a write cut short, e.g. by a crash; `--resume` measures what they held again): "
                     + "; ".join(esc(line) for line in ctx.damaged))
    if not summary.empty and summary["oversubscribed"].astype(bool).any():
        notes.append("Some jobs were <strong>oversubscribed</strong> (more busy threads than cores): their "
                     "times measure contention for cores, not scaling. They are marked in the table and drawn "
                     "with hollow markers.")
    if not summary.empty and summary["noisy"].astype(bool).any():
        notes.append("Some jobs are <strong>noisy</strong> (step time IQR above 10 % of the median): compare "
                     "them with care. They carry a grey ring in the plots.")
    wrong = _wrong_measurements(ctx.collectives)
    if wrong:
        notes.append(f'<strong class="status-failed">{wrong} collective measurement(s) returned wrong '
                     "elements</strong> (the check after the timed iterations): see the red cells of the "
                     "nccl-tests table.")
    if sweeps:
        header = ["", *(f"sweep {i}" for i in range(1, len(sweeps) + 1))] if len(sweeps) > 1 else ["", "value"]
        rows = [[esc(label), *(_env_value(env, name) for env in sweeps)] for label, name in ENV_ROWS]
        env_html = "<h3>Environment</h3>\n" + html_table(header, rows)
    else:
        env_html = '<p class="note">No environment block is stored with these results.</p>'
    notes_html = "".join(f'<p class="note">{n}</p>' for n in notes)
    where = f'<p class="note">Results folder: <code>{esc(ctx.results_dir)}</code></p>'
    return Section("Experiment", counts + notes_html + where + env_html)


@section
def summary_section(ctx: ReportContext) -> Section | None:
    from ddpbench import plots

    table = ctx.summary
    if table.empty:
        return None
    extra = plots.line_fields(table)
    extra = [f for f in extra if f != "bucket_cap_mb"]
    intervals = any_interval(table)
    rows, classes = [], []
    header = ["job", "world size", "bucket (MB)", "status", "step (ms) median &plusmn; IQR",
              "samples/s" + (' <span class="ci">[95 % CI]</span>' if intervals else ""), "speedup (&times;)",
              "efficiency (%)", "serial fraction e", "exposed comm (ms, % of step)", "DDP comm (ms)",
              "overlap (%)", "flags", "error"]
    errors = bool((table["status"] != "ok").any())  # no error column when every job finished
    if not errors:
        header = header[:-1]
    for _, r in plots.ordered(table).iterrows():
        ok = r["status"] == "ok"
        step = (f'<span class="nowrap">{num(r["step_ms_median"], ".2f")} &plusmn; {num(r["step_ms_iqr"], ".2f")}'
                "</span>" if ok else "&ndash;")
        error = f'<code class="err">{esc(r["error"])}</code>' if not ok else ""
        share = r.get("exposed_comm_share")
        exposed = num(r["exposed_comm_ms"], ".2f")
        if isinstance(share, (int, float)) and math.isfinite(share):
            exposed += f' <span class="ci">({num(100 * share, ".0f")} %)</span>'
        mark = intervals and ok
        rows.append([esc(plots.describe(r, extra, table)), esc(r["world_size"]), num(r["bucket_cap_mb"], "g"),
                     f'<span class="status-{esc(r["status"])}">{esc(r["status"])}</span>', step,
                     with_interval(r, "samples_per_s", throughput_format(r["samples_per_s"]), mark_missing=mark),
                     with_interval(r, "speedup", ".2f", mark_missing=mark),
                     with_interval(r, "efficiency", ".0f", 100.0, mark_missing=mark),
                     with_interval(r, "serial_fraction", ".2f", mark_missing=mark),
                     exposed, num(r["ddp_comm_ms"], ".2f"), num(r["overlap_pct"], ".0f"), flags_html(r),
                     *([error] if errors else [])])
        classes.append("" if ok else "bad")
    defs = (
        ("step", "wall time of one training step on the slowest rank; median and inter-quartile range over "
                 "measured steps (warmup excluded)"),
        ("samples/s", "global throughput: samples of all ranks per second, the global batch over the mean "
                      "step time (total samples over total time, so costs paid every few steps count)"),
        ("[low, high]", "95 % confidence interval: a percentile bootstrap over launches (each launch&rsquo;s "
                        "mean step is one sample; steps within a launch are not independent). "
                        "[&ndash;] means the job, or its world-size-1 baseline, ran in one launch: set "
                        "<code>repeats</code> &ge; 3 in the experiment for intervals"),
        ("speedup", "throughput relative to the world-size-1 job with the same model and batch settings"),
        ("efficiency", "speedup &divide; world size; 100 % is linear scaling"),
        ("serial fraction e", "Karp&ndash;Flatt&rsquo;s experimentally determined serial fraction "
                              "e = (1/S &minus; 1/p) / (1 &minus; 1/p) for speedup S on p ranks: 0 is perfect "
                              "scaling, 1 no speedup at all, above 1 slower than one rank; undefined at world "
                              "size 1. Constant across world sizes: work that does not parallelise; rising: "
                              "overhead that grows with the ranks (communication, waiting)"),
        ("exposed comm", "mean step time with gradient sync minus mean step time under DDP's no_sync(): the "
                         "communication the backward pass did not hide (can be slightly negative from noise); "
                         "in brackets its share of the mean step"),
        ("DDP comm", "DDP's own measure of its backward all-reduce time per step"),
        ("overlap", "share of DDP comm time that ran while backward was still computing"),
        ("flags", "<em>oversubscribed</em>: more busy threads than cores; <em>noisy</em>: step time IQR above "
                  "10 % of the median; <em>straggler</em>: a rank whose own compute time (without waiting) was "
                  "more than 10 % above the other ranks&rsquo; median in most steps, with that excess"),
    )
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in defs)
    numeric = {1, 2, 4, 5, 6, 7, 8, 9, 10, 11}
    memory = " Peak memory per job is in the Memory section." if has_memory(table) else ""
    note = ""
    if not intervals and (table["status"] == "ok").any():
        note = ('<p class="note">Every job ran in one launch, so no figure has a confidence interval: set '
                "<code>repeats</code> &ge; 3 in the experiment to get 95 % bootstrap intervals over launches.</p>\n")
    return Section("Summary", '<p class="what">One row per job: how fast each step ran and how well it '
                   "scaled; jobs that did not finish show their error." + memory + "</p>\n" + note + '<div class="jobs">' + html_table(header, rows, classes, numeric)
                   + f'</div>\n<dl class="defs">{dl}</dl>')


def _skipped_note(ctx: ReportContext) -> str:
    bad = ctx.summary[ctx.summary["status"] != "ok"] if not ctx.summary.empty else ctx.summary
    if bad.empty:
        return ""
    return (f'<p class="note">{len(bad)} job(s) that did not finish ok are left out of this plot; '
            "see the summary table for their errors.</p>")


def figure_section(ctx: ReportContext, title: str, draw, filename: str, text: str) -> Section | None:
    """A section made of one plot: ``draw(summary, path)`` writes the PNG (or returns None)."""
    if ctx.summary.empty:
        return None
    path = draw(ctx.summary, ctx.image(filename))
    if path is None:
        return None
    return Section(title, text + _skipped_note(ctx), (path,))


def interval_note(table, column: str) -> str:
    """What the error bars of a scaling plot are, and where there are none."""
    ok = table[table["status"] == "ok"] if not table.empty else table
    values = ok[column].astype(float) if column in ok.columns else None
    if values is None or not values.notna().any():
        return ""
    with_bars = sum(has_interval(r, column) for _, r in ok[values.notna()].iterrows())
    if with_bars == 0:
        return ('<p class="note">No error bars: every job ran in one launch. Set <code>repeats</code> &ge; 3 '
                "in the experiment to get 95 % bootstrap intervals over launches.</p>")
    missing = int(values.notna().sum()) - with_bars
    absent = (f" {missing} point(s) have none: that job, or its world-size-1 baseline, ran in one launch."
              if missing else "")
    return ('<p class="note">Error bars are 95 % percentile-bootstrap confidence intervals over launches '
            "(repeats); they are absent where a job ran once." + absent + "</p>")


@section
def throughput_section(ctx: ReportContext) -> Section | None:
    from ddpbench import plots

    if ctx.summary.empty or len(plots.world_sizes(ctx.summary)) < 2:
        return None
    ideal = ("; the dotted lines show perfect linear scaling, the world-size-1 throughput times the number "
             "of ranks" if plots.ideal_lines_drawn(ctx.summary) else "")
    return figure_section(
        ctx, "Throughput vs world size", plots.throughput_vs_world_size, "throughput.png",
        '<p class="what">Training throughput of all ranks together (samples per second) at each '
        f"world size, one line per configuration{ideal}.</p>" + interval_note(ctx.summary, "samples_per_s"))


@section
def efficiency_section(ctx: ReportContext) -> Section | None:
    from ddpbench import plots

    if ctx.summary.empty or len(plots.world_sizes(ctx.summary)) < 2:
        return None
    return figure_section(
        ctx, "Parallel efficiency vs world size", plots.efficiency_vs_world_size, "efficiency.png",
        '<p class="what">Parallel efficiency (%) at each world size: the speedup over the '
        "world-size-1 run divided by the number of ranks, so 100 % (dotted) means every added "
        "rank adds a full rank's throughput.</p>" + interval_note(ctx.summary, "efficiency"))


#: a change of e between two world sizes larger than this reads as rising or falling
SERIAL_FRACTION_CHANGE = 0.05


def _serial_fraction_trends(table, rows) -> str:
    """Per configuration measured at two or more world sizes above 1: e at the smallest and the
    largest, and whether it rises, falls or stays about flat."""
    from ddpbench import plots

    items, missing = [], 0
    for line in plots.scaling_lines(table):
        part = line["rows"][line["rows"]["key"].isin(set(rows["key"]))].sort_values("world_size")
        if part["world_size"].nunique() < 2:
            continue
        first, last = part.iloc[0], part.iloc[-1]
        a, b = float(first["serial_fraction"]), float(last["serial_fraction"])
        change = b - a
        apart = (has_interval(first, "serial_fraction") and has_interval(last, "serial_fraction")
                 and (float(last["serial_fraction_low"]) > float(first["serial_fraction_high"])
                      or float(first["serial_fraction_low"]) > float(last["serial_fraction_high"])))
        span = (f"from {num(a, '.2f')} at {esc(first['world_size'])} ranks to {num(b, '.2f')} at "
                f"{esc(last['world_size'])}")
        if abs(change) <= SERIAL_FRACTION_CHANGE:
            trend = f"e stays about flat ({span}): the loss behaves like serial work"
        else:
            trend = (f"e rises {span}: overhead that grows with the ranks" if change > 0 else
                     f"e falls {span}: the overhead does not grow with the ranks")
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
        items.append(f"<li>{esc(line['label'] or first['model'])}: {trend}{esc(caveat)}.</li>")
    if not items:
        return ""
    caveat = ('<p class="note">Where a job or its baseline ran in one launch there is no interval to tell '
              "a change of e from run-to-run noise: treat those trends as a hint.</p>" if missing else "")
    return f'<ul class="note">{"".join(items)}</ul>{caveat}'


@section
def serial_fraction_section(ctx: ReportContext) -> Section | None:
    from ddpbench import plots

    if ctx.summary.empty:
        return None
    rows = plots.serial_fraction_rows(ctx.summary)
    if rows.empty:
        return None
    path = plots.serial_fraction_vs_world_size(ctx.summary, ctx.image("serial_fraction.png"))
    if path is None:
        return None
    sizes = sorted(set(int(w) for w in rows["world_size"]))
    what = ('<p class="what">Karp&ndash;Flatt&rsquo;s <em>experimentally determined serial fraction</em> '
            "e = (1/S &minus; 1/p) / (1 &minus; 1/p), from the measured speedup S on p ranks: the share of the "
            "one-rank work that behaves as if it could not be parallelised. 0 (dotted) is perfect linear "
            "scaling; 1 (dashed) is no speedup at all; above 1 the job ran slower than on one rank.</p>"
            '<p class="note">How to read it across world sizes: a <strong>flat</strong> e is serial work that '
            "every rank repeats (data loading, the optimizer step, Python overhead); a <strong>rising</strong> "
            "e is overhead that grows with the number of ranks, usually communication or ranks waiting for each "
            "other. Error bars are 95 % bootstrap intervals over launches, absent where a job or its baseline "
            "ran once; several configurations at one world size are spread slightly sideways.</p>")
    if len(sizes) == 1:
        trend = (f'<p class="note">Only one world size above 1 was measured ({sizes[0]}): each e says how far '
                 "that size is from linear scaling, but telling serial work from overhead that grows with the "
                 "ranks needs the trend over at least two world sizes above 1.</p>")
    else:
        trend = _serial_fraction_trends(ctx.summary, rows)
    return Section("Serial fraction (Karp\u2013Flatt)", what + trend + _skipped_note(ctx), (path,))


# -- strategies side by side (only when more than one strategy or DDP comm hook was run) --------

@section
def breakdown_section(ctx: ReportContext) -> Section | None:
    from ddpbench import plots

    explicit = ""
    if not ctx.summary.empty and (ctx.summary["strategy"] != "ddp").any():
        explicit = (" Strategies that combine gradients after backward or after the optimizer step (master, "
                    "ring, the explicit all-reduces) show that time as the orange <em>comm after "
                    "backward / step</em> part instead.")
    return figure_section(
        ctx, "Step time breakdown", plots.step_breakdown, "breakdown.png",
        '<p class="what">Where each job\'s step time goes, in milliseconds: the mean time per '
        "rank and step of each phase (data, forward, backward, optimizer).</p>"
        '<p class="note">DDP all-reduces gradient buckets while backward is still running, so most '
        "communication hides inside backward. The red <em>exposed comm</em> part is what it does not "
        "hide, measured as the step time with gradient sync minus the step time under DDP's "
        "<code>no_sync()</code> (both means); <em>backward compute</em> is the backward time less that. "
        "The black tick is the mean step of the slowest rank: it sits past the bars by the time a rank "
        "waited for the slowest one. Hatched bars are oversubscribed jobs." + explicit + "</p>")


@section
def bucket_section(ctx: ReportContext) -> Section | None:
    from ddpbench import plots

    if ctx.summary.empty or not plots.has_bucket_sweep(ctx.summary):
        return None
    return figure_section(
        ctx, "Step time vs gradient bucket size", plots.step_time_vs_bucket, "bucket_step_time.png",
        '<p class="what">Median step time (ms, slowest rank) for each DDP gradient bucket size '
        "(<code>bucket_cap_mb</code>, log scale), one line per model and world size above 1: lower "
        "is better.</p><p class=\"note\">Error bars are as long as the inter-quartile range of the "
        "step time, centred on the median. Small buckets start all-reducing earlier but pay a "
        "per-message cost more often.</p>")


def has_memory(table) -> bool:
    """Whether some ok job recorded its peak resident memory."""
    if table.empty or "peak_rss_mb" not in table.columns:
        return False
    return bool(table.loc[table["status"] == "ok", "peak_rss_mb"].astype(float).notna().any())


@section
def memory_overview_section(ctx: ReportContext) -> Section | None:
    from ddpbench import plots, plots_strategies

    if not has_memory(ctx.summary) or plots_strategies.strategies_vary(ctx.summary):
        return None  # with several strategies, "Memory per strategy" shows the same figures grouped
    path = plots.memory_by_job(ctx.summary, ctx.image("memory.png"))
    if path is None:
        return None
    state = ctx.summary["optimizer_state_mb"].astype(float).notna().any() \
        if "optimizer_state_mb" in ctx.summary.columns else False
    text = ('<p class="what">Peak resident memory (RSS, MB) of each job&rsquo;s largest rank'
            + (", and the optimizer state that rank holds (MB)" if state else "")
            + ". Colours follow the configurations of the scaling plots; hatched bars are oversubscribed "
            "jobs.</p>"
            '<p class="note">RSS counts everything the process keeps in memory: the Python interpreter and '
            "PyTorch&rsquo;s libraries (a few hundred MB before any model), the model, its gradients, "
            "DDP&rsquo;s gradient buckets and the optimizer state. Peak RSS is the high-water mark the "
            "operating system reports (VmHWM), the largest over ranks and launches; 1 MB = 10<sup>6</sup> "
            "bytes.")
    return Section("Memory", text + "</p>" + _skipped_note(ctx), (path,))


def _noise_rows(table):
    """ok jobs that are noisy, ran in one launch (no interval) or were oversubscribed, with why."""
    from ddpbench import plots

    found = []
    if table.empty:
        return found
    for _, r in plots.ordered(table[table["status"] == "ok"]).iterrows():
        launches = int(r["repeats_ok"]) if "repeats_ok" in r and r["repeats_ok"] == r["repeats_ok"] else 0
        why = []
        if bool(r.get("noisy")):
            why.append("noisy")
        if launches < 2 or not has_interval(r, "samples_per_s"):
            why.append("one launch")
        if bool(r.get("oversubscribed")):
            why.append("oversubscribed")
        if why:
            found.append((r, launches, why))
    return found


NOISE_ADVICE = {
    "noisy": "more steps per launch, and more launches; keep other work off the machine",
    "one launch": "set <code>repeats</code> &ge; 3 for an interval",
    "oversubscribed": "fewer ranks (or threads per rank) than cores",
}


@section
def noise_section(ctx: ReportContext) -> Section | None:
    from ddpbench import plots

    found = _noise_rows(ctx.summary)
    if not found:
        return None
    table = ctx.summary
    extra = [f for f in plots.line_fields(table) if f != "bucket_cap_mb"]
    header = ["job", "world size", "bucket (MB)", "step IQR / median (%)", "launches",
              "95 % CI width (% of samples/s)", "listed because", "what to do"]
    rows = []
    for r, launches, why in found:
        median = float(r["step_ms_median"])
        spread = 100 * float(r["step_ms_iqr"]) / median if median else math.nan
        width = (100 * (float(r["samples_per_s_high"]) - float(r["samples_per_s_low"])) / float(r["samples_per_s"])
                 if has_interval(r, "samples_per_s") and float(r["samples_per_s"]) else math.nan)
        rows.append([esc(plots.describe(r, extra, table)), esc(r["world_size"]), num(r["bucket_cap_mb"], "g"),
                     num(spread, ".1f"), esc(launches), num(width, ".1f"), esc(", ".join(why)),
                     "; ".join(NOISE_ADVICE[w] for w in why)])
    reasons = {w for _, _, why in found for w in why}
    cores = ctx.runs["cores"].dropna() if "cores" in ctx.runs.columns else []
    cores_text = f" (the machine had {int(max(cores))} usable cores)" if len(cores) else ""
    advice = []
    if "one launch" in reasons:
        advice.append("<strong>More launches</strong>: set <code>repeats</code> to 3 or more in the experiment. "
                      "Steps within one launch share its process placement and warm caches, so only fresh "
                      "launches show how much the next run can differ; with one launch there is no interval.")
    if "noisy" in reasons:
        advice.append("<strong>More steps</strong> per launch (<code>steps</code>) and more "
                      "<code>warmup_steps</code> steady the median; close other programs while measuring.")
    if reasons & {"noisy", "oversubscribed"}:
        advice.append("<strong>Fewer ranks than cores, and pinned threads</strong>: keep "
                      f"world_size &times; threads_per_rank at or below the cores{cores_text}, set "
                      "<code>threads_per_rank</code> explicitly rather than letting ranks share cores, and pin "
                      "the run to its cores (<code>taskset -c</code> or <code>numactl --physcpubind</code>) so "
                      "ranks do not migrate. Oversubscribed jobs measure contention for cores, not scaling.")
    items = "".join(f"<li>{a}</li>" for a in advice)
    return Section(
        "Noise and confidence",
        '<p class="what">Jobs whose figures deserve less trust: a step time whose inter-quartile range is '
        "more than 10 % of its median (<em>noisy</em>), no confidence interval because the job ran in a "
        "single launch (<em>one launch</em>), or more busy threads than cores (<em>oversubscribed</em>). "
        "The CI width is the 95 % bootstrap interval of the throughput over launches, as a share of the "
        "throughput.</p>\n" + '<div class="jobs">' + html_table(header, rows, numeric={1, 2, 3, 4, 5}) + "</div>"
        + f'\n<p class="note">What helps:</p>\n<ul class="note">{items}</ul>')


# -- collective micro-benchmarks (the `collectives` command; alone or beside a DDP sweep) --------


# Sections of their own modules register when imported; PAGE_ORDER then puts every section in
# the page's reading order: first what to conclude, then the evidence, then how sure it is.
# Sections not listed (plug-ins) keep their registration order at the end.
from ddpbench import report_strategies  # noqa: E402,F401  (isort: skip)
from ddpbench import report_collectives  # noqa: E402,F401
from ddpbench import report_analysis  # noqa: E402,F401
from ddpbench import report_network  # noqa: E402,F401
from ddpbench import report_gpu  # noqa: E402,F401

PAGE_ORDER = (
    "header_section", "diagnosis_section", "summary_section",
    "throughput_section", "efficiency_section", "serial_fraction_section", "breakdown_section", "bucket_section",
    "gpu_section", "strategies_section", "communication_section", "equivalence_section", "memory_section",
    "memory_overview_section",
    "collectives_busbw_section", "collectives_table_section", "ddp_buckets_section",
    "network_section", "recovery_section", "projection_section", "noise_section",
)
SECTIONS.sort(key=lambda fn: PAGE_ORDER.index(fn.__name__) if fn.__name__ in PAGE_ORDER else len(PAGE_ORDER))
