"""``python -m ddpbench compare A B``: B's jobs against baseline A's, with significance over launches,
optionally gated (``--fail-on``); exit code 1 when a gate fails."""

from __future__ import annotations

from pathlib import Path

from ddpbench.errors import InputError
from ddpbench.files.folders import path_flag
from ddpbench.show.console_tables import print_comparison


def add_parser(sub) -> None:
    p = sub.add_parser("compare", help="compare two results folders job by job (B against baseline A)",
                       description="Match the jobs of two results folders by their settings and report B's step "
                                   "time against A's, with significance over launches; optionally fail on a "
                                   "regression. Exit code 1 when a --fail-on gate fails, 2 for bad input.")
    p.add_argument("baseline", type=Path, metavar="A", help="baseline results folder")
    p.add_argument("candidate", type=Path, metavar="B", help="candidate results folder")
    p.add_argument("--fail-on", action="append", default=[], metavar="STAT:THRESHOLD",
                   help="fail (exit 1) when a job of B is slower than in A by more than the threshold beyond "
                        "noise (the whole 95%% interval over launches past it): median:5%%, mean:10%% (mean step "
                        "= inverse throughput), median:2ms, or median:0.002 (a bare number is seconds, as in "
                        "pytest-benchmark's --benchmark-compare-fail); repeatable")
    p.add_argument("--out", type=path_flag("--out"), help="where to write compare.csv, index.html, ratios.png "
                                                          "(default: B/compare; a new folder or ddpbench's own)")
    p.add_argument("--wide", action="store_true", help="print every column at full width (default: at most 100 "
                                                      "columns; compare.csv and the page hold them all)")
    p.add_argument("--force", action="store_true", help="write into an --out folder that holds files ddpbench did "
                                                         "not write (only compare's own files are replaced)")
    p.set_defaults(func=command)


def busy_line(table) -> str:
    """The line that says how many jobs compare did not call because the machine was busy; "" where none."""
    from ddpbench.analysis.core import CONTENDED_CORES, MACHINE_BUSY, counted

    busy = int((table["verdict"] == MACHINE_BUSY).sum()) if len(table) and "verdict" in table else 0
    if not busy:
        return ""
    return (f"{counted(busy, 'job')} not called slower or faster: other processes took {CONTENDED_CORES:g} cores or "
            f"more during some of {'its' if busy == 1 else 'their'} launches on the side the call leaned to (each row "
            "says how many); run the two interleaved for a fair answer: python -m ddpbench ab")


def detectable_span(unsure) -> str:
    """What the inconclusive gates could have seen, for the gate line: "; the smallest slowdown they detect
    at 90 % is +12.0 % to +40.1 %", each unit apart. Those past
    :data:`~ddpbench.analysis.core.thresholds.USEFUL_MDE_PCT` are counted, not quoted: their own lines say
    how many launches a side would detect what the gate guards against."""
    from ddpbench.analysis.core import POWER, USEFUL_MDE_PCT, counted, mde_amount
    from ddpbench.analysis.history import mde_limit

    said = []
    for unit, rows in unsure[unsure["mde"].notna()].groupby("unit", sort=False):
        past = rows["mde"] > [mde_limit(unit, a_ms) for a_ms in rows["a_ms"]]
        useful = rows[~past]
        if len(useful):
            low, high = mde_amount(useful["mde"].min(), unit), mde_amount(useful["mde"].max(), unit)
            said.append(f"the smallest slowdown they detect at {100 * POWER:.0f} % is "
                        + (low if low == high else f"{low} to {high}"))
        if past.any():
            said.append(f"{counted(int(past.sum()), 'gate')} on {counted(rows[past]['key'].nunique(), 'job')} "
                        f"could not detect even +{USEFUL_MDE_PCT:g} % of A's step (each line says how many "
                        "launches a side would detect what it guards against)")
    return "".join(f"; {text}" for text in said)


def command(args) -> int:
    from rich.console import Console
    from rich.markup import escape

    from ddpbench.analysis.core import counted, machine_difference
    from ddpbench.analysis.history import (
        FAIL,
        INCONCLUSIVE,
        PASS,
        compare_tables,
        detectable_notes,
        environment_differences,
        gate_results,
        gate_text,
        load_side,
        parse_gate,
        side_busy,
    )
    from ddpbench.cli.shared.exits import say_error
    from ddpbench.files.sanitize import printable
    from ddpbench.files.writing import COMPARE, Claim, holding, waited_for
    from ddpbench.report.compare_page import CSV_FILE, INDEX_FILE, PLOT_FILE, write_comparison

    gates = [parse_gate(text) for text in args.fail_on]
    side_a = load_side(args.baseline, "A")
    side_b = load_side(args.candidate, "B")
    if not set(side_a.summary["key"]) & set(side_b.summary["key"]):
        raise InputError("command line", None, f"A ({args.baseline}) and B ({args.candidate}) have no job in "
                         "common (jobs match when every setting is equal); compare folders of the same experiment")
    out_dir = args.out or args.candidate / "compare"
    claim = Claim(COMPARE, "compare", run=f"{args.baseline.resolve()} vs {args.candidate.resolve()}",
                  writes=(CSV_FILE, PLOT_FILE, INDEX_FILE))
    with holding(out_dir, claim, force=args.force, on_wait=waited_for(say_error, out_dir)):
        machine = machine_difference(side_a.ranks, side_b.ranks)
        table = compare_tables(side_a.summary, side_a.steps, side_b.summary, side_b.steps, machine,
                               (side_busy(side_a), side_busy(side_b)))
        results = gate_results(table, gates)
        env_diffs = environment_differences(side_a.sweeps, side_b.sweeps)
        print_comparison(table, args.wide)
        written = write_comparison(table, results, gates, env_diffs, args.baseline, args.candidate, out_dir,
                                   machine=machine.words() if machine is not None else "")
    out = Console(highlight=False, soft_wrap=True)
    for note in detectable_notes(table):
        out.print(printable(note), markup=False)
    for what, va, vb in env_diffs:
        out.print(f"[yellow]warning[/yellow]: the environments differ in {escape(printable(what))}: "
                  f"A {escape(printable(va))} vs B {escape(printable(vb))}")
    if machine is not None:
        out.print(("[yellow]warning[/yellow]: " if machine.differed else "") + escape(machine.words()))
    busy = busy_line(table)
    if busy:
        out.print(f"[yellow]warning[/yellow]: {escape(busy)}")
    failed = results[results["outcome"] == FAIL]
    if gates:
        names = ", ".join(map(str, gates))
        unsure = results[results["outcome"] == INCONCLUSIVE]
        if len(failed):
            out.print(f"[red]gate failed[/red] ({names}): {counted(failed['key'].nunique(), 'job')} slower than a "
                      "threshold beyond noise")
        elif len(unsure):
            out.print(f"[yellow]gate inconclusive[/yellow] ({names}): no job is slower beyond noise, but "
                      f"{counted(unsure['key'].nunique(), 'job')} could not show it{escape(detectable_span(unsure))}")
        else:
            out.print(f"[green]gate passed[/green] ({names}): no job is slower than a threshold beyond noise")
        for _, g in results[results["outcome"] != PASS].iterrows():
            out.print(f"  {printable(gate_text(g))}", markup=False)
    out.print(f"report: {written['html']}", markup=False)
    return 1 if len(failed) else 0
