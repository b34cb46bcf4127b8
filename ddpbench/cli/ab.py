"""``python -m ddpbench ab BASE CANDIDATE [EXPERIMENT]``: two versions of a training, measured in
randomized interleaved rounds until decided or out of time (:mod:`ddpbench.sweep.ab`)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from ddpbench.cli.shared.parsing import finite_float
from ddpbench.errors import InputError
from ddpbench.files.folders import path_flag

DEFAULT_EXPERIMENT = "experiments/quick.toml"
DEFAULT_BUDGET_S = 120.0
DEFAULT_MAX_ROUNDS = 50


def add_parser(sub) -> None:
    p = sub.add_parser(
        "ab", help="A/B two versions of your training, the sides run interleaved in random order, round by round",
        description="Measure BASE against CANDIDATE in randomized interleaved rounds: each round runs one launch "
                    "of every job on each side, the sides in random order, so a machine that drifts or a busy "
                    "neighbour falls on both alike. After every round each job is judged by an interval that stays "
                    "valid however many rounds are looked at; the A/B stops once every job is slower, faster or "
                    "the same within --same-within, or when --budget is spent. A side is an experiment file, or a "
                    "git revision of the repository holding EXPERIMENT (checked out into a worktree). Jobs pair by "
                    "their settings, else within a world size by the fewest settings that differ (the label says "
                    "which); a job without a pair is listed as unpaired. Exit code 1 with --fail-on-slower when a "
                    "job is slower, 2 for bad input.")
    p.add_argument("base", metavar="BASE", help="experiment file, or git revision (the baseline)")
    p.add_argument("candidate", metavar="CANDIDATE", help="experiment file, or git revision")
    p.add_argument("experiment", nargs="?", default=DEFAULT_EXPERIMENT, metavar="EXPERIMENT",
                   help=f"for revisions: the experiment file inside the repository (default: {DEFAULT_EXPERIMENT})")
    p.add_argument("--repo", type=path_flag("--repo"), default=Path("."),
                   help="the git repository of revisions (default: the current folder's)")
    p.add_argument("--budget", type=finite_float, default=DEFAULT_BUDGET_S, metavar="S",
                   help=f"stop starting rounds after S seconds of rounds (default: {DEFAULT_BUDGET_S:g}; the "
                        "sides' start and the round under way come on top)")
    p.add_argument("--max-rounds", type=int, default=DEFAULT_MAX_ROUNDS, metavar="N",
                   help=f"at most N rounds (default: {DEFAULT_MAX_ROUNDS}); no call is made before the fifth")
    p.add_argument("--same-within", type=finite_float, default=None, metavar="PCT",
                   help="call a job the same once its whole interval lies within PCT %% of 1 either way (default: 5)")
    p.add_argument("--seed", type=int, default=None, help="the rounds' random order (default: drawn, and recorded)")
    p.add_argument("--fail-on-slower", action="store_true", help="exit 1 when a job is called slower")
    p.add_argument("--out", type=path_flag("--out"),
                   help="output folder: A/ and B/ (results folders), their logs and ab.json (default: reports/ab)")
    p.add_argument("--force", action="store_true", help="write into an --out folder (and its A/, B/) that holds "
                                                         "files ddpbench did not write; handed to both sides")
    p.set_defaults(func=command)


def checked(args) -> tuple[float, int, float]:
    """(budget s, max rounds, same-within as a fraction), each in its range: one line otherwise."""
    from ddpbench.analysis.core import AB_SAME_WITHIN

    if not 0 < args.budget <= 7 * 86400:
        raise InputError("command line", "--budget", f"must be above 0 and at most 604800 s (got {args.budget:g})")
    if not 1 <= args.max_rounds <= 10_000:
        raise InputError("command line", "--max-rounds", f"must be 1 to 10000 (got {args.max_rounds})")
    within = AB_SAME_WITHIN if args.same_within is None else args.same_within / 100
    if not 0 < within < 1:
        raise InputError("command line", "--same-within", f"must be above 0 and below 100 (got {100 * within:g})")
    return args.budget, args.max_rounds, within


def command(args) -> int:
    import random

    from rich.console import Console

    from ddpbench.analysis.history import SLOWER
    from ddpbench.cli.shared.exits import EXIT_BAD_INPUT, EXIT_FAILED, say_error
    from ddpbench.files.writing import holding
    from ddpbench.sweep.ab import LOG_FILE, SideFailed, ab_claim, check_sides, plan_sides

    budget, max_rounds, within = checked(args)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    console = Console(stderr=True, highlight=False)
    with tempfile.TemporaryDirectory(prefix="ddpbench-ab-", ignore_cleanup_errors=True) as scratch:
        plans = plan_sides(args.base, args.candidate, args.experiment, args.repo, Path(scratch))
        out_dir = args.out or Path("reports") / "ab"
        check_sides(out_dir, args.force)  # before anything starts: a side would refuse its folder only later
        with holding(out_dir, ab_claim(plans), force=args.force):
            for plan in plans:
                console.print(f"{plan.name}: {plan.given} ({plan.kind}{', ' + plan.sha[:12] if plan.sha else ''})")
            console.print(f"rounds until every job is decided, at most {max_rounds} or {budget:g} s; seed {seed} "
                          f"-> {out_dir}/")
            try:
                outcome = _run(plans, out_dir, args, budget, max_rounds, within, seed, console)
            except SideFailed as err:  # one line: a side refused its experiment (2) or failed (1); rounds are kept
                if err.interrupted:
                    raise KeyboardInterrupt from err
                say_error(f"error: {err}")
                return EXIT_BAD_INPUT if err.code == EXIT_BAD_INPUT else EXIT_FAILED
    out = Console(highlight=False, soft_wrap=True)
    for line in outcome_lines(outcome, args.base, args.candidate, out_dir / LOG_FILE):
        out.print(line, markup=False)
    return 1 if args.fail_on_slower and any(call.call == SLOWER for call in outcome.calls) else 0


def _run(plans, out_dir: Path, args, budget: float, max_rounds: int, within: float, seed: int, console):
    """The rounds of :func:`ddpbench.sweep.ab.run_ab`, with the console's bar and lines."""
    from ddpbench.sweep.ab import SIDES, launch_line, run_ab
    from ddpbench.sweep.progress import SweepProgress

    with SweepProgress(None, console) as bar:
        bar.begin("starting the sides")
        expected: list[int | None] = [None]  # the launches the bar counts to: unknown in the first round

        def progress(number: int, calls) -> None:
            console.print(f"  {round_line(number, calls)}")
            left = sum(not call.decided for call in calls)
            expected[0] = bar.completed + len(SIDES) * left
            bar.begin(f"round {number + 2}: {left} of {len(calls)} jobs left")

        def launched(number: int, side: str, record: dict) -> None:
            label, status, line = launch_line(record)
            if expected[0] is None:
                bar.begin(f"round {number + 1}: side {side}")
            bar.done(f"{side} {label}", status, f"round {number + 1}  {line}".rstrip(), total=expected[0])

        return run_ab(plans, out_dir, budget_s=budget, max_rounds=max_rounds, same_within=within, seed=seed,
                      report=progress, repo=args.repo, report_launch=launched, force=args.force)


