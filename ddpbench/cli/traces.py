"""``python -m ddpbench traces``: answer from the PyTorch profiler traces of any data-parallel job, one
file per rank (docs/traces.md): where each step went, which rank the others waited for, the
collectives and DDP's buckets as they ran, and what to change."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

from ddpbench.cli.shared.folders import add_folder_flags
from ddpbench.cli.shared.parsing import whole_number
from ddpbench.errors import InputError
from ddpbench.files.folders import path_flag
from ddpbench.launch.ray_address import FORMS, check_form


def add_parser(sub) -> None:
    p = sub.add_parser("traces", help="answer from a folder of per-rank profiler traces (any job, any launcher)",
                       description="Read a folder of per-rank torch.profiler traces (.json or .json.gz) -- or a "
                                   "ddpbench results folder's traces/ -- and write tables, figures and a page.")
    p.add_argument("folder", type=path_flag("folder"), help="the folder of one job's per-rank trace files, or a "
                                                            "ddpbench results folder (its traces/)")
    p.add_argument("--out", type=path_flag("--out"), metavar="FOLDER",
                   help="where to write the page, its figures and tables: a new folder, or one traces wrote "
                        "(default: reports/<folder>-traces/); never a folder of traces read, nor one inside it")
    p.add_argument("--workers", type=whole_number, metavar="N",
                   help="trace files parsed at once, each in a process of its own: 1 or more (default: one per "
                        "CPU, at most one per file)")
    p.add_argument("--ray", type=check_form, metavar="ADDRESS",
                   help=f"parse the trace files as tasks on a Ray cluster: {FORMS}; every node must see the files at "
                        "the same paths. An address where no cluster answers is refused within seconds")
    p.add_argument("--before", type=path_flag("--before"), metavar="FOLDER",
                   help="the same job's traces before a change: every line of the step and every kernel compared")
    p.add_argument("--compare-anyway", action="store_true",
                   help="compare with --before even where the two are not runs of one job (another world size, "
                        "device, backend or model): the differences are said above the comparison")
    add_folder_flags(p, writer="traces")
    p.set_defaults(func=command)


def command(args) -> int:
    from ddpbench.cli.shared.exits import say_error
    from ddpbench.files.writing import TRACES, Claim, holding, waited_for
    from ddpbench.report.traces_page import WRITES, write_trace_report
    from ddpbench.show.answers import print_trace_comparison, print_traces
    from ddpbench.traces.compare import itself, paired
    from ddpbench.traces.folder import read_folder
    from ddpbench.traces.read import jobs_in

    source = args.folder
    out = args.out or Path("reports") / f"{source.resolve().name or 'root'}-traces"
    run = str(source.resolve()) + (f" after {args.before.resolve()}" if args.before else "")
    claim = Claim(TRACES, "traces", run=run, writes=WRITES)
    # before any work (a Ray cluster started, a file parsed): the folders hold traces, --out can take the page
    jobs_in(source)
    if args.before:
        jobs_in(args.before)
    check_out(out, claim, {"folder": source, "--before": args.before}, force=args.force, default=args.out is None)
    with _ray(args.ray) as ray:
        jobs = read_folder(source, workers=args.workers, ray=ray)
        same = itself(source, args.before) if args.before else None
        before = read_folder(args.before, workers=args.workers, ray=ray) if args.before and not same else None
    comparisons = [same] if same else paired(before, jobs, str(args.before), args.compare_anyway,
                                             str(source)) if before else []
    print_traces(jobs)
    print_trace_comparison(comparisons)
    with holding(out, claim, force=args.force, wait=args.wait, on_wait=waited_for(say_error, out)):
        index = write_trace_report(jobs, source, out, comparisons)
    print(index)
    return 0


def check_out(out: Path, claim, read: dict, force: bool = False, default: bool = False) -> None:
    """Before any trace is read: ``out`` is no folder of traces read (``read``: flag -> folder, None where
    not given) nor inside one, and the contract would let ``claim`` write it there
    (:func:`ddpbench.files.writing.check_claim`: no link, no file, nothing under a file, no other kind's
    or run's folder, nobody else's files without ``force``), and the folder it lies in is writable. One
    line naming --out otherwise (``default``: it was not given, and the line says so)."""
    import os

    from ddpbench.files.writing import check_claim

    named = f"{out} (the default --out)" if default else str(out)
    where = Path(os.path.abspath(out))
    for flag, folder in read.items():
        if folder is None:
            continue
        inside, held = where.resolve(), Path(folder).resolve()
        if inside == held or held in inside.parents:
            what = f"the {flag} folder" if flag.startswith("--") else "the folder of traces read"
            relation = "is" if inside == held else "lies inside"
            raise InputError("command line", "--out", f"{named} {relation} {what} ({folder}): the page is never "
                             "written among the traces; give another folder")
    check_claim(out, claim, force)
    above = next((p for p in (where, *where.parents) if p.exists()), None)
    if above is not None and not os.access(above, os.W_OK | os.X_OK):
        raise InputError("command line", "--out", f"cannot write to {above}: permission denied; give a folder "
                         "you can write")


@contextlib.contextmanager
def _ray(address: str | None):
    """The Ray cluster's address, this process connected to it as its driver for the command
    (:mod:`ddpbench.launch.ray_address`: an address where no cluster answers is one line within seconds);
    for ``local`` one ddpbench starts and owns (it dies with this command, however it ends:
    :mod:`ddpbench.launch.ray_cluster`)."""
    if address is None:
        yield None
        return
    from ddpbench.launch import ray_address
    from ddpbench.launch.ray_cluster import RayCluster, RayClusterError

    ray_address.check_installed()
    cluster = RayCluster()
    logs = Path(tempfile.mkdtemp(prefix="ddpbench-traces-ray-"))
    connected = False
    try:
        if address == "local":
            try:
                cluster.start(logs)
            except RayClusterError as err:
                raise InputError("command line", "--ray", f"local: the Ray cluster did not start: {err}") from None
            target, said = cluster.address, ray_address.said_as(address)
        else:
            target, said = ray_address.check(address)
        connected = ray_address.connect(target, said)
        yield target
    finally:
        if connected:
            ray_address.disconnect()
        cluster.stop()
        shutil.rmtree(logs, ignore_errors=True)
