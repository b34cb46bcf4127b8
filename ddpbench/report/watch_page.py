"""A watched run's folder as a page (``python -m ddpbench report DIR`` on ``ddpbench watch --out DIR``):
the run at a glance, each rank's step over the run with the alarms marked (``steps.png``,
:mod:`ddpbench.report.plots.watch`), the alarms with their traces' answers, and the loss budget of the
windows before and after each alarm (:mod:`ddpbench.watch.windows`, also in ``windows.csv``).

Every name and number from the folder enters the page as text (autoescaped), and a trace's answer is
linked only where it is a file inside the folder: a watched run's folder from anyone opens as an inert
page.
"""

from __future__ import annotations

import math
from pathlib import Path

from markupsafe import Markup

from ddpbench.files.sanitize import csv_text
from ddpbench.files.sidefiles import replace_file
from ddpbench.report.page import (
    DASH,
    INDEX_FILE,
    Section,
    html,
    html_table,
    left_out_section,
    local_href,
    num,
    render_page,
)
from ddpbench.report.plots.common import leaving_out
from ddpbench.report.plots.watch import ROLLING, steps_over_run
from ddpbench.watch.alarms import STRAGGLER
from ddpbench.watch.traced import answer_of
from ddpbench.watch.windows import CONFIDENCE, read_run, windows

WINDOWS_FILE, FIGURE = "windows.csv", "steps.png"
#: every name the page writes in its folder (its claim's)
WRITES = (INDEX_FILE, WINDOWS_FILE, FIGURE)


def write_watch_report(folder: Path, out_dir: Path) -> Path:
    """Write the page of the watched run in ``folder`` (and its figure and windows.csv) into ``out_dir``; the
    page's path."""
    folder, out_dir = Path(folder), Path(out_dir)
    steps, alarms = read_run(folder)
    table = windows(steps, alarms)
    replace_file(out_dir / WINDOWS_FILE, csv_text(table))
    with leaving_out() as left_out:
        picture = steps_over_run(steps, alarms, out_dir / FIGURE, "the watched run")
    sections = [_overview(steps, alarms, folder)]
    if picture is not None:
        sections.append(Section("Each rank's step", html(
            '<p class="note">Each line is a rank\'s step, the median of {{ n }} steps around it (its steps faint '
            "behind it). An alarm is numbered in red where it was raised; the dotted line before it is the look "
            "that first saw the change.</p>", n=ROLLING), images=(picture,)))
    if len(alarms):
        sections.append(_alarms_section(alarms, folder, out_dir))
        sections += [_window_section(number, alarm, table[table["alarm"] == number])
                     for number, alarm in enumerate(alarms.itertuples(index=False), start=1)]
    if left_out:
        sections.append(left_out_section(left_out))
    return replace_file(out_dir / INDEX_FILE, render_page(f"ddpbench watch: {folder}", sections, out_dir))


def _overview(steps, alarms, folder: Path) -> Section:
    ranks = steps.groupby("rank")
    phase = steps[steps["data_ms"].notna()]
    text = html('<p class="what">Read from <code>{{ folder }}</code>: {{ ranks }} rank(s) on {{ hosts }} host(s), '
                "{{ steps }} steps (the most any rank made), a median step of {{ median }} ms; {{ phase }} of them "
                "phase steps (every tenth, the baseline's and those asked after a look).</p>",
                folder=str(folder), ranks=ranks.ngroups, hosts=steps["host"].nunique(),
                steps=int(ranks["step"].max().max() + 1) if len(steps) else 0,
                median=f"{steps['step_ms'].median():.2f}" if len(steps) else DASH,
                phase=phase["step"].nunique())
    if not len(alarms):
        text += Markup('<p class="what">No alarm: no change of the job\'s step, of a phase or of a rank was called '
                       "(docs/watch.md says how a change is called, and how often an unchanged run calls one).</p>")
    else:
        text += html('<p class="what">{{ n }} alarm(s); the first: {{ words }}.</p>', n=len(alarms),
                     words=str(alarms["words"].iloc[0]))
    return Section("The watched run", text)


