"""A history store as a page: how each job's scaling moved across commits, and where it changed.

Files written into the page's folder: ``index.html``; a figure per job family,
``trend-<n>.png`` (:mod:`ddpbench.report.plots.trend`); and the tables behind them,
``trend.csv`` (every series' figures at every commit, with their intervals and the launch values
they come from), ``changes.csv`` (the change points, :func:`ddpbench.analysis.history.changes.trend_changes`)
and ``newest.csv`` (the newest commits against each series' level,
:func:`ddpbench.analysis.history.newest.newest_changes`).

A job family is a world-size-1 job and the jobs scaled against it (their ``baseline_key``): one
figure shows how its throughput, its efficiency and its phases moved together.
"""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import pandas as pd
from markupsafe import Markup

from ddpbench.analysis.core import (
    EFFICIENCY,
    MIN_CHANGE,
    MIN_COMMITS,
    OUTLIER_MADS,
    P_VALUE,
    SAMPLES_PER_S,
    STEP_MS,
    counted,
)
from ddpbench.analysis.history import CANNOT_TEST, FASTER, SLOWER, VANISHED, newest_words
from ddpbench.files.sanitize import csv_text
from ddpbench.files.sidefiles import replace_file
from ddpbench.report.page import INDEX_FILE, Section, html, html_table, left_out_section, num, render_page
from ddpbench.report.plots.common import leaving_out
from ddpbench.report.plots.trend import machine_explains, trend_plot
from ddpbench.results.phases import BY_COLUMN

TREND_CSV, CHANGES_CSV, NEWEST_CSV = "trend.csv", "changes.csv", "newest.csv"
#: every name the page writes in its folder (its figures are trend-<N>.png)
OWN_FILES = (TREND_CSV, CHANGES_CSV, NEWEST_CSV, INDEX_FILE, "trend-*.png")


def _phase_label(column: str) -> str:
    """A phase's words on the page (:mod:`ddpbench.results.phases`), by its column; else the column."""
    return BY_COLUMN[column].label if column in BY_COLUMN else column


