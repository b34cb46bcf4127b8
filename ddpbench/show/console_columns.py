"""The console's table columns of what the analysis found, declared one column at a time
(:class:`ddpbench.show.tables.Col`: heading, cell, right-aligned where it holds a figure), each with
what its columns read besides a row: the summary of a sweep (ending with the figures
:data:`ddpbench.show.tables.SHOWN` shows on the console) and two folders compared.
:mod:`ddpbench.show.console_tables` prints them, and imports this only then: it reads the analysis."""

from __future__ import annotations

import math

from rich.markup import escape

from ddpbench.analysis.core import COLUMNS, EFFICIENCY, POWER, SAMPLES_PER_S, SPEEDUP, STEP_MS, model_name
from ddpbench.analysis.history import FASTER, SLOWER, detectable_cell, speedup_text
from ddpbench.files.sanitize import printable
from ddpbench.show.budget import comm_cell
from ddpbench.show.console import num
from ddpbench.show.tables import Col, shown


class Sweep:
    """What the summary's columns read besides a row: which settings vary between its jobs."""

    def __init__(self, table, wide: bool = True):
        self.table, self.wide = table, wide
        self.nodes = "emulate_nodes" in table and bool((table["emulate_nodes"] > 1).any())
        self.devices = table["device"].nunique() > 1  # CPU jobs beside GPU ones
        # compute precision and compilation, where any job ran other than fp32 eager
        self.settings = "precision" in table and bool(((table["precision"] != "fp32")
                                                        | table["compile"].astype(bool)).any())
        # the strategy and the status say something only where they differ: shown always with --wide
        self.strategies = table["strategy"].nunique() > 1 or bool((table.get("comm_hook", "none") != "none").any())
        self.failures = bool((table["status"] != "ok").any())


def _strategy(r, sweep) -> str:
    return r["strategy"] + (f"+{r['comm_hook']}" if r.get("comm_hook", "none") != "none" else "")


def _comm(r, sweep) -> str:
    """Communication a step waits for: explicit (after backward) plus what DDP's overlap left exposed, where
    that may be quoted (:func:`~ddpbench.show.budget.comm_cell`: none at one rank, n/m where not measurable)."""
    return comm_cell(r)[0]


def _flags(r, sweep) -> str:
    flags = [f for f in ("oversubscribed", "noisy") if r[f]]
    if (r.get("contended_launches") or 0) > 0:  # launches that ran beside other work (analysis.core.machine)
        flags.append(f"contended {int(r['contended_launches'])}/{int(r['repeats_ok'])}")
    if r.get("exact") is False:
        flags.append("lossy")
    if r["strategy"] == "dp" and r["device"] == "cpu":
        flags.append("1 replica: CPU baseline")
    return ", ".join(flags)


def console_cell(shown, row, sweep) -> str:
    """A :data:`~ddpbench.show.tables.SHOWN` figure on the console: the number alone."""
    return num(row.get(shown.column, math.nan), shown.fmt)


#: the summary of a sweep, one declaration a column; the figures SHOWN declares for the console before the flags
SUMMARY = (
    Col("strategy", _strategy, numeric=False, max_width=14, when=lambda sweep: sweep.strategies or sweep.wide),
    Col("model", lambda r, sweep: model_name(r, sweep.table), numeric=False, max_width=18),
    Col("compute", lambda r, sweep: f"{r['precision']} {'compiled' if r['compile'] else 'eager'}", numeric=False,
        when=lambda sweep: sweep.settings),
    Col("device", lambda r, sweep: f"{r['backend']}/{r['device']}", numeric=False, when=lambda sweep: sweep.devices),
    Col("ws", lambda r, sweep: str(r["world_size"])),
    Col("nodes x link", lambda r, sweep: f"{r['emulate_nodes']} x {r['link']}" if r["emulate_nodes"] > 1 else "-",
        when=lambda sweep: sweep.nodes),
    Col(f"bucket {COLUMNS['bucket_cap_mb'].unit}", lambda r, sweep: f"{r['bucket_cap_mb']:g}"),
    Col("status", lambda r, sweep: r["status"], numeric=False, when=lambda sweep: sweep.failures or sweep.wide),
    Col(f"step {COLUMNS[STEP_MS].unit}", lambda r, sweep: num(r[STEP_MS], ".2f")),
    Col("IQR", lambda r, sweep: num(r["step_ms_iqr"], ".2f"), wide_only=True),
    Col(COLUMNS[SAMPLES_PER_S].unit, lambda r, sweep: num(r[SAMPLES_PER_S], ".1f")),
    Col("speedup", lambda r, sweep: num(r[SPEEDUP], ".2f")),
    Col("eff.", lambda r, sweep: num(r[EFFICIENCY], ".0%"), wide_only=True),
    Col("comm ms", _comm),
    *shown("console", console_cell),
    Col("flags", _flags, numeric=False, max_width=14),
)


class Compared:
    """What the comparison's columns read besides a row: whether some job has a cost or energy ratio."""

    def __init__(self, compared):
        self.costed = bool(compared["cost_per_sample_ratio"].notna().any()) if "cost_per_sample_ratio" in compared \
            else False
        self.energy = bool(compared["energy_j_per_sample_ratio"].notna().any()) \
            if "energy_j_per_sample_ratio" in compared else False


def _ratio_with_interval(r, column: str) -> str:
    """``B/A [low, high]``, or the ratio alone without its interval; a dash without it."""
    low, high = r.get(f"{column}_low", float("nan")), r.get(f"{column}_high", float("nan"))
    text = num(r[column], ".3f")
    return f"{text} [{low:.3f}, {high:.3f}]" if low == low and high == high else text


def _verdict(r, _) -> str:
    style = {SLOWER: "red", FASTER: "green"}.get(r["verdict"], "")
    verdict = escape(printable(r["verdict"]))
    return f"[{style}]{verdict}[/{style}]" if style else verdict


def _words(column: str, max_width: int | None = None, wide_only: bool = False) -> Col:
    """A stored string: no terminal escape sequence, no rich markup."""
    return Col(column, lambda r, _: escape(printable(r[column])), numeric=False, max_width=max_width,
               wide_only=wide_only)


#: B against baseline A, per job
COMPARISON = (
    _words("job", max_width=32),
    Col("A median ms", lambda r, _: num(r["median_ms_a"], ".3f"), wide_only=True),
    Col("B median ms", lambda r, _: num(r["median_ms_b"], ".3f"), wide_only=True),
    Col("B speedup (95% CI)", lambda r, _: speedup_text(r)),
    Col("cost/sample B/A", lambda r, _: _ratio_with_interval(r, "cost_per_sample_ratio"), when=lambda c: c.costed),
    Col("J/sample B/A", lambda r, _: num(r["energy_j_per_sample_ratio"], ".3f"), when=lambda c: c.energy),
    Col("verdict", _verdict, numeric=False, whole=True),
    Col(f"detects ({100 * POWER:.0f}%)", lambda r, _: escape(printable(detectable_cell(r)))),
    _words("method", wide_only=True),
    _words("note", wide_only=True),
)
