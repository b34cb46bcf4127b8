"""``python -m ddpbench traces``: answer from the PyTorch profiler traces of any data-parallel job, one
file per rank (docs/traces.md): where each step went, which rank the others waited for, the
collectives and DDP's buckets as they ran, and what to change."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

from ddpbench.commandline.folders import add_folder_flags
from ddpbench.commandline.parsing import whole_number
from ddpbench.errors import InputError
from ddpbench.results.folder import path_flag


def add_parser(sub) -> None:
    p = sub.add_parser("traces", help="answer from a folder of per-rank profiler traces (any job, any launcher)",
                       description="Read a folder of per-rank torch.profiler traces (.json or .json.gz) -- or a "
                                   "ddpbench results folder's traces/ -- and write tables, figures and a page.")
    p.add_argument("folder", type=path_flag("folder"), help="the folder of one job's per-rank trace files")
    p.add_argument("--out", type=path_flag("--out"),
                   help="where to write the report (default: reports/<folder>-traces/)")
    p.add_argument("--workers", type=whole_number, metavar="N",
                   help="files parsed at once, 1 or more (default: one per CPU)")
    p.add_argument("--ray", metavar="ADDRESS", help="parse on the Ray cluster at ADDRESS ('local': one started here "
                                                    "for this command and stopped after it, as --launcher ray's); "
                                                    "every node must see the files at the same paths")
    p.add_argument("--before", type=path_flag("--before"), metavar="FOLDER",
                   help="the same job's traces before a change: every line of the step and every kernel compared")
    add_folder_flags(p, writer="traces")
    p.set_defaults(func=command)


def command(args) -> int:
    from ddpbench.commandline.exits import say_error
    from ddpbench.report.traces_page import WRITES, write_trace_report
    from ddpbench.results.writing import TRACES, Claim, holding, waited_for
    from ddpbench.show.answers import print_trace_comparison, print_traces
    from ddpbench.traces.compare import paired
    from ddpbench.traces.folder import read_folder

    source = args.folder
    out = args.out or Path("reports") / f"{source.resolve().name or 'root'}-traces"
    with _ray(args.ray) as ray:
        jobs = read_folder(source, workers=args.workers, ray=ray)
        before = read_folder(args.before, workers=args.workers, ray=ray) if args.before else None
    comparisons = paired(before, jobs, str(args.before)) if before else []
    print_traces(jobs)
    print_trace_comparison(comparisons)
    run = str(source.resolve()) + (f" after {args.before.resolve()}" if before else "")
    claim = Claim(TRACES, "traces", run=run, writes=WRITES)
    with holding(out, claim, force=args.force, wait=args.wait, on_wait=waited_for(say_error, out)):
        index = write_trace_report(jobs, source, out, comparisons)
    print(index)
    return 0


@contextlib.contextmanager
def _ray(address: str | None):
    """The Ray cluster's address: as given, or for ``local`` one ddpbench starts and owns (it dies with
    this command, however it ends: :mod:`ddpbench.launch.ray_cluster`)."""
    if address != "local":
        yield address
        return
    from ddpbench.launch.ray_cluster import RayCluster, RayClusterError

    cluster = RayCluster()
    logs = Path(tempfile.mkdtemp(prefix="ddpbench-traces-ray-"))
    try:
        try:
            cluster.start(logs)
        except RayClusterError as err:
            raise InputError("command line", "--ray", f"local: the Ray cluster did not start: {err}") from None
        yield cluster.address
    finally:
        cluster.stop()
        shutil.rmtree(logs, ignore_errors=True)
