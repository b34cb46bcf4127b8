"""``python -m ddpbench history page|check``: a history store's trend page, and the merge gate on its
newest commits (:mod:`ddpbench.report.trend_page`, :mod:`ddpbench.analysis.history.newest`)."""

from __future__ import annotations

from pathlib import Path

from ddpbench.cli.shared.exits import EXIT_FAILED, EXIT_UNTESTED, say_error
from ddpbench.errors import InputError
from ddpbench.files.folders import path_flag
from ddpbench.show.console import say_wrapped


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
                                         "of them; 3 when no series could be tested and more commits would not "
                                         "change that (fewer than two launches at the newest commits); 0 "
                                         "otherwise, with a line saying what was not tested and why.")
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
    from ddpbench.analysis.history import newest_changes, trend_changes, trend_table

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
    from ddpbench.analysis.core import counted
    from ddpbench.files.writing import PAGE, Claim, holding, waited_for
    from ddpbench.report.trend_page import OWN_FILES, write_trend

    table, changes, newest = _tables(args)
    claim = Claim(PAGE, "history page", run=str(args.store.resolve()), writes=OWN_FILES)
    with holding(args.out, claim, force=args.force, on_wait=waited_for(say_error, args.out)):
        written = write_trend(table, changes, newest, args.store, args.out, args.newest)
    print(f"{counted(len(table), 'point')}, {counted(len(changes), 'change point')} -> {written['html']}")
    return 0


def _launches(row) -> str:
    """The launches the test compared, level and newest, and those it set aside (a burst of other work)."""
    aside = int(row["set_aside_level"]) + int(row["set_aside_newest"])
    return (f"launches {int(row['level_launches'])} | {int(row['newest_launches'])}"
            + (f" ({int(row['set_aside_level'])} | {int(row['set_aside_newest'])} set aside)" if aside else ""))


def command_check(args) -> int:
    from ddpbench.analysis.core import MACHINE_DIFFERED, counted
    from ddpbench.analysis.history import CANNOT_TEST, SLOWER, VANISHED, newest_words

    _, _, newest = _tables(args)
    what = newest_words(args.newest)
    for _, r in newest.iterrows():
        tested = r["outcome"] not in (CANNOT_TEST, VANISHED)
        if tested and args.wide:  # the means and p besides; all of them in newest.csv
            shown = [f"{r['step_ms_level']:.2f} -> {r['step_ms_newest']:.2f} ms", r["change"], f"p {r['p_value']:.1e}",
                     _launches(r)]
        elif tested:
            shown = [r["change"], _launches(r)]
        elif r["outcome"] == CANNOT_TEST:
            shown = [r["why_untested"]]
        else:
            shown = [f"ran at {r['level_to'][:12]}", f"no finished launch at {what} ({r['newest_to'][:12]})"]
        say_wrapped(f"{r['outcome']:12} {r['label']}", shown, args.wide)
        if r["outcome"] == MACHINE_DIFFERED:  # not failed: the machine explains it as well as the code
            print(f"{'':12} {r['machine_note']}; run the two commits interleaved (python -m ddpbench ab) to tell")
    slower, vanished = (newest[newest["outcome"] == outcome] for outcome in (SLOWER, VANISHED))
    if len(slower) or len(vanished):
        said = [f"{counted(len(slower), 'series')} slower at {what} than their level before, beyond noise"] \
            if len(slower) else []
        said += [f"{counted(len(vanished), 'series')} ran before {what} and not at it (a job dropped, or none of "
                 "its launches finished)"] if len(vanished) else []
        print("FAIL: " + "; ".join(said))
        return EXIT_FAILED
    return _untested_line(newest, what, args.newest)


def _untested_line(newest, what: str, count: int) -> int:
    """The gate's last line where nothing failed, and its exit code. Where no series could be tested it
    says why, each reason counted, and does not say ok: 0 where only the store is young (fewer commits
    at a level than the test needs; the next commits filed heal it), :data:`EXIT_UNTESTED` where some
    series could not be tested however long one waits (fewer than two launches at the newest commits)."""
    from ddpbench.analysis.core import counted
    from ddpbench.analysis.history import CANNOT_TEST, FEW_COMMITS, FEW_NEWEST_LAUNCHES

    untested = newest[newest["outcome"] == CANNOT_TEST]
    reasons = "; ".join(f"{counted(n, 'series')} with {why}"
                        for why, n in untested["why_untested"].value_counts(sort=False).items())
    tested = len(newest) - len(untested)
    if tested:
        print(f"ok: no series slower at {what} beyond noise ({counted(tested, 'series')} tested"
              + (f"; not tested: {reasons})" if len(untested) else ")"))
        return 0
    if set(untested["untested"]) == {FEW_COMMITS}:
        print(f"nothing tested yet at {what}: {reasons}; a young store, whose next commits give each level "
              "the commits the test needs")
        return 0
    advice = (f"run 2 or more launches a commit (repeats), or test the newest commits together (--newest "
              f"{max(2, count + 1)})" if FEW_NEWEST_LAUNCHES in set(untested["untested"]) else
              "run 2 or more launches a commit (repeats)")
    print(f"NOT TESTED: no series could be tested at {what}: {reasons}; {advice}")
    return EXIT_UNTESTED
