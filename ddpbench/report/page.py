"""The report's page: what a section is, what it is given, and the HTML it is made of.

A section is a function ``section(ctx: ReportContext) -> Section | None``: it gets the
:class:`ReportContext` (the summary table, the stored tables, the output folder) and returns a
:class:`Section` -- a title, an HTML fragment, and the PNG files it wrote into ``ctx.out_dir`` --
or None when it does not apply to these results. :mod:`ddpbench.report.build` lists the sections
in page order and writes the page.

Every fragment is made by Jinja2 with autoescaping on (:func:`html`, :data:`ENV`): a value from an
experiment file or a results file enters the page as text, whatever it holds, unless it is
:class:`~markupsafe.Markup`, which only fragments made here and constants of trusted markup are.
There is no escaping to forget. Links point only at files inside the folder (:func:`local_href`).
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd
from markupsafe import Markup, escape

from ddpbench.analysis.core import NOISE_THRESHOLD, STRAGGLER_THRESHOLD, pct
from ddpbench.analysis.folder import Measured
from ddpbench.show.tables import Shown

INDEX_FILE = "index.html"


@dataclass(frozen=True)
class Section:
    """One part of the page: ``html`` is a fragment made with :func:`html` (or trusted :class:`Markup`);
    a plain string enters the page as text."""

    title: str
    html: Markup
    images: tuple[Path, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class ReportContext:
    """A results folder as every section reads it (made by :func:`ddpbench.report.build.load_context`
    from :class:`ddpbench.analysis.folder.Measured`), and where the page goes."""

    summary: pd.DataFrame  # one row per job (analysis.summary.summarize); empty when nothing ran
    steps: pd.DataFrame
    runs: pd.DataFrame
    ranks: pd.DataFrame
    sweeps: pd.DataFrame
    results_dir: Path
    out_dir: Path
    #: one row per (launch, op, placement, size) of the collective micro-benchmarks
    #: (results.tables.load_collectives); an empty DataFrame when the folder holds none
    collectives: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: what loading skipped: one line per damaged record ("results.jsonl:8: damaged record skipped ...")
    damaged: list[str] = field(default_factory=list)
    #: the folder object these tables came from (:class:`ddpbench.analysis.folder.Measured`): the
    #: findings, the verdict and the cost model every section displays, each computed once per report;
    #: made from the fields above when not given
    folder: Measured = field(default=None, compare=False, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.folder is None:  # a context made by hand (tests): the same object over its tables
            object.__setattr__(self, "folder", Measured(self.results_dir, self.steps, self.runs, self.ranks,
                                                        self.sweeps, self.summary, self.collectives,
                                                        tuple(self.damaged)))

    def image(self, name: str) -> Path:
        """Where a section writes its PNG: a stable name in the output folder."""
        return self.out_dir / name


#: a section of the report
SectionFn = Callable[[ReportContext], "Section | None"]


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
code.err { white-space: pre-wrap; word-break: break-word; color: #8b1a1a; display: block; \
min-width: 22em; max-width: 36em; }
img { max-width: 100%; height: auto; display: block; margin: .8em 0; }
td.wrong { color: #c62828; font-weight: 700; background: #fdecea !important; }
details { margin: .4em 0; } details > summary { cursor: pointer; font-weight: 600; padding: .2em 0; }
details .wrong-note, .wrong-note { color: #c62828; font-weight: 600; }
table.answers th[scope=row] { background: #f3f3f3; white-space: nowrap; }
@media (max-width: 640px) { body { padding: .8em .8em 3em; } h1 { font-size: 1.5em; }
  table.answers thead { display: none; }
  table.answers, table.answers tbody, table.answers tr, table.answers th, table.answers td { display: block; }
  table.answers tr { margin-bottom: .6em; border: 1px solid #ddd; } table.answers td, table.answers th { border: 0; } }
dl.defs dt { font-weight: 600; float: left; clear: left; width: 11em; } dl.defs dd { margin-left: 11.5em; }
"""


#: the template engine of every page: autoescaping on, so a value enters the page as text unless it
#: is :class:`Markup` (HTML already); None and NaN print as a dash
ENV = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                         finalize=lambda value: DASH if _missing(value) else value)
#: what a missing figure shows
DASH = Markup("&ndash;")


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


@functools.cache
def _template(source: str) -> jinja2.Template:
    return ENV.from_string(source)


