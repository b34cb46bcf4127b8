"""``python -m ddpbench history page|check``: a history store's trend page, and the merge gate on its
newest commits (:mod:`ddpbench.report.trend_page`, :mod:`ddpbench.analysis.history.newest`)."""

from __future__ import annotations

from pathlib import Path

from ddpbench.errors import InputError
from ddpbench.results.folder import path_flag


def add_verbs(verbs) -> None:
    page = verbs.add_parser("page", help="write the trend page: each job's figures against commits, change points",
                            description="Write index.html, a figure per job and trend.csv, changes.csv and "
                                        "newest.csv for a history store: throughput, efficiency and each phase "
                                        "against commits with their intervals, and the change points found.")
    check = verbs.add_parser("check", help="exit 1 if the newest commits made a series slower beyond noise, or dropped "
                                           "it",
                             description="Test each series' newest commits against its level before them (the commits "
                                         "since its last change point): Welch's 95 % interval over launches, "
                                         "wholly beyond the detector's minimum change. Exit 1 when a series is "
                                         "slower beyond noise, or ran at the commit before the newest and at none "
                                         "of them; 0 otherwise.")
    for verb in (page, check):
        verb.add_argument("--store", type=path_flag("--store"), required=True, metavar="STORE",
                          help="the history store's folder")
        verb.add_argument("--machine", metavar="ID", help="only this machine's series (a folder of the store)")
        verb.add_argument("--newest", type=int, default=1, metavar="N",
                          help="how many of the newest commits to test against the level before them (default 1)")
        verb.add_argument("--job", action="append", metavar="TEXT",
                          help="only the series whose label contains TEXT (repeatable): the jobs a gate is for")
    page.add_argument("--out", type=path_flag("--out"), default=Path("reports/history"), metavar="DIR",
                      help="where the page goes (default reports/history; a new folder or ddpbench's own)")
    page.add_argument("--force", action="store_true", help="write into an --out folder that holds files ddpbench "
                                                            "did not write (only the page's own files are replaced)")
    check.add_argument("--wide", action="store_true", help="each series' whole line: its whole label, both means "
                                                          "and p besides (default: at most 100 columns; newest.csv "
                                                          "holds them all)")
    page.set_defaults(func=command_page)
    check.set_defaults(func=command_check)


def _tables(args):
    from ddpbench.analysis.history import trend_changes
    from ddpbench.analysis.history import newest_changes
    from ddpbench.analysis.history import trend_table

    if not args.store.is_dir():
        raise InputError(str(args.store), None, "no such history store (a folder `history add --store` writes)")
    if args.newest < 1:
        raise InputError("--newest", None, f"must be a whole number of commits, at least 1, not {args.newest}")
    if args.machine is not None and not (args.store / args.machine / "machine.json").is_file():
        raise InputError(f"--machine {args.machine}", None, f"no such machine in {args.store} "
                         "(`history list` names them)")
    table = trend_table(args.store, args.machine)
    if table.empty:
        raise InputError(str(args.store), None, "holds no entry with a finished training job (`history add` files "
                         "a sweep's results)")
    for text in args.job or ():
        if not table["label"].str.contains(text, regex=False).any():
            raise InputError(f"--job {text}", None, "no series' label contains it; the labels: "
                             + "; ".join(sorted(set(table["label"]))))
    if args.job:
        table = table[table["label"].map(lambda label: any(text in label for text in args.job))]
    return table, trend_changes(table), newest_changes(table, args.newest)


def command_page(args) -> int:
    from ddpbench.report.trend_page import OWN_FILES, write_trend
    from ddpbench.results.folder import claim_output

    table, changes, newest = _tables(args)
    claim_output(args.out, "--out", force=args.force, writes=OWN_FILES)
    written = write_trend(table, changes, newest, args.store, args.out, args.newest)
    print(f"{len(table)} points, {len(changes)} change point(s) -> {written['html']}")
    return 0


def _say(head: str, tail: str, wide: bool) -> None:
    """A series' line: its outcome and whole label, then what was measured. Past the console's
    :data:`~ddpbench.cli.console.NARROW` columns (and without ``wide``), what was measured goes on a
    line of its own under the label: a label is never cut, it is what tells two series apart."""
    from ddpbench.cli.console import NARROW

    if wide or len(head) + len(tail) <= NARROW:
        print(head + tail)
    else:
        print(head)
        print(" " * 13 + tail.strip())


def _launches(row) -> str:
    """The launches the test compared, level and newest, and those it set aside (a burst of other work)."""
    aside = int(row["set_aside_level"]) + int(row["set_aside_newest"])
    return (f"launches {int(row['level_launches'])} | {int(row['newest_launches'])}"
            + (f" ({int(row['set_aside_level'])} | {int(row['set_aside_newest'])} set aside)" if aside else ""))


def command_check(args) -> int:
    from ddpbench.analysis.core import MACHINE_DIFFERED
    from ddpbench.analysis.history import SLOWER, CANNOT_TEST, VANISHED

    _, _, newest = _tables(args)
    what = "the newest commit" if args.newest == 1 else f"the newest {args.newest} commits"
    for _, r in newest.iterrows():
        tested = r["outcome"] not in (CANNOT_TEST, VANISHED)
        shown = "" if not tested else (
            f"  {r['step_ms_level']:.2f} -> {r['step_ms_newest']:.2f} ms, x{r['ratio']:.3f} "
            f"[{r['ratio_low']:.3f}, {r['ratio_high']:.3f}], p {r['p_value']:.1e}, {_launches(r)}")
        if not args.wide and tested:  # the ratio, its interval and the launches; the means and p in newest.csv
            shown = f"  x{r['ratio']:.3f} [{r['ratio_low']:.3f}, {r['ratio_high']:.3f}], {_launches(r)}"
        if r["outcome"] == VANISHED:
            shown = f"  ran at {r['level_to'][:12]}, no finished launch at {what} ({r['newest_to'][:12]})"
        _say(f"{r['outcome']:12} {r['label']}", shown, args.wide)
        if r["outcome"] == MACHINE_DIFFERED:  # not failed: the machine explains it as well as the code
            print(f"{'':12} {r['machine_note']}; run the two commits interleaved (python -m ddpbench ab) to tell")
    slower, vanished = (newest[newest["outcome"] == outcome] for outcome in (SLOWER, VANISHED))
    if len(slower) or len(vanished):
        said = [f"{len(slower)} series slower at {what} than their level before, beyond noise"] if len(slower) else []
        said += [f"{len(vanished)} series ran before {what} and not at it (a job dropped, or none of its launches "
                 "finished)"] if len(vanished) else []
        print("FAIL: " + "; ".join(said))
        return 1
    print(f"ok: no series slower at {what} beyond noise ({int((newest['outcome'] == CANNOT_TEST).sum())} "
          f"could not be tested)")
    return 0
