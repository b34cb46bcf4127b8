"""``python -m ddpbench history add|list``: file a sweep's results into a history store under its
machine and the commit it measured, and list what a store holds (:mod:`ddpbench.results.history`)."""

from __future__ import annotations

from pathlib import Path

from ddpbench.cli import history_trend
from ddpbench.errors import InputError
from ddpbench.files.folders import path_flag


def add_parser(sub) -> None:
    p = sub.add_parser("history", help="keep sweeps by machine and commit: a history of a project's scaling",
                       description="A history store is a folder of sweeps filed by machine (a fingerprint of "
                                   "CPU, cores, GPUs, torch, CUDA and NCCL) and by the commit they measured. "
                                   "Filing only ever appends; the folder travels as a CI artifact or a branch.")
    verbs = p.add_subparsers(dest="verb", required=True, metavar="VERB", parser_class=type(p))  # one-line errors
    add = verbs.add_parser("add", help="file a results folder or a pytest-benchmark JSON under its machine and commit",
                           description="File a sweep's results folder, or a pytest-benchmark run's JSON (pytest "
                                       "--benchmark-json FILE.json), into the store. The commit is --commit, "
                                       "or the HEAD of the git repository --repo (default: this folder), with "
                                       "its date; filing the same sweeps (or benchmark run) at the same commit "
                                       "again is refused.")
    add.add_argument("results", type=Path, metavar="DIR|FILE.json",
                     help="the sweep's results folder (holding results.jsonl), or a pytest-benchmark JSON file")
    add.add_argument("--store", type=path_flag("--store"), required=True, metavar="STORE",
                     help="the history store's folder (a new folder or a store ddpbench wrote)")
    add.add_argument("--force", action="store_true", help="file into a --store folder that holds files ddpbench "
                                                           "did not write")
    add.add_argument("--commit", metavar="REV", help="the commit the sweep measured (default: --repo's HEAD)")
    add.add_argument("--repo", type=path_flag("--repo"), default=Path("."), metavar="PATH",
                     help="the git repository whose commit the sweep measured (default: this folder)")
    add.set_defaults(func=command_add)
    listing = verbs.add_parser("list", help="list the store's entries, machine by machine",
                               description="List every entry of the store: its machine, number, commit and date.")
    listing.add_argument("--store", type=path_flag("--store"), required=True, metavar="STORE",
                         help="the history store's folder")
    listing.set_defaults(func=command_list)
    from ddpbench.cli import history_bisect  # bisect: its own module (sweeps in worktrees)
    history_bisect.add_verb(verbs)
    history_trend.add_verbs(verbs)  # page, check


def command_add(args) -> int:
    from ddpbench.results.history import COMMIT, file_benchmark, file_results
    from ddpbench.sweep.revisions import NotARepository, commit, commit_date

    try:  # the commit resolved and dated in the repository (ddpbench.sweep.revisions: the one check)
        sha = commit(args.repo, *(("HEAD", "--repo") if args.commit is None else (args.commit, "--commit")))
        date = commit_date(args.repo, sha)
    except NotARepository:
        if args.commit is None or not COMMIT.match(args.commit):
            raise
        sha, date = args.commit, None  # named where no repository is: a commit's hex digits
    filing = file_results if args.results.is_dir() else file_benchmark  # a file: a pytest-benchmark run's JSON
    entry = filing(args.store, args.results, commit=sha, commit_date=date, force=args.force)
    print(f"filed {args.results} as entry {entry.number} of machine {entry.machine} at commit {sha[:12]}"
          f"{f' ({date})' if date else ''} -> {entry.path}")
    return 0


def command_list(args) -> int:
    from ddpbench.results.history import entries

    if not args.store.is_dir():
        raise InputError(str(args.store), None, "no such history store (a folder `history add --store` writes)")
    found = entries(args.store)
    machine = None
    for entry in found:
        if entry.machine != machine:
            machine = entry.machine
            print(machine)
        print(f"  {entry.number:6d}  {(entry.commit or 'no commit')[:12]:12}  {entry.commit_date or '':25}  "
              f"{f'benchmark run {entry.run_datetime}' if entry.kind == 'benchmark' else ', '.join(entry.sweep_ids)}")
    print(f"{len(found)} entr{'y' if len(found) == 1 else 'ies'} in {args.store}")
    return 0