def _alarms_section(alarms, folder: Path, out_dir: Path) -> Section:
    rows = []
    for number, a in enumerate(alarms.itertuples(index=False), start=1):
        who = DASH if not math.isfinite(a.rank) else f"rank {int(a.rank)}"
        change = html("{{ c }} ({{ lo }} to {{ hi }})", c=f"{100 * a.change:+.0f} %", lo=f"{100 * a.low:+.0f}",
                      hi=f"{100 * a.high:+.0f} %") if math.isfinite(a.low) else num(100 * a.change, "+.0f", " %")
        phase = a.phase.removesuffix("_ms") if isinstance(a.phase, str) and a.phase else DASH
        cause = a.cause if isinstance(a.cause, str) and a.cause else DASH
        rows.append([number, int(a.step), int(a.since) if math.isfinite(a.since) else DASH, a.kind, who, phase,
                     cause, change, _trace_cell(a.trace, folder, out_dir)])
    text = html('<p class="note">Each alarm as the watch raised it (alarms.csv): where it was raised, the look that '
                "first saw it, and its change against the run's own start with the interval of its sequential "
                "test (a phase's: the time it added a step, as a share of the step at the start); its cause where "
                "the ranks' added wait for a CPU was half of the slowdown or more (a busy machine: other work on its "
                "cores, not the training). Its trace's answer is the loss budget of the traced steps "
                "(docs/traces.md).</p>")
    return Section("Alarms", text + html_table(["", "raised at step", "seen from step", "kind", "rank", "phase",
                                                 "cause", "change", "trace"], rows, numeric=(0, 1, 2)))


def _trace_cell(trace, folder: Path, out_dir: Path):
    if not isinstance(trace, str) or not trace:
        return html("not traced")
    answer = answer_of(Path(trace)) / INDEX_FILE  # inside the run's folder (an absolute path stays one)
    href = local_href(answer, folder, out_dir)
    if href is None:
        return html("{{ t }} (no answer)", t=Path(trace).name)
    return html('<a href="{{ href }}">{{ name }}\'s answer</a>', href=href, name=Path(trace).name)


def _window_section(number: int, alarm, table) -> Section:
    first = table.iloc[0] if len(table) else None
    text = html('<p class="what">{{ words }}.</p>', words=str(alarm.words)[:1].upper() + str(alarm.words)[1:])
    if first is not None:
        text += html('<p class="note">The steps {{ a0 }} to {{ a1 }} (after) against the baseline, {{ b0 }} to '
                     "{{ b1 }} (before): each line is the median over their phase steps, of the ranks' median for the "
                     "job{% if rank %}, of its own for the straggler{% endif %}; the change is the shift of the after "
                     "steps against the before ones, with its distribution-free {{ level }} interval. It describes "
                     "this run's steps; the alarm's own test is the one above.</p>",
                     a0=int(first["after_from"]), a1=int(first["after_to"]), b0=int(first["before_from"]),
                     b1=int(first["before_to"]), rank=alarm.kind == STRAGGLER, level=f"{100 * CONFIDENCE:.0f} %")
    rows = [[r["who"], r["words"], f"{int(r['before_steps'])} / {int(r['after_steps'])}", num(r["before_ms"], ".2f"),
             num(r["after_ms"], ".2f"), _change_cell(r)] for _, r in table.iterrows()]
    text += html_table(["", "line", "phase steps (before / after)", "before (ms)", "after (ms)", "change"], rows,
                       numeric=(2, 3, 4, 5))
    return Section(f"Alarm {number}: the budget before and after", text)


def _change_cell(row):
    if not math.isfinite(row["change"]):
        return html("not measurable (no phase step in a window)")
    if not math.isfinite(row["low"]):
        return html("{{ c }} (too few steps for an interval)", c=f"{100 * row['change']:+.0f} %")
    return html("{{ c }} ({{ lo }} to {{ hi }})", c=f"{100 * row['change']:+.0f} %", lo=f"{100 * row['low']:+.0f}",
                hi=f"{100 * row['high']:+.0f} %")
