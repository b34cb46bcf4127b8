"""``python -m ddpbench report``: rebuild ``index.html`` and its figures from a results folder alone."""

from __future__ import annotations

from pathlib import Path

from ddpbench.cli.shared.parsing import add_cost_flags, cost_flags
from ddpbench.errors import InputError
from ddpbench.files.folders import path_flag
from ddpbench.results.schema import RESULTS_FILE


def add_parser(sub) -> None:
    p = sub.add_parser("report", help="write index.html and plots from stored results",
                       description="Regenerate the report from a results folder alone.")
    p.add_argument("results", type=Path, help="folder holding results.jsonl (a sweep's), or steps.csv (a watched "
                                              "run's: ddpbench watch --out)")
    p.add_argument("--out", type=path_flag("--out"), help="where to write the report (default: the results folder; "
                                                          "a new folder or ddpbench's own)")
    p.add_argument("--force", action="store_true", help="write into an --out folder that holds files ddpbench did "
                                                         "not write (only the report's own files are replaced)")
    p.add_argument("--check", action="store_true",
                   help="write nothing: check every figure, interval, direction and measured/estimated claim of the "
                        "verdict and the diagnosis against figures re-derived from the records (ddpbench.audit); "
                        "exit 1 on any problem")
    add_cost_flags(p)  # a price is no measurement: the costs at another one, from the same stored steps
    # its process ends as the report is written, without the teardown of pandas, matplotlib and scipy
    # (ddpbench.cli.program.exit_now), and with the garbage collector off to its end (ddpbench.gc_pause)
    p.set_defaults(func=command, exit_at_once=True, keeps_collector_paused=True)


def _cost(args):
    """The price given by flags over the one the folder stored; None where no flag was given."""
    given = cost_flags(args)
    if not any(v is not None for v in given.values()):
        return None
    from ddpbench.analysis.summary import stored_cost
    from ddpbench.experiment.cost import with_flags
    from ddpbench.results.tables import load_tables

    stored, _ = stored_cost(load_tables(args.results).sweeps)
    return with_flags(stored, given)


def command(args) -> int:
    from ddpbench.watch.windows import is_watched

    if not (args.results / RESULTS_FILE).is_file() and is_watched(args.results):
        return watched(args)
    if not (args.results / RESULTS_FILE).is_file():
        raise InputError(str(args.results), RESULTS_FILE, "not found; give a folder written by `ddpbench sweep` "
                         "or `ddpbench watch`")
    cost = _cost(args)
    if args.check:
        return check(args.results, cost)
    from ddpbench.cli.shared.exits import say_error
    from ddpbench.files.writing import holding, waited_for
    from ddpbench.report.build import write_report  # matplotlib: only for a folder that has results
    from ddpbench.report.workers import wanted

    out = args.out or args.results
    with holding(out, report_claim(args.results, args.out), force=args.force, on_wait=waited_for(say_error, out)):
        # a second process draws figures beside this one, where a CPU is idle to run it
        index = write_report(args.results, args.out, processes=2 if wanted() else 1, cost=cost)
    print(index)
    return 0


def watched(args) -> int:
    """The page of a watched run's folder (``ddpbench watch --out``): into it, or into a report folder."""
    if args.check or any(v is not None for v in cost_flags(args).values()):
        raise InputError("command line", "--check" if args.check else "a cost flag", "applies to a sweep's results; "
                         f"{args.results} is a watched run's folder (its page has no verdict to check, no cost)")
    from ddpbench.cli.shared.exits import say_error
    from ddpbench.files.writing import REPORT, WATCH, Claim, holding, waited_for
    from ddpbench.report.watch_page import WRITES, write_watch_report

    out = args.out or args.results
    claim = Claim(WATCH, "report", writes=WRITES) if _same(out, args.results) else \
        Claim(REPORT, "report", run=str(args.results.resolve()), writes=WRITES)
    with holding(out, claim, force=args.force, on_wait=waited_for(say_error, out)):
        index = write_watch_report(args.results, out)
    print(index)
    return 0


def report_claim(results: Path, out: Path | None):
    """What the report writes (:mod:`ddpbench.files.writing`): into its results folder itself
    (``--out`` not given, or that folder), or a report folder of that results folder."""
    from ddpbench.files.writing import REPORT, RESULTS, Claim
    from ddpbench.report.many import CSV_FILES
    from ddpbench.report.page import INDEX_FILE

    if out is None or _same(out, results):
        # a results folder from anyone opens: a link where its page or a plot goes is replaced by the file
        # (renamed into place), never written through, so it is not refused as it is in a folder of --out
        return Claim(RESULTS, "report")
    return Claim(REPORT, "report", run=str(results.resolve()), writes=(INDEX_FILE, "*.png", *CSV_FILES.values()))


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):  # a link loop: refused as a link when claimed
        return False


def check(folder: Path, cost=None) -> int:
    """The independent checker (:mod:`ddpbench.audit`) over the folder's verdict lines and diagnosis
    (the folder object's contradictions, :attr:`ddpbench.analysis.folder.Measured.contradictions`).
    Nothing to check is refused, never passed: a folder a command is still writing, or one that
    holds no training job (one line, exit 2)."""
    from ddpbench.analysis.folder import load_given
    from ddpbench.files.sanitize import printable
    from ddpbench.files.writing import busy, describe_owner

    owner = busy(folder)
    if owner is not None:
        raise InputError(str(folder), None, f"is being written ({describe_owner(owner)}); nothing in it is final: "
                         "check it when that command ends")
    measured = load_given(folder, cost=cost)
    problems = measured.contradictions
    for p in problems:
        print(printable(p.line()))  # stored names: no terminal escapes
    print(f"{len(measured.findings)} finding(s) and the verdict over {len(measured.summary)} job(s): {len(problems)} "
          "problem(s) against the figures re-derived from the records")
    return 1 if problems else 0
