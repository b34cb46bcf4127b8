"""The HTML report: stored results in, ``index.html`` and PNG figures out.

The report reads the results folder only (:func:`ddpbench.results.load_tables`, then
:func:`ddpbench.analysis.summarize`); it never runs anything. It is a list of sections:

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
    from ddpbench.analysis import summarize
    from ddpbench.results import load_tables

    results_dir = Path(results_dir)
    out_dir = Path(out_dir) if out_dir is not None else results_dir
    steps, runs, ranks, sweeps = load_tables(results_dir)
    summary = summarize(steps, runs, ranks)
    out_dir.mkdir(parents=True, exist_ok=True)
    ctx = ReportContext(summary, steps, runs, ranks, sweeps, results_dir, out_dir)
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
.status-ok { color: #1a7f37; } .status-failed, .status-timed_out { color: #c62828; font-weight: 600; }
.status-skipped { color: #a36b00; }
.flag { display: inline-block; font-size: .8em; padding: 0 .4em; border-radius: .6em; margin: 0 .15em;
        background: #fff3cd; border: 1px solid #e0c36a; }
.flag.over { background: #e8eaf6; border-color: #9fa8da; }
code.err { white-space: pre-wrap; word-break: break-word; color: #8b1a1a; display: block; min-width: 22em; max-width: 36em; }
img { max-width: 100%; height: auto; display: block; margin: .8em 0; }
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
    return "".join(parts)


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


@section
def header_section(ctx: ReportContext) -> Section:
    summary = ctx.summary
    sweeps = ctx.sweeps.to_dict("records") if ctx.sweeps is not None and len(ctx.sweeps) else []
    if summary.empty:
        counts = "<p class=\"what\">No jobs are recorded in these results yet.</p>"
    else:
        by_status = summary["status"].value_counts()
        known = [s for s in STATUSES if by_status.get(s, 0)] + [s for s in by_status.index if s not in STATUSES]
        listed = ", ".join(f'<span class="status-{esc(s)}">{int(by_status[s])} {esc(s)}</span>' for s in known)
        launches = len(ctx.runs)
        wall = float(ctx.runs["wall_s"].fillna(0).sum()) if "wall_s" in ctx.runs.columns else math.nan
        counts = (f'<p class="what">{len(summary)} jobs ({launches} launches, {num(wall, ".0f")} s of launch '
                  f"wall time): {listed}.</p>")
    notes = []
    if not summary.empty and summary["oversubscribed"].astype(bool).any():
        notes.append("Some jobs were <strong>oversubscribed</strong> (more busy threads than cores): their "
                     "times measure contention for cores, not scaling. They are marked in the table and drawn "
                     "with hollow markers.")
    if not summary.empty and summary["noisy"].astype(bool).any():
        notes.append("Some jobs are <strong>noisy</strong> (step time IQR above 10 % of the median): compare "
                     "them with care. They carry a grey ring in the plots.")
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
    header = ["job", "world size", "bucket (MB)", "status", "step (ms) median &plusmn; IQR", "samples/s",
              "speedup (&times;)", "efficiency (%)", "exposed comm (ms)", "DDP comm (ms)", "overlap (%)",
              "peak RSS (MB)", "flags", "error"]
    rows, classes = [], []
    for _, r in plots.ordered(table).iterrows():
        ok = r["status"] == "ok"
        step = f"{num(r['step_ms_median'], '.2f')} &plusmn; {num(r['step_ms_iqr'], '.2f')}" if ok else "&ndash;"
        error = f'<code class="err">{esc(r["error"])}</code>' if not ok else ""
        rows.append([esc(plots.describe(r, extra, table)), esc(r["world_size"]), num(r["bucket_cap_mb"], "g"),
                     f'<span class="status-{esc(r["status"])}">{esc(r["status"])}</span>', step,
                     num(r["samples_per_s"], ".1f"), num(r["speedup"], ".2f"), num(100 * r["efficiency"], ".0f"),
                     num(r["exposed_comm_ms"], ".2f"), num(r["ddp_comm_ms"], ".2f"), num(r["overlap_pct"], ".0f"),
                     num(r["peak_rss_mb"], ".0f"), flags_html(r), error])
        classes.append("" if ok else "bad")
    defs = (
        ("step", "wall time of one training step on the slowest rank; median and inter-quartile range over "
                 "measured steps (warmup excluded)"),
        ("samples/s", "global throughput: samples of all ranks per second, the global batch over the mean "
                      "step time (total samples over total time, so costs paid every few steps count)"),
        ("speedup", "throughput relative to the world-size-1 job with the same model and batch settings"),
        ("efficiency", "speedup &divide; world size; 100 % is linear scaling"),
        ("exposed comm", "mean step time with gradient sync minus mean step time under DDP's no_sync(): the "
                         "communication the backward pass did not hide (can be slightly negative from noise)"),
        ("DDP comm", "DDP's own measure of its backward all-reduce time per step"),
        ("overlap", "share of DDP comm time that ran while backward was still computing"),
        ("peak RSS", "largest resident memory of any rank"),
    )
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in defs)
    numeric = {1, 2, 4, 5, 6, 7, 8, 9, 10, 11}
    return Section("Summary", '<p class="what">One row per job: how fast each step ran and how well it '
                   "scaled; jobs that did not finish show their error.</p>\n"
                   + html_table(header, rows, classes, numeric) + f'\n<dl class="defs">{dl}</dl>')


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
        f"world size, one line per configuration{ideal}.</p>")


@section
def efficiency_section(ctx: ReportContext) -> Section | None:
    from ddpbench import plots

    if ctx.summary.empty or len(plots.world_sizes(ctx.summary)) < 2:
        return None
    return figure_section(
        ctx, "Parallel efficiency vs world size", plots.efficiency_vs_world_size, "efficiency.png",
        '<p class="what">Parallel efficiency (%) at each world size: the speedup over the '
        "world-size-1 run divided by the number of ranks, so 100 % (dotted) means every added "
        "rank adds a full rank's throughput.</p>")


# -- strategies side by side (only when more than one strategy or DDP comm hook was run) --------

def _strategy_table(ctx: ReportContext):
    """The summary with a short label per job (``_label``) and its gradient size (``grad_mb``,
    1 MB = 1e6 bytes, from the launches' ``grad_bytes``)."""
    from ddpbench.plots_strategies import config_labels

    table = ctx.summary
    grad: dict[str, float] = {}
    if "grad_bytes" in ctx.runs.columns:
        for key, value in zip(ctx.runs["key"], ctx.runs["grad_bytes"]):
            if isinstance(value, (int, float)) and not math.isnan(value):
                grad.setdefault(key, float(value) / 1e6)
    return table.assign(_label=config_labels(table), grad_mb=table["key"].map(grad).astype(float))


def _not_drawn_html(table) -> str:
    """Jobs left out of a strategy figure, each with its status and reason."""
    bad = table[table["status"] != "ok"]
    if bad.empty:
        return ""
    items = "".join(f'<li>{esc(r["_label"])} at world size {esc(r["world_size"])}: <span class="status-'
                    f'{esc(r["status"])}">{esc(r["status"])}</span> &ndash; {esc(r["error"])}</li>'
                    for _, r in bad.iterrows())
    return f'<p class="note">Jobs that did not finish ok, and why:</p>\n<ul class="note">{items}</ul>'


def _strategy_section(ctx: ReportContext, title: str, draws, text: str, min_size: int = 1,
                      extra=lambda table: "", list_failures: bool = False) -> Section | None:
    """A section of strategy figures: ``draws`` is ((draw, filename), ...), each ``draw(table, path)``;
    ``list_failures``: name every job that did not finish ok with its reason, not only count them."""
    from ddpbench import plots_strategies

    if not plots_strategies.strategies_vary(ctx.summary):
        return None
    table = _strategy_table(ctx)
    if not ((table["status"] == "ok") & (table["world_size"] >= min_size)).any():
        return None
    images = [draw(table, ctx.image(name)) for draw, name in draws]
    images = tuple(p for p in images if p is not None)
    if not images:
        return None
    return Section(title, text + extra(table) + (_not_drawn_html(table) if list_failures else _skipped_note(ctx)),
                   images)


@section
def strategies_section(ctx: ReportContext) -> Section | None:
    from ddpbench import plots_strategies as ps

    return _strategy_section(
        ctx, "Strategies side by side", ((ps.throughput_by_strategy, "strategies_throughput.png"),),
        '<p class="what">Training throughput of all ranks together (samples per second) for each way of '
        "combining gradients, one bar per world size: the world-size-1 bar is the baseline, and a dotted "
        "outline shows what perfect linear scaling from it would give.</p>"
        '<p class="note">Hatched bars are oversubscribed jobs (more busy threads than cores): they measure '
        "contention for cores, not scaling. A slot that says <em>skipped</em> or <em>failed</em> had no "
        "result; the reasons are listed below.</p>", list_failures=True)


def _traffic_source_html(source) -> str:
    from ddpbench.plots_strategies import traffic_kind

    kind = traffic_kind(source)
    if kind == "unknown":
        return "&ndash;"
    detail = str(source).split(":", 1)[1].strip() if ":" in str(source) else ""
    return f"<strong>{esc(kind)}</strong>" + (f": {esc(detail)}" if detail else "")


def _master_vs_ring(table) -> str:
    """One sentence comparing the master's link with a ring rank's, at the largest world size with both."""
    ok = table[(table["status"] == "ok") & (table["world_size"] > 1)]
    for size in sorted(set(ok["world_size"]), reverse=True):
        here = ok[(ok["world_size"] == size) & (ok["comm_hook"] == "none")]
        master, ring = here[here["strategy"] == "master"], here[here["strategy"] == "ring"]
        if len(master) != 1 or len(ring) != 1:
            continue
        m, r = float(master["sent_mb_per_step_max"].iloc[0]), float(ring["sent_mb_per_step_max"].iloc[0])
        if not (math.isfinite(m) and math.isfinite(r) and r > 0):
            continue
        grad = float(master["grad_mb"].iloc[0])
        gradient = (f": rank 0&rsquo;s link carries (n&minus;1) = {size - 1} times the {num(grad, '.3g')} MB "
                    f"gradient, a ring rank&rsquo;s 2(n&minus;1)/n = {num(2 * (size - 1) / size, '.3g')} times"
                    if math.isfinite(grad) else "")
        return (f'<p class="what">At world size {esc(size)} the master&rsquo;s rank 0 sends {num(m, ".3g")} MB '
                f"per step, {num(m / r, '.1f')}&times; the {num(r, '.3g')} MB each rank of the ring "
                f"sends{gradient}.</p>")
    return ""


def _comm_table(table) -> str:
    from ddpbench import plots

    ok = plots.ordered(table[(table["status"] == "ok") & (table["world_size"] > 1)])
    header = ["configuration", "world size", "comm after backward / step (ms)", "exposed comm (ms)",
              "sent MB, busiest rank", "received MB, busiest rank", "sent MB, median rank", "how known"]
    rows = [[esc(r["_label"]), esc(r["world_size"]), num(r["comm_ms"], ".2f"), num(r["exposed_comm_ms"], ".2f"),
             num(r["sent_mb_per_step_max"], ".3g"), num(r["recv_mb_per_step_max"], ".3g"),
             num(r["sent_mb_per_step_median"], ".3g"), _traffic_source_html(r["traffic_source"])]
            for _, r in ok.iterrows()]
    return html_table(header, rows, numeric={1, 2, 3, 4, 5, 6})


@section
def communication_section(ctx: ReportContext) -> Section | None:
    from ddpbench import plots_strategies as ps

    return _strategy_section(
        ctx, "Communication per strategy",
        ((ps.comm_time_by_strategy, "strategies_comm_time.png"), (ps.traffic_by_strategy, "strategies_traffic.png")),
        '<p class="what">How long each strategy spends communicating per step (first figure, ms) and how many '
        "megabytes its busiest rank and its median rank send per optimizer step (second figure, 1 MB = "
        "10<sup>6</sup> bytes), at each world size above 1.</p>"
        '<p class="note">Communication after backward or after the optimizer step (master, the hand-written '
        "ring, the explicit all-reduces) is timed directly as <em>comm after backward / step</em>. DDP and "
        "ZeRO all-reduce while backward is still running; what that does not hide is the <em>exposed</em> "
        "part, step time with gradient sync minus step time under <code>no_sync()</code>. A value marked * "
        "could not be timed apart from compute: FSDP gathers and reduce-scatters inside forward and backward; "
        "ZeRO all-reduces inside backward and broadcasts inside its optimizer step, so it has no "
        "communication-free step to subtract. "
        "Local SGD averages the models only every few steps; its figure is the mean over all steps. "
        "Traffic marked "
        "<strong>measured</strong> was counted as bytes passed to send/recv; <strong>computed</strong> comes "
        "from the algorithm (the backends keep no byte counters); it is drawn dark or light "
        "accordingly.</p>",
        min_size=2, extra=lambda table: _master_vs_ring(table) + _comm_table(table))


def _flag(value) -> bool | None:
    """True or False (Python's or numpy's), else None (a check that did not run)."""
    return {"True": True, "False": False}.get(str(value))


def _is_exact(row, known: dict) -> bool | None:
    """Whether the job's strategy must match single-process training; from its own check, from a
    failed check's error, or from another job with the same label."""
    if _flag(row["exact"]) is not None:
        return _flag(row["exact"])
    if row["status"] == "failed" and "not equivalent" in str(row["error"]):
        return True
    return known.get(row["_label"])


def _verdict(row, exact: bool | None) -> tuple[str, bool]:
    """(verdict HTML, whether the row is bad)."""
    diff = float(row["max_abs_diff"]) if row["max_abs_diff"] is not None else math.nan
    if row["status"] == "failed" and "not equivalent" in str(row["error"]):
        return f'<strong>NOT equivalent</strong><code class="err">{esc(row["error"])}</code>', True
    if row["status"] != "ok":
        return f'not checked: <span class="status-{esc(row["status"])}">{esc(row["status"])}</span>', False
    if math.isnan(diff):
        return "not checked (check_steps = 0)", False
    if exact is False:
        return ("matches (although lossy by design)" if diff <= MATCH_DIFF else "differs (lossy by design)"), False
    return ("matches" if diff <= MATCH_DIFF else "matches up to float rounding (within the job's tolerance)"), False


#: a difference at most this large reads as "matches" (float32 rounding over a few steps)
MATCH_DIFF = 1e-6


@section
def equivalence_section(ctx: ReportContext) -> Section | None:
    from ddpbench import plots

    table = ctx.summary
    if table.empty or "max_abs_diff" not in table.columns:
        return None
    caught = table["error"].astype(str).str.contains("not equivalent", regex=False)
    if not (table["max_abs_diff"].astype(float).notna().any() or caught.any()):
        return None
    table = plots.ordered(_strategy_table(ctx))
    known = {r["_label"]: _flag(r["exact"]) for _, r in table.iterrows() if _flag(r["exact"]) is not None}
    header = ["configuration", "world size", "exact or lossy", "max |difference|", "verdict", "check steps"]
    rows, classes = [], []
    for _, r in table.iterrows():
        exact = _is_exact(r, known)
        verdict, bad = _verdict(r, exact)
        diff = float(r["max_abs_diff"]) if r["max_abs_diff"] is not None else math.nan
        rows.append([esc(r["_label"]), esc(r["world_size"]),
                     "&ndash;" if exact is None else ("exact" if exact else "lossy"),
                     "0" if diff == 0 else num(diff, ".2e"), verdict, num(r["check_steps"], ".0f")])
        classes.append("bad" if bad else "")
    return Section(
        "Equivalence with single-process training",
        '<p class="what">Does each strategy train the same model as one process would? After the timed steps '
        "every job trains a fresh model for <em>check steps</em> optimizer steps and compares its parameters "
        "with single-process training on the same global batches (same seed; each step the concatenation of "
        "every rank&rsquo;s batch); the table gives the largest absolute difference of any parameter.</p>"
        '<p class="note"><em>Exact</em> strategies must match up to float rounding (<em>matches</em>: at most '
        f"{MATCH_DIFF:g}); one that differs by more than the check&rsquo;s tolerance fails its job as "
        "<strong>NOT equivalent</strong>. <em>Lossy</em> ones by design (DDP&rsquo;s fp16, bf16 and PowerSGD "
        "hooks, local SGD) show how far they drift.</p>\n" + html_table(header, rows, classes, numeric={1, 3, 5}))


@section
def memory_section(ctx: ReportContext) -> Section | None:
    from ddpbench import plots_strategies as ps

    return _strategy_section(
        ctx, "Memory per strategy", ((ps.memory_by_strategy, "strategies_memory.png"),),
        '<p class="what">Peak resident memory of the largest rank and the optimizer state the largest rank '
        "holds, per strategy and world size, in MB (10<sup>6</sup> bytes).</p>"
        '<p class="note">ZeRO and FSDP shard the optimizer state, so each rank holds about 1/n of it; '
        "master-params runs the only optimizer on rank 0, so rank 0 holds all of it and the others none. "
        "Momentum SGD keeps one buffer the size of the parameters, Adam two.</p>")


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
