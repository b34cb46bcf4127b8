"""``python -m ddpbench compare A B``: B's jobs against baseline A's, with significance over launches,
optionally gated (``--fail-on``); exit code 1 when a gate fails."""

from __future__ import annotations

from pathlib import Path

from ddpbench.cli.tables import print_comparison
from ddpbench.errors import InputError
from ddpbench.results.folder import path_flag


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
    from ddpbench.analysis.core import CONTENDED_CORES, MACHINE_BUSY

    busy = int((table["verdict"] == MACHINE_BUSY).sum()) if len(table) and "verdict" in table else 0
    if not busy:
        return ""
    return (f"{busy} job(s) not called slower or faster: other processes took {CONTENDED_CORES:g} cores or more "
            "during some of their launches on the side the call leaned to (each row says how many); run the two "
            "interleaved for a fair answer: python -m ddpbench ab")


def command(args) -> int:
    from rich.console import Console
    from rich.markup import escape

    from ddpbench.analysis.core import POWER, machine_difference, mde_amount
    from ddpbench.analysis.history import (
        FAIL, INCONCLUSIVE, PASS, compare_tables, environment_differences, gate_results, gate_text, load_side,
        parse_gate, side_busy,
    )
    from ddpbench.report.compare_page import CSV_FILE, INDEX_FILE, PLOT_FILE, write_comparison
    from ddpbench.results.folder import claim_output
    from ddpbench.results.sanitize import printable

    gates = [parse_gate(text) for text in args.fail_on]
    side_a = load_side(args.baseline, "A")
    side_b = load_side(args.candidate, "B")
    if not set(side_a.summary["key"]) & set(side_b.summary["key"]):
        raise InputError("command line", None, f"A ({args.baseline}) and B ({args.candidate}) have no job in "
                         "common (jobs match when every setting is equal); compare folders of the same experiment")
    out_dir = args.out or args.candidate / "compare"
    claim_output(out_dir, "--out", force=args.force, writes=(CSV_FILE, PLOT_FILE, INDEX_FILE))
    machine = machine_difference(side_a.ranks, side_b.ranks)
    table = compare_tables(side_a.summary, side_a.steps, side_b.summary, side_b.steps, machine,
                           (side_busy(side_a), side_busy(side_b)))
    results = gate_results(table, gates)
    env_diffs = environment_differences(side_a.sweeps, side_b.sweeps)
    print_comparison(table, args.wide)
    written = write_comparison(table, results, gates, env_diffs, args.baseline, args.candidate, out_dir,
                               machine=machine.words() if machine is not None else "")
    out = Console(highlight=False, soft_wrap=True)
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
            out.print(f"[red]gate failed[/red] ({names}): {failed['key'].nunique()} job(s) slower than a "
                      "threshold beyond noise")
        elif len(unsure):
            detectable = unsure["mde"].dropna()
            span = (f"; the smallest slowdown they detect at {100 * POWER:.0f} % is "
                    f"{mde_amount(detectable.min(), unsure.iloc[0]['unit'])}"
                    f" to {mde_amount(detectable.max(), unsure.iloc[0]['unit'])}" if len(detectable) else "")
            out.print(f"[yellow]gate inconclusive[/yellow] ({names}): no job is slower beyond noise, but "
                      f"{unsure['key'].nunique()} job(s) could not show it{span}")
        else:
            out.print(f"[green]gate passed[/green] ({names}): no job is slower than a threshold beyond noise")
        for _, g in results[results["outcome"] != PASS].iterrows():
            out.print(f"  {printable(gate_text(g))}", markup=False)
    out.print(f"report: {written['html']}", markup=False)
    return 1 if len(failed) else 0
