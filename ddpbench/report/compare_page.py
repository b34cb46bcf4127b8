"""The comparison of two results folders as files: ``compare.csv`` (one row per job), ``ratios.png``
and ``index.html`` (overview with the environments and gates, the per-job table, the jobs not
compared), from the tables of :mod:`ddpbench.analysis.history.compare`."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from markupsafe import Markup

from ddpbench.analysis.core import (
    CONFIDENCE,
    DEFAULT_EFFECT_PCT,
    MACHINE_BUSY,
    MACHINE_DIFFERED,
    POWER,
    USEFUL_MDE_PCT,
    counted,
)
from ddpbench.analysis.history import (
    CANNOT_TELL,
    FAIL,
    FASTER,
    INCONCLUSIVE,
    SAME,
    SLOWER,
    Gate,
    csv_table,
    gate_column,
    gate_text,
)
from ddpbench.files.sanitize import csv_text
from ddpbench.files.sidefiles import replace_file
from ddpbench.report.page import (
    INDEX_FILE,
    Section,
    html,
    html_table,
    left_out_section,
    num,
    render_page,
    with_interval,
)
from ddpbench.report.plots.common import LeftOut, leaving_out
from ddpbench.report.plots.compare import ratio_plot

CSV_FILE = "compare.csv"
PLOT_FILE = "ratios.png"


def _overview(table, results, gates, env_diffs, folder_a, folder_b, machine: str = "") -> Markup:
    compared = table[table["compared"].astype(bool)] if len(table) else table
    verdicts = (SLOWER, FASTER, SAME, CANNOT_TELL, MACHINE_DIFFERED, MACHINE_BUSY)
    counts = {v: int((compared["verdict"] == v).sum()) for v in verdicts} if len(compared) else {}
    text = html('<p class="what">Baseline A: <code>{{ a }}</code><br>Candidate B: <code>{{ b }}</code></p>'
                '<p class="what">{{ n }} compared: <span class="status-failed">{{ slower }} slower</span>, '
                '<span class="status-ok">{{ faster }} faster</span>, {{ same }} not significant'
                "{% if unsure %}, {{ unsure }} cannot tell (one launch on a side: no call){% endif %}"
                "{% if machine_said %}, {{ machine_said }} not called because the machine differed{% endif %}"
                "{% if busy %}, {{ busy }} not called because the machine was busy during some of their launches "
                "(other work, as their rows say){% endif %}; "
                "{{ rest }} not compared.</p>",
                a=str(folder_a), b=str(folder_b), n=counted(len(compared), "job"), slower=counts.get(SLOWER, 0),
                faster=counts.get(FASTER, 0), same=counts.get(SAME, 0), unsure=counts.get(CANNOT_TELL, 0),
                machine_said=counts.get(MACHINE_DIFFERED, 0), busy=counts.get(MACHINE_BUSY, 0),
                rest=len(table) - len(compared))
    if env_diffs:
        text += (Markup('<p class="note"><strong class="status-skipped">Warning: the two folders were measured in '
                        "different environments</strong>; a difference in step time may come from the machine, "
                        "not from the change under test.</p>")
                 + html_table(["what", "A", "B"], [list(d) for d in env_diffs]))
    else:
        text += Markup('<p class="note">Both folders were measured in the same environment (CPU model, usable cores, '
                       "torch, CUDA, NCCL, python, host, GPUs).</p>")
    if machine:  # what else the machine ran during each side's measured steps (ddpbench.analysis.core.machine)
        text += html('<p class="note">{{ m }}</p>', m=machine[:1].upper() + machine[1:] + ".")
    if not gates:
        return text
    names = ", ".join(map(str, gates))
    failed = results[results["outcome"] == FAIL] if len(results) else results
    unsure = results[results["outcome"] == INCONCLUSIVE] if len(results) else results
    if len(failed):
        text += html('<p class="what"><strong class="status-failed">Gate failed</strong> ({{ names }}):</p><ul>'
                     "{% for g in gates %}<li>{{ g }}</li>{% endfor %}</ul>", names=names,
                     gates=[gate_text(g) for _, g in failed.iterrows()])
    elif len(unsure):
        text += html('<p class="what"><strong class="status-skipped">Gate inconclusive</strong> ({{ names }}): no job '
                     "is slower than a threshold beyond noise, but the jobs below could not show it.</p>", names=names)
    else:
        text += html('<p class="what"><strong class="status-ok">Gate passed</strong> ({{ names }}): no job is slower '
                     "than a threshold beyond noise.</p>", names=names)
    if len(unsure):
        text += html('<p class="note"><strong class="status-skipped">Inconclusive</strong> (slower than a threshold '
                     "by the point estimate but within noise, or blind: the launches could not catch a slowdown of "
                     "twice the threshold; not failed -- rerun with more repeats or steps to tell):"
                     "</p><ul>{% for g in gates %}<li>{{ g }}</li>{% endfor %}</ul>",
                     gates=[gate_text(g) for _, g in unsure.iterrows()])
    text += html('<p class="note">A gate fails when the whole {{ level }} interval of how much B is slower (over '
                 "launches) lies past the threshold, not when only the point estimate does: with three launches a "
                 "side, identical reruns come out \"significant\" far more often than {{ alpha }} of the time.</p>",
                 level=f"{100 * CONFIDENCE:.0f} %", alpha=f"{100 * (1 - CONFIDENCE):.0f} %")
    return text


def html_page(table: pd.DataFrame, results: pd.DataFrame, gates: Sequence[Gate],
              env_diffs: Sequence[tuple[str, str, str]], folder_a: Path, folder_b: Path, out_dir: Path,
              plot: Path | None, left_out: Sequence[LeftOut] = (), machine: str = "") -> str:
    """The comparison page: overview (environment, gates), the per-job table, the ratio plot and
    the jobs not compared, then the figure ``left_out`` if it was. Every value from the results enters
    the page as text (autoescaped)."""
    sections = [Section("Overview", _overview(table, results, gates, env_diffs, folder_a, folder_b, machine))]
    compared = table[table["compared"].astype(bool)] if len(table) else table
    if len(compared):
        costed = "cost_per_sample_ratio" in compared and compared["cost_per_sample_ratio"].notna().any()
        header = ["job", "A median (ms)", "B median (ms)", "B against A (mean step)",
                  *(["cost per sample B/A [95 % CI]"] if costed else []), "verdict",
                  f"detectable at {100 * POWER:.0f} %", "method", "gate", "note"]
        cells, classes = [], []
        for (_, r), gate in zip(compared.iterrows(), gate_column(compared, results)):
            cls = {SLOWER: "status-failed", FASTER: "status-ok"}.get(r["verdict"], "")
            failed = f" {FAIL}" in gate
            cells.append([r["job"], num(r["median_ms_a"], ".3f"), num(r["median_ms_b"], ".3f"), r["change"] or "-",
                          *([with_interval(r, "cost_per_sample_ratio", ".3f", mark_missing=False)] if costed else []),
                          html('<span class="{{ cls }}">{{ v }}</span>', cls=cls, v=r["verdict"]) if cls
                          else r["verdict"],
                          r["detectable"], r["method"],
                          html('<span class="{{ cls }}">{{ gate }}</span>', gate=gate,
                               cls="status-failed" if failed else "status-skipped") if gate else "", r["note"]])
            classes.append("bad" if failed else "")
        defs = html('<p class="note">Step times are the slowest rank\'s, measured steps only. <em>B against A</em> '
                "says how many times as fast the faster side is, by the mean step time (the inverse of the "
                "throughput), with its 95 % Student t interval over launches (Welch's t on the log scale; see "
                "docs/statistics.md); compare.csv holds B's speedup (<code>speedup</code>: A's mean step over B's, "
                "below 1 where B is slower) and the ratios B/A of the mean and median steps. The verdict is "
                "<em>slower</em> or <em>faster</em> when that interval excludes 1. Where a side ran a single launch "
                "there is no interval and no call: "
                "<em>cannot tell</em>, with the launches a side that would detect a 5 % slowdown (steps of one "
                "launch are not independent samples of the next, and never stand in for launches). Identical "
                "reruns came out significant 2 to 6 times in 100 at every launch count measured, but 2 launches a side "
                "detect only large changes: use 3 to 5 or more repeats for decisions.</p>")
        defs += html('<p class="note"><em>detectable at {{ power }}</em>: the smallest slowdown of the mean step that '
                 "comparisons with as many launches a side as these, scattering as these do, would call "
                 "<em>slower</em> {{ power }} of the time, the t test's power at the launches' spread (compare.csv's "
                 "<code>mde_false_alarm</code>: how often the same rule calls identical launches slower). Past "
                 "{{ limit }} (B taking twice A's time) the figure says nothing about the job, only that the launches "
                 "see nothing a call asks about: it is replaced by how many launches a side would detect "
                 "{{ effect }}. A side with one launch has no spread: no figure. A gate's own figure is in its line "
                 "above and in compare.csv (<code>gate_mde</code>).</p>", power=f"{100 * POWER:.0f} %",
                 limit=f"+{USEFUL_MDE_PCT:g} %", effect=f"{DEFAULT_EFFECT_PCT:g} %")
        if costed:
            defs += html('<p class="note"><em>cost per sample B/A</em>: each side at the price its folder stored, '
                         "over the same interval as the mean step&rsquo;s (docs/cost-and-energy.md).</p>")
        numeric = {1, 2} if not costed else {1, 2, 4}
        sections.append(Section("Jobs", html_table(header, cells, classes, numeric) + defs))
    if plot is not None:
        sections.append(Section("Ratios", Markup('<p class="what">Mean step time of B divided by A\'s, per job, '
                                                 'with its '
                                "95 % interval over launches (hollow: one launch, no interval); the solid line is no "
                                "change, the dashed lines the relative gates' thresholds. Right of 1 is slower.</p>"),
                                (plot,)))
    rest = table[~table["compared"].astype(bool)] if len(table) else table
    if len(rest):
        status = '<span class="status-{{ s }}">{{ s }}</span>'
        rows = [[r["job"], html("<code>{{ key }}</code>", key=r["key"]), r["match"],
                 html(status, s=r["status_a"]), html(status, s=r["status_b"])]
                for _, r in rest.iterrows()]
        sections.append(Section("Not compared", Markup('<p class="what">Jobs found in only one folder, or that did '
                                                       "not finish ok on both sides: listed, not gated.</p>")
                                + html_table(["job", "key", "in", "status A", "status B"], rows)))
    if left_out:
        sections.append(left_out_section(left_out))
    return render_page(f"ddpbench comparison: {folder_b.name} against {folder_a.name}", sections, out_dir)


def write_comparison(table: pd.DataFrame, results: pd.DataFrame, gates: Sequence[Gate],
                     env_diffs: Sequence[tuple[str, str, str]], folder_a: str | Path, folder_b: str | Path,
                     out_dir: str | Path, machine: str = "") -> dict[str, Path]:
    """Write compare.csv, ratios.png (when a job was compared) and index.html into ``out_dir``.

    ``results`` is :func:`gate_results`' table. Returns the paths written, by kind.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {}
    written["csv"] = replace_file(out_dir / CSV_FILE, csv_text(csv_table(table, results)))
    with warnings.catch_warnings(), leaving_out() as left_out:
        warnings.filterwarnings("ignore", r"Glyph \d+ .* missing from font", UserWarning)  # see build.GLYPH_WARNING
        plot = ratio_plot(table, gates, out_dir / PLOT_FILE)
    if plot is None and (out_dir / PLOT_FILE).exists():
        (out_dir / PLOT_FILE).unlink()  # a stale plot of an earlier comparison
    if plot is not None:
        written["plot"] = plot
    written["html"] = replace_file(out_dir / INDEX_FILE, html_page(table, results, gates, env_diffs, Path(folder_a),
                                                                  Path(folder_b), out_dir, plot, left_out,
                                                                  machine))
    return written
