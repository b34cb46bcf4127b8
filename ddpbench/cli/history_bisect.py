"""``python -m ddpbench history bisect``: the first commit between a good and a bad one that changed an
experiment's step, each commit swept in a worktree of its own (:mod:`ddpbench.sweep.bisect`)."""

from __future__ import annotations

from pathlib import Path

from ddpbench.cli.shared.exits import EXIT_FAILED
from ddpbench.files.folders import path_flag


def add_verb(verbs) -> None:
    """Register ``bisect`` on the ``history`` command's verbs."""
    p = verbs.add_parser("bisect", help="find the commit that changed an experiment's step, in about log2 sweeps",
                         description="Sweep EXPERIMENT at the good and the bad commit of a git repository, then at "
                                     "commits between them (binary search over the first-parent chain, each in a "
                                     "worktree of its own) and name the first bad one. A commit is good or bad by "
                                     "Welch's t-test over its launches against good's and bad's; one that cannot "
                                     "tell after more launches ends the search with the range that is left. Each "
                                     "sweep's results are kept under --out, with the search's log, bisect.json.")
    p.add_argument("experiment", metavar="EXPERIMENT", help="the experiment file's path inside the repository")
    p.add_argument("--good", required=True, metavar="REV", help="a commit whose step is as it should be")
    p.add_argument("--bad", required=True, metavar="REV", help="a later commit (a descendant of --good) whose step "
                   "changed")
    p.add_argument("--repo", type=path_flag("--repo"), default=Path("."), metavar="PATH",
                   help="the git repository (default: this folder)")
    p.add_argument("--out", type=path_flag("--out"), metavar="DIR",
                   help="the folder for each commit's results and bisect.json (default: reports/bisect-<good>-<bad>)")
    p.add_argument("--job", metavar="LABEL", help="the job to follow, by its label or key (default: the one whose "
                   "step changed most from good to bad)")
    p.add_argument("--store", type=path_flag("--store"), metavar="STORE",
                   help="also file each sweep into this history store, at its commit")
    p.set_defaults(func=command)


def command(args) -> int:
    from ddpbench.sweep.bisect import describe, run_bisect

    outcome, commits, out = run_bisect(args.repo, args.experiment, args.good, args.bad, out=args.out, job=args.job,
                                       store=args.store)
    for line in describe(outcome, commits):
        print(line)
    print(f"results of each commit and bisect.json in {out}")
    return 0 if outcome.status == "found" else EXIT_FAILED