def html(source: str, /, **values: Any) -> Markup:
    """A fragment of the page from a Jinja2 template: ``html("<em>{{ name }}</em>", name=...)``.

    Every ``{{ value }}`` is escaped by the engine unless it is :class:`Markup` (a fragment made here,
    or a constant of trusted markup); the result is Markup, so it can be put into other fragments."""
    return Markup(_template(source).render(**values))


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>{{ css }}</style>
</head>
<body>
<h1>{{ title }}</h1>
<nav>{% for anchor, part in parts %}{% if not loop.first %} {% endif %}<a href="#{{ anchor }}">{{ part.title }}</a>\
{% endfor %}</nav>
{% for anchor, part in parts %}<section id="{{ anchor }}">
<h2>{{ part.title }}</h2>
{{ part.html }}
{% for image in images[loop.index0] %}<img src="{{ image }}" alt="{{ part.title }}">{% endfor %}
</section>
{% endfor %}</body>
</html>
"""


def render_page(title: str, sections: Sequence[Section], out_dir: Path) -> str:
    """The whole page. A section's ``html`` that is not Markup enters as text; its images are
    linked only as files inside ``out_dir`` (:func:`local_href`). A section's images are the paths it
    wrote, from the working folder (``out_dir`` given relative, they are relative too): made absolute
    here, not read as relative to ``out_dir``, which would name ``out_dir`` twice."""
    ids = [f"s{number}-{_slug(s.title)}" for number, s in enumerate(sections, start=1)]
    images = [[href for href in (local_href(Path(p).absolute(), out_dir, out_dir) for p in s.images) if href]
              for s in sections]
    return _template(PAGE).render(title=title, css=Markup(CSS), parts=list(zip(ids, sections)), images=images)


def local_href(path: str | Path, root: Path, page_dir: Path) -> str | None:
    """A relative link from a page in ``page_dir`` to ``path`` (relative to ``root``, or absolute), or
    None unless it names a file that is there, inside ``root``: no scheme (``javascript:``, ``http:``),
    no absolute path outside, no ``..`` out of the folder, no link that resolves outside it."""
    text = str(path)
    if not text or "\x00" in text or _SCHEME.match(text):
        return None
    root = Path(root).resolve()
    target = Path(text) if Path(text).is_absolute() else root / text
    try:
        resolved = target.resolve()
    except (OSError, RuntimeError):  # a link loop
        return None
    if not resolved.is_relative_to(root) or not resolved.is_file():
        return None
    return Path(os.path.relpath(resolved, Path(page_dir).resolve())).as_posix()


#: a URL scheme (``javascript:``, ``data:``, ``http:``, ...) at the start of a stored path
_SCHEME = re.compile(r"^\s*[A-Za-z][A-Za-z0-9+.-]*:")


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


TABLE = """<table>
<thead><tr>{% for h in header %}<th>{{ h }}</th>{% endfor %}</tr></thead>
<tbody>
{% for row in rows %}{% set cls = classes[loop.index0] %}<tr{% if cls %} class="{{ cls }}"{% endif %}>\
{% for cell in row %}{% if loop.index0 in numeric %}<td class="num">{{ cell }}</td>{% else %}\
<td>{{ cell }}</td>{% endif %}\
{% endfor %}</tr>
{% endfor %}</tbody>
</table>"""


def html_table(header: Sequence[Any], rows: Sequence[Sequence[Any]], row_classes=None, numeric=()) -> Markup:
    """A table; every cell and heading is text unless Markup. ``numeric`` lists column indexes to right-align."""
    classes = list(row_classes) if row_classes else [""] * len(rows)
    return html(TABLE, header=header, rows=rows, classes=classes, numeric=set(numeric))


def num(value: Any, fmt: str = ".1f", suffix: str = "") -> Markup:
    """A figure formatted with ``fmt`` (and ``suffix``); a dash when missing; other values as text."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return html("{{ value }}", value=value)
    # escaped as html("{{ text }}", ...) escapes it, without a template's render for every figure of every table
    return DASH if math.isnan(value) else escape(format(value, fmt) + suffix)


def experiment_names(sweeps) -> list[str]:
    if sweeps is None or sweeps.empty or "experiment" not in sweeps.columns:
        return []
    return [str(n) for n in dict.fromkeys(sweeps["experiment"].dropna())]


def flags_html(row) -> Markup:
    return html('{% if over %}<span class="flag over" title="more busy threads than cores">oversubscribed</span>'
                '{% endif %}{% if noisy %}<span class="flag" title="IQR / median above {{ noise }}">noisy</span>'
                '{% endif %}{% if straggler %}<span class="flag straggler" title="a rank whose own compute time '
                "(without waiting for the others) was more than {{ straggler_bar }} above the other ranks' median "
                'in most steps; the figure is the largest such excess">{{ straggler }}</span>{% endif %}',
                over=bool(row.get("oversubscribed")), noisy=bool(row.get("noisy")), straggler=straggler_text(row),
                noise=pct(NOISE_THRESHOLD), straggler_bar=pct(STRAGGLER_THRESHOLD))


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


def with_interval(row, column: str, fmt: str, scale: float = 1.0, mark_missing: bool = True) -> Markup:
    """``value [low, high]`` with the job's 95 % t interval over launches; ``value [–]`` when it has
    none (one launch) and ``mark_missing``; a dash when the value itself is missing."""
    try:
        value = float(row.get(column))
    except (TypeError, ValueError):
        value = math.nan
    if math.isnan(value):
        return DASH
    text = num(value * scale, fmt)
    if has_interval(row, column):
        low, high = float(row[f"{column}_low"]) * scale, float(row[f"{column}_high"]) * scale
        return html('{{ text }} <span class="ci">[{{ low }}, {{ high }}]</span>', text=text, low=num(low, fmt),
                    high=num(high, fmt))
    if mark_missing:
        return html('{{ text }} <span class="ci" title="one launch: no interval">[&ndash;]</span>', text=text)
    return text