def families(table: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """(family key, title, rows) per machine and job family: a world-size-1 job with the jobs whose
    baseline it is; a job without a baseline in the history is a family of its own."""
    if table.empty:
        return []
    own = table["key"].where(table["world_size"] == 1, table["baseline_key"].fillna(table["key"]))
    machines = table["machine"].nunique()
    found = []
    for (machine, family), rows in table.assign(_family=own).groupby(["machine", "_family"], sort=False):
        base = rows[rows["world_size"] == 1]
        label = str((base if len(base) else rows)["label"].iloc[0])
        title = re.sub(r"\s*\bws=\d+\b", "", label) if len(base) else label
        found.append((f"{machine}/{family}", f"{title} on {machine}" if machines > 1 else title,
                      rows.drop(columns="_family")))
    return found


def _short(commit) -> str:
    return str(commit)[:7] if isinstance(commit, str) else "\u2014"


def _change(row) -> str:
    """A change point's or a newest test's ratio as a speedup from the faster side (its ``change``); the
    ratio of a table written before the words, as it was."""
    words = row.get("change")
    if isinstance(words, str) and words:
        return words
    return f"{row['ratio']:.3f} [{row['ratio_low']:.3f}, {row['ratio_high']:.3f}]"


def _launches(row, first: str, second: str) -> str:
    """The launches of the two sides a test compared, each with those it set aside: "24 (1) \u2192 3 (0)";
    a dash for a table written before the counts."""
    names = {"before": ("launches_before", "set_aside_before"), "after": ("launches_after", "set_aside_after"),
             "level": ("level_launches", "set_aside_level"), "newest": ("newest_launches", "set_aside_newest")}
    sides = []
    for side in (first, second):
        launches, aside = (row.get(name) for name in names[side])
        if launches is None or aside is None or pd.isna(launches) or pd.isna(aside):
            return "\u2014"
        sides.append(f"{int(launches)} ({int(aside)})")
    return " \u2192 ".join(sides)


def _side(seen) -> str:
    if seen is None or (isinstance(seen, float) and math.isnan(seen)):
        return "\u2014 (no world-size-1 series)"
    return "compute side (world size 1 moved too)" if seen else "scaling side (world size 1 did not move)"


def _overview(table, changes, newest, store, newest_n) -> Markup:
    commits = table.drop_duplicates(["machine", "commit"]) if len(table) else table
    machines = sorted(table["machine"].unique()) if len(table) else []
    text = html('<p class="what">History store: <code>{{ store }}</code>. {{ m }}, {{ c }}, '
                "{{ s }} (a job at a world size on a machine).</p>"
                "{% for m in machines %}<p class=\"note\">Machine <code>{{ m }}</code></p>{% endfor %}",
                store=str(store), m=counted(len(machines), "machine"), c=counted(len(commits), "commit"),
                s=counted(table.groupby(["machine", "key"]).ngroups if len(table) else 0, "series"),
                machines=machines)
    moved = newest[newest["outcome"].isin([SLOWER, FASTER])] if len(newest) else newest
    slower = newest[newest["outcome"] == SLOWER] if len(newest) else newest
    untested = newest[newest["outcome"] == CANNOT_TEST] if len(newest) else newest
    vanished = newest[newest["outcome"] == VANISHED] if len(newest) else newest
    what = newest_words(newest_n)
    if len(slower):
        text += html('<p class="what"><strong class="status-failed">{{ n }} slower</strong> at {{ what }} than '
                     "their level before, beyond noise: {{ names }}.</p>", n=counted(len(slower), "series"), what=what,
                     names="; ".join(f"{r['label']} ({_change(r)})" for _, r in slower.iterrows()))
    elif len(moved):
        text += html('<p class="what"><strong class="status-ok">{{ n }} faster</strong> at {{ what }}; none '
                     "slower beyond noise.</p>", n=counted(len(moved), "series"), what=what)
    elif len(newest) and not len(vanished) and len(untested) < len(newest):
        text += html('<p class="what"><strong class="status-ok">No series moved</strong> at {{ what }} beyond noise '
                     "(the test: under Change points).</p>", what=what)
    if len(vanished):
        text += html('<p class="what"><strong class="status-failed">{{ n }} vanished</strong> at {{ what }}: '
                     "ran at the commit before and no finished launch at {{ what }} (a job dropped, or "
                     "none of its launches finished): {{ names }}.</p>", n=counted(len(vanished), "series"), what=what,
                     names="; ".join(f"{r['label']} (world size {int(r['world_size'])})"
                                     for _, r in vanished.iterrows()))
    if len(untested):
        reasons = untested["why_untested"] if "why_untested" in untested else pd.Series(dtype=object)
        text += html('<p class="{{ cls }}">{% if all %}<strong class="status-skipped">No series could be tested'
                     "</strong>{% else %}{{ n }} could not be tested{% endif %} at {{ what }}: "
                     "{{ why }}. No call is made for them.</p>", cls="what" if len(untested) == len(newest) else "note",
                     all=len(untested) == len(newest), n=counted(len(untested), "series"), what=what,
                     why="; ".join(f"{counted(int(n), 'series')} with {why}"
                                   for why, n in reasons.value_counts(sort=False).items()) or
                         f"fewer than {MIN_COMMITS} commits before them at their level, or fewer than two launches "
                         "a side")
    machine = int(_machine_differed(changes).sum())
    text += html('<p class="what">{{ n }} found in the whole history{% if k %}, {{ k }} of them where '
                 "the machine differed as much as the code could have (under Change points){% endif %}.</p>",
                 n=counted(len(changes), "change point"), k=machine)
    return text


def _machine_differed(changes: pd.DataFrame) -> pd.Series:
    """Per change point, whether the machine explains it (:func:`ddpbench.analysis.history.changes.trend_changes`);
    False for tables written before the column."""
    if "machine_differed" not in changes:
        return pd.Series(False, index=changes.index, dtype=bool)
    return changes.apply(machine_explains, axis=1).astype(bool) if len(changes) else \
        pd.Series(False, index=changes.index, dtype=bool)


def _machine_words(change) -> str:
    note = change.get("machine_note")
    if not isinstance(note, str) or not note:
        return "\u2014 (the launches did not read it)"
    if machine_explains(change):
        return f"differed: the change may be the machine's; {note}"
    return f"did not explain it: {note}"


def _change_rows(changes: pd.DataFrame) -> Markup:
    rows, classes = [], []
    for _, c in changes.iterrows():
        phase = ("\u2014 (no phase's interval is wholly on the change's side)" if not isinstance(c["phase"], str) else
                 f"{_phase_label(c['phase'])} {c['phase_change_ms']:+.2f} ms "
                 f"[{c['phase_change_low']:+.2f}, {c['phase_change_high']:+.2f}]")
        rows.append([c["label"], int(c["world_size"]), f"{_short(c['last_before'])} \u2192 {_short(c['first_after'])}",
                     num(c["step_ms_before"], ".2f"), num(c["step_ms_after"], ".2f"), _change(c),
                     f"{c['p_value']:.1e}", _launches(c, "before", "after"), _side(c["seen_at_ws1"]), phase,
                     _machine_words(c)])
        classes.append("bad" if c["ratio"] > 1 and not machine_explains(c) else "")
    header = ["job", "world size", "between commits", "step before (ms)", "step after (ms)",
              "old level against new", "p", "launches before \u2192 after (set aside)", "where",
              "phase that moved [95 % CI]", "the machine"]
    return html_table(header, rows, classes, {1, 3, 4})


def _newest_rows(newest: pd.DataFrame) -> Markup:
    rows, classes = [], []
    for _, r in newest.iterrows():
        tested = r["outcome"] not in (CANNOT_TEST, VANISHED)
        rows.append([r["label"], int(r["world_size"]),
                     f"{_short(r['level_from'])} .. {_short(r['level_to'])} ({int(r['level_commits'])})",
                     f"{_short(r['newest_from'])} .. {_short(r['newest_to'])}",
                     num(r["step_ms_level"], ".2f") if tested else "\u2014",
                     num(r["step_ms_newest"], ".2f") if tested else "\u2014",
                     _change(r) if tested else r.get("why_untested") if isinstance(r.get("why_untested"), str)
                     else "\u2014",
                     _launches(r, "level", "newest") if r["outcome"] != VANISHED else "\u2014", r["outcome"]])
        classes.append("bad" if r["outcome"] in (SLOWER, VANISHED) else "")
    header = ["job", "world size", "level: commits (count)", "newest commits", "level step (ms)",
              "newest step (ms)", "newest against level", "launches level \u2192 newest (set aside)", "outcome"]
    return html_table(header, rows, classes, {1, 4, 5})


METHOD = ("<p class=\"note\">Change points: E-Divisive means (the energy statistic of Matteson and James) places a "
          "candidate between two commits, and Welch's t-test over the launches on either side calls it: p below "
          "{{ p }} and the whole 95 % interval of after / before beyond {{ min }} on one side; each side of a change "
          "holds at least {{ k }} commits. The test sets aside, on each side, the launches more than {{ mads }} "
          "scaled MADs from the side's median: launches a burst of other work on the machine slowed. "
          "The launch is the unit of evidence (a launch's steps are not independent "
          "of each other). <em>Where</em>: a job above world size 1 whose world-size-1 job changed within a commit "
          "of the same place moved on the compute side; one whose world-size-1 job did not, on the scaling side "
          "(communication or waiting). <em>Phase</em>: the phase whose mean moved most in the change's direction, "
          "with the whole 95 % interval of its change (over the commits on either side) on that side. The "
          "detector's recall and false alarms on real launches of a 2-core machine are in benchmarks/measured.md. "
          "<em>Newest commits</em>, the merge gate: their launches against those of the commits since the last "
          "change point before them (launches set aside alike), a call where the whole 95 % Welch interval of "
          "newest / level lies beyond {{ min }}. Each change is said from its faster side, as how many times as "
          "fast it is, with that interval inverted: <em>the old level 1.15x as fast as the new level</em> where "
          "the step grew 1.15 times.</p>")


def html_page(table, changes, newest, store, out_dir: Path, plots, newest_n: int, left_out=()) -> str:
    sections = [Section("Overview", _overview(table, changes, newest, store, newest_n))]
    if len(newest):
        sections.append(Section("Newest commits", _newest_rows(newest)))
    sections.append(Section("Change points", (_change_rows(changes) if len(changes) else
                                              Markup('<p class="what">No change point in any series.</p>'))
                            + html(METHOD, p=P_VALUE, min=f"{100 * MIN_CHANGE:g} %",
                                   k=MIN_COMMITS, mads=f"{OUTLIER_MADS:g}")))
    for title, plot, rows in plots:
        latest = rows.groupby("key", sort=False).tail(1)
        cells = [[r["label"], int(r["world_size"]), int((rows["key"] == r["key"]).sum()), _short(r["commit"]),
                  _interval(r, SAMPLES_PER_S, ".1f"), _interval(r, EFFICIENCY, ".1%"),
                  _interval(r, STEP_MS, ".2f")] for _, r in latest.iterrows()]
        body = html_table(["series", "world size", "commits", "newest commit", "samples/s [95 % CI]",
                           "efficiency [95 % CI]", "mean step ms [95 % CI]"], cells, numeric={1, 2})
        sections.append(Section(title, body, (plot,) if plot is not None else ()))
    sections.append(Section("Data", html('<p class="what">The tables behind this page: <a href="{{ t }}">{{ t }}</a> '
                                         '(every series at every commit, with the launch values), <a href="{{ c }}">'
                                         '{{ c }}</a>, <a href="{{ n }}">{{ n }}</a>.</p>',
                                         t=TREND_CSV, c=CHANGES_CSV, n=NEWEST_CSV)))
    if left_out:
        sections.append(left_out_section(left_out))
    return render_page(f"ddpbench history: {Path(store).name}", sections, out_dir)


def _interval(row, column: str, fmt: str) -> str:
    value, low, high = (float(row.get(c, float("nan"))) for c in (column, f"{column}_low", f"{column}_high"))
    if math.isnan(value):
        return "\u2014"
    return f"{value:{fmt}}" + (f" [{low:{fmt}}, {high:{fmt}}]" if not (math.isnan(low) or math.isnan(high)) else "")


def write_trend(table: pd.DataFrame, changes: pd.DataFrame, newest: pd.DataFrame, store: str | Path,
                out_dir: str | Path, newest_n: int = 1) -> dict[str, Path]:
    """Write the page and its files into ``out_dir`` (module docstring); the paths written, by kind."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {"trend": replace_file(out_dir / TREND_CSV, csv_text(
        table.assign(launch_step_ms=[" ".join(f"{v:.6g}" for v in values) for values in table["launch_step_ms"]])
        if len(table) else table)),
        "changes": replace_file(out_dir / CHANGES_CSV, csv_text(changes)),
        "newest": replace_file(out_dir / NEWEST_CSV, csv_text(newest))}
    plots = []
    with warnings.catch_warnings(), leaving_out() as left_out:
        warnings.filterwarnings("ignore", r"Glyph \d+ .* missing from font", UserWarning)  # see build.GLYPH_WARNING
        for number, (_family, title, rows) in enumerate(families(table), start=1):
            mine = changes[changes["key"].isin(set(rows["key"])) & (changes["machine"] == rows["machine"].iloc[0])] \
                if len(changes) else changes
            plot = trend_plot(rows, mine, title, out_dir / f"trend-{number}.png")
            if plot is not None:
                written[f"plot {number}"] = plot
            plots.append((title, plot, rows))
    written["html"] = replace_file(out_dir / INDEX_FILE, html_page(table, changes, newest, store, out_dir, plots,
                                                                   newest_n, left_out))
    return written
