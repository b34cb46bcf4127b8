"""A folder of per-rank profiler traces, read: which files are traces of which job, each rank's file
parsed in a worker of its own, the whole checked before anything is said of it.

* **Which files.** The folder's ``*.json`` and ``*.json.gz`` (not its subfolders), as
  ``torch.profiler.tensorboard_trace_handler`` and ``export_chrome_trace`` write them and as
  Holistic Trace Analysis reads them. A ddpbench results folder is read through its ``traces/``:
  there each file is named ``<job>-r<repeat>.rank<r>.json.gz`` and every job and repeat is a job
  of its own (:func:`jobs_in`).
* **In parallel, memory bounded.** Each file is streamed by :func:`ddpbench.traces.events.read_events`
  and reduced to its rank's small tables (:func:`ddpbench.traces.steps.rank_tables`) in a worker
  process; a worker holds one file's kept events at a time, the parent only the small tables. On a
  Ray cluster (:func:`read_on_ray`) the same function runs as Ray tasks, a few in flight per CPU.
* **Checked** (:func:`check_job`): one line naming the file for what cannot be one job's traces
  (two world sizes, one rank twice, no ``ProfilerStep`` ranges, clocks hours apart), and a stated
  partial answer for what can (some ranks' traces only; no ``distributedInfo`` in a lone file).
"""

from __future__ import annotations

import concurrent.futures
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ddpbench.errors import InputError
from ddpbench.traces.steps import RankTables

#: a ddpbench results folder's traces: ``<job>-r<repeat>.rank<r>.json.gz``
OWN_NAME = re.compile(r"^(?P<job>.+-r\d+)\.rank(?P<rank>\d+)\.json\.gz$")
SUFFIXES = (".json", ".json.gz")
#: ranks whose steps begin further apart than this were not traced together (one job's ranks start
#: their profiler at the same step, seconds apart at most)
CLOCKS_APART_S = 3600.0


@dataclass
class Job:
    """One job's trace files, by the name the folder gives it."""

    name: str
    files: list


def jobs_in(folder: Path) -> list[Job]:
    """The jobs whose traces ``folder`` holds (module docstring); one line if it holds none."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(str(folder), None, "is not a folder; give the folder that holds one job's per-rank "
                         "profiler traces (*.json or *.json.gz), or a ddpbench results folder")
    own = folder / "traces"
    if own.is_dir() and not _traces(folder):
        folder = own
    files = _traces(folder)
    if not files:
        raise InputError(str(folder), None, "holds no profiler traces; allowed: a folder of per-rank *.json or "
                         "*.json.gz files as torch.profiler writes them (docs/traces.md), or a ddpbench "
                         "results folder with traces/")
    named = [OWN_NAME.match(f.name) for f in files]
    if all(named):
        jobs: dict[str, list] = {}
        for f, m in zip(files, named):
            jobs.setdefault(m["job"], []).append(f)
        return [Job(name, found) for name, found in sorted(jobs.items())]
    return [Job(folder.name or str(folder), files)]


def _traces(folder: Path) -> list[Path]:
    try:
        entries = sorted(folder.iterdir())
    except OSError as err:
        raise InputError(str(folder), None, f"cannot be read ({err.strerror or err})") from None
    return [p for p in entries if p.name.endswith(SUFFIXES) and p.is_file() and not p.is_symlink()]


def _one(path: str) -> RankTables:
    from ddpbench.traces.events import read_events
    from ddpbench.traces.steps import rank_tables

    return rank_tables(read_events(Path(path)))


def _owned(parent: int) -> None:
    from ddpbench.owner import die_with_parent

    die_with_parent(parent)


def read_ranks(files: list, workers: int | None = None, progress=None) -> list[RankTables]:
    """Every file's rank tables, parsed ``workers`` at a time (default: one per CPU, at most one per
    file); ``progress(done, total)`` after each. One line for the first bad file."""
    files = [str(f) for f in files]
    workers = max(1, min(workers or os.cpu_count() or 1, len(files)))
    if workers == 1:
        out = []
        for i, f in enumerate(files):
            out.append(_one(f))
            if progress:
                progress(i + 1, len(files))
        return out
    import multiprocessing

    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context, initializer=_owned,
                                                initargs=(os.getpid(),)) as pool:
        out = []
        try:
            for i, tables in enumerate(pool.map(_one, files, chunksize=1)):
                out.append(tables)
                if progress:
                    progress(i + 1, len(files))
        except BaseException:  # a bad file's line, an interrupt: the workers end now, not after their files
            workers = list((getattr(pool, "_processes", None) or {}).values())  # shutdown forgets them
            for process in workers:
                process.kill()
            pool.shutdown(wait=True, cancel_futures=True)  # reaped: none outlives the command's answer
            raise
    return out


def read_on_ray(files: list, address: str, progress=None) -> list[RankTables]:
    """The same as :func:`read_ranks`, as Ray tasks on the cluster at ``address`` (this process its
    driver); every node must see the files at the same paths. At most two tasks per CPU in flight,
    so memory stays bounded however many ranks there are. Where Ray is connected already it is used as
    found (``traces --ray`` connects first, an address where no cluster answers refused within seconds:
    :mod:`ddpbench.launch.ray_address`); else it connects here and lets go after."""
    import ray

    started = not ray.is_initialized()
    if started:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    try:
        task = ray.remote(_one)
        limit = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
        pending, out, files = [], {}, [str(f) for f in files]
        order = {}
        for i, f in enumerate(files):
            ref = task.remote(f)
            order[ref] = i
            pending.append(ref)
            while len(pending) >= limit or (i == len(files) - 1 and pending):
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    out[order.pop(ref)] = _ray_result(ray, ref)
                    if progress:
                        progress(len(out), len(files))
        return [out[i] for i in range(len(files))]
    finally:
        if started:
            ray.shutdown()


def _ray_result(ray, ref):
    """A task's tables; a bad file's one line raised here as the task raised it (it pickles whole)."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as err:
        if isinstance(err.cause, InputError):
            raise err.cause from None
        raise