def figure(column: str, fmt: str | Callable[[Any], str], scale: float = 1.0) -> Callable[[Any, Any], Any]:
    """The cell of a summary figure in a table of the page (a :class:`~ddpbench.show.tables.Col`'s), with its
    95 % interval (``[–]`` for a job of one launch where ``context.mark_missing(row)``); ``fmt`` may be a
    function of the value."""
    return lambda row, context: with_interval(row, column, fmt(row[column]) if callable(fmt) else fmt, scale,
                                              mark_missing=context.mark_missing(row))


def html_cell(shown: Shown, row, context) -> Any:
    """A :data:`~ddpbench.show.tables.SHOWN` figure's cell on the page: with its interval where it has one, or
    the number alone."""
    if shown.interval:
        return figure(shown.column, shown.fmt)(row, context)
    return num(row.get(shown.column), shown.fmt)


def any_interval(table) -> bool:
    """Whether some ok job has a throughput interval (ran in more than one launch)."""
    if table.empty or "samples_per_s_low" not in table.columns:
        return False
    ok = table[table["status"] == "ok"]
    return bool(ok["samples_per_s_low"].astype(float).notna().any())


#: what a rank's own memory is, for the memory sections
OWN_MEMORY_NOTE = Markup(
    '<p class="note">A rank&rsquo;s own memory, read as its measured steps end (the largest over ranks and '
    "launches; 1 MB = 10<sup>6</sup> bytes): its anonymous and shared resident memory (the interpreter&rsquo;s "
    "and PyTorch&rsquo;s heap, the model, its gradients, DDP&rsquo;s buckets, the optimizer state, gloo&rsquo;s "
    "segments). It is the same whether the rank was forked from the warm server or started as a new "
    "interpreter, as torchrun starts it: library code is left out, page cache that every torch process "
    "shares and that a forked rank maps only as it touches it. The stored per-rank figures also give its "
    "peak RSS (VmHWM), USS and PSS.")


def has_memory(table) -> bool:
    """Whether some ok job recorded its memory (its own, or its peak resident memory)."""
    if table.empty:
        return False
    ok = table["status"] == "ok"
    return any(bool(table.loc[ok, column].astype(float).notna().any())
               for column in ("rank_memory_mb", "peak_rss_mb") if column in table.columns)


def skipped_note(ctx: ReportContext, what: str = "plot") -> Markup:
    """That the jobs which did not finish ok are left out of this ``what`` (a plot, a table)."""
    bad = ctx.summary[ctx.summary["status"] != "ok"] if not ctx.summary.empty else ctx.summary
    if bad.empty:
        return Markup()
    return html('<p class="note">{{ n }} job(s) that did not finish ok are left out of this {{ what }}; '
                "see the summary table for their errors.</p>", n=len(bad), what=what)


def figure_section(ctx: ReportContext, title: str, draw, filename: str, text: Markup) -> Section | None:
    """A section made of one plot: ``draw(summary, path)`` writes the PNG (or returns None)."""
    if ctx.summary.empty:
        return None
    path = draw(ctx.summary, ctx.image(filename))
    if path is None:
        return None
    return Section(title, text + skipped_note(ctx), (path,))


LEFT_OUT = """<p class="what">{{ n }} figure(s) left out: matplotlib could not draw them from these results. \
Each line names the figure's file and what matplotlib said.</p>
<ul>{% for f in left_out %}<li><code>{{ f.figure }}</code>: {{ f.why }}</li>
{% endfor %}</ul>"""


def left_out_section(left_out: Sequence[Any]) -> Section:
    """The page's closing section: each figure left out (:func:`ddpbench.report.plots.common.guarded`),
    one line each: its file's name and the error's first line."""
    return Section("Figures left out", html(LEFT_OUT, n=len(left_out), left_out=left_out))


def interval_note(table, column: str) -> Markup:
    """What the error bars of a scaling plot are, and where there are none."""
    ok = table[table["status"] == "ok"] if not table.empty else table
    values = ok[column].astype(float) if column in ok.columns else None
    if values is None or not values.notna().any():
        return Markup()
    with_bars = sum(has_interval(r, column) for _, r in ok[values.notna()].iterrows())
    if with_bars == 0:
        return Markup('<p class="note">No error bars: every job ran in one launch. Set <code>repeats</code> &ge; 3 '
                      "in the experiment to get 95 % t intervals over launches.</p>")
    return html('<p class="note">Error bars are 95 % Student t confidence intervals over launches '
                "(repeats); they are absent where a job ran once.{% if missing %} {{ missing }} point(s) have none: "
                "that job, or its world-size-1 baseline, ran in one launch.{% endif %}</p>",
                missing=int(values.notna().sum()) - with_bars)