def round_line(number: int, calls) -> str:
    """The console's line after round ``number`` (from 0): ``round 3: 1 of 4 jobs decided``."""
    decided = sum(call.decided for call in calls)
    return f"round {number + 1}: {decided} of {len(calls)} job{'' if len(calls) == 1 else 's'} decided"


def outcome_lines(outcome, base: str, candidate: str, log) -> list[str]:
    """What the A/B found, line by line: its rounds and why it stopped, each pair's call under its label
    (what differs between its two jobs, where anything does), each job left unpaired, the machine, and
    where the record is (``log``)."""
    from ddpbench.analysis.history import rounds_text

    lines = [f"A/B of {candidate} (B) against {base} (A) over {rounds_text(len(outcome.rounds))}, interleaved; "
             f"stopped: {outcome.stopped}"]
    if not outcome.calls:
        lines.append("no job of A pairs with one of B (a pair shares its world size)")
    lines += [f"  {call.label}: {call.words()}" for call in outcome.calls]
    if outcome.unpaired:
        lines.append(f"unpaired, run in the first round only ({len(outcome.unpaired)}):")
        lines += [f"  {job.words()}" for job in outcome.unpaired]
    if outcome.machine:
        lines.append(f"machine: {outcome.machine}")
    lines.append(f"(each call's 95 % interval holds at whatever round the A/B stopped; {log})")
    return lines