@dataclass
class Checked:
    """A job's ranks as checked: the tables by rank, and what the answers must say of them."""

    ranks: list
    world_size: int
    backend: str
    notes: list


def check_job(job: Job, tables: list[RankTables]) -> Checked:
    """One job's rank tables, or one line naming the file that makes them not one job's (module docstring)."""
    notes = []
    lone = len(tables) == 1
    for t in tables:
        if t.rank < 0:
            if not lone:
                raise InputError(t.path, "distributedInfo", "missing: a job's traces must say which rank each "
                                 "is; record them with torch.distributed initialised before the profiler starts")
            t.rank, t.world_size = 0, 1
            for rows in (t.steps, t.collectives, t.breakdown):  # its rows too: each begins with its rank
                for row in rows:
                    row[0] = 0
            notes.append(f"{Path(t.path).name} has no distributedInfo: read as a single process (rank 0 of 1)")
        if not t.steps:
            raise InputError(t.path, "ProfilerStep", "the trace has no ProfilerStep# ranges, so it cannot be cut "
                             "into steps: call prof.step() once per training step under torch.profiler.profile "
                             "with a schedule (docs/traces.md)")
    sizes = sorted({t.world_size for t in tables})
    if len(sizes) > 1:
        a = next(t for t in tables if t.world_size == sizes[0])
        b = next(t for t in tables if t.world_size == sizes[1])
        raise InputError(b.path, "distributedInfo.world_size", f"{sizes[1]}, where {Path(a.path).name} says "
                         f"{sizes[0]}: two jobs' traces in one folder; give each job's folder on its own")
    by_rank: dict[int, RankTables] = {}
    for t in sorted(tables, key=lambda t: (t.rank, t.path)):
        if t.rank in by_rank:
            other = Path(by_rank[t.rank].path).name
            raise InputError(t.path, "distributedInfo.rank", f"rank {t.rank} twice (also {other}): two runs' "
                             "traces in one folder; give each run's folder on its own")
        if t.rank >= sizes[0]:
            raise InputError(t.path, "distributedInfo.rank", f"rank {t.rank} of a world of {sizes[0]}: "
                             "allowed: 0 to world size - 1")
        by_rank[t.rank] = t
    first = {r: t.steps[0][2] / 1e6 + t.clock_ns / 1e9 for r, t in by_rank.items()}
    low, high = min(first, key=first.get), max(first, key=first.get)
    apart = first[high] - first[low]
    if apart > CLOCKS_APART_S:
        raise InputError(by_rank[high].path, "ts", f"its first step begins {apart / 3600:.1f} h after rank "
                         f"{low}'s: not one run's traces, or clocks that were never synchronised; give one run's "
                         "traces")
    world = sizes[0]
    if len(by_rank) < world:
        missing = world - len(by_rank)
        notes.append(f"{len(by_rank)} of {world} ranks' traces ({missing} missing): a sample; the slowest rank "
                     "and the wait for it are among the sampled ranks only")
    if math.isfinite(world) and world > 1 and len(by_rank) == 1:
        notes.append("one rank's trace: no rank can be compared with another")
    return Checked(ranks=[by_rank[r] for r in sorted(by_rank)], world_size=world, backend=tables[0].backend,
                   notes=notes)
