"""The history store: sweeps filed by machine and commit, appended to, never rewritten.

A team that runs its sweep on every merge keeps the results as a history. The history answers
the question: over the last hundred commits, when did the scaling move? It is a folder that
travels as it is (a CI artifact, a branch):

    <store>/
      <machine id>/
        machine.json                 the machine's fingerprint, written once
        <entry>/                     one filed results folder: 000007-1a2b3c4-<sweep id>
          entry.json                 the commit, its date, where it came from, when it was filed
          results.jsonl              the sweep's records, as they were
          experiment.toml            (where the folder had one)
        <entry>/                     one filed pytest-benchmark run: 000008-1a2b3c4-bench-<8 hex digits>
          entry.json                 as above, with "kind": "benchmark" and the run's own datetime
          benchmark.json             the run's JSON (pytest --benchmark-json), as it was

**The machine id** comes from the fields of a sweep's environment block that decide its speed
(:data:`FINGERPRINT_FIELDS`): the CPU model and core counts, the GPUs, torch and its CUDA,
NCCL, and ddpbench's own version. Two machines that differ in any of them file apart: their
figures are not one series. pytest-benchmark's machine id leaves out the CPU and GPU model; this
one does not. The hostname is not one of the fields, so two identical CI runners share a
series. The id is a readable name with a hash of the fingerprint behind it
(``amd-epyc-7b13-2-cores-cpu-torch-2.13.0-1f2e3d4c``), and ``machine.json`` holds the fingerprint
itself.

**pytest-benchmark runs** (:func:`file_benchmark`) file beside the sweeps; what a run's JSON must
hold, and the machine it names, are :mod:`ddpbench.results.benchmark_json`'s. ddpbench's pytest
plugin puts the same fields, from the same code (:mod:`ddpbench.experiment.host`), into the run's
``machine_info["ddpbench"]``, so a machine's benchmark runs file under its sweeps' machine id. A
JSON written without the plugin has only pytest-benchmark's own ``machine_info``; it is filed
under a fingerprint made from that
(:func:`~ddpbench.results.benchmark_json.pytest_benchmark_fingerprint`), in a machine folder whose
name begins with ``pytest-benchmark-``: such a machine is never taken for a sweep's.

**Appending never rewrites.** An entry is written whole into a temporary folder beside the store's
entries, then renamed into place, so a history only ever has whole entries. An entry that is
there is never replaced. Filing the same sweep (or the same benchmark run: its ``datetime`` on its
machine) at the same commit again is refused with one line (:class:`HistoryError`). Entries are
numbered in the order they were filed, and the number only grows. A filer killed between taking
a number and its rename leaves that number's folder empty, and readers skip it. A filer holds the
store's lock from its checks to its rename, so two filers at once file one after the other, and a
repeat is refused however close the two came. A store that someone else wrote is read as untrusted
ground: an entry whose ``entry.json`` cannot be read is reported and skipped, never the history.

**Where it files** is one writer's contract (:mod:`ddpbench.files.writing`): no empty path, no
link (the store itself, or a machine folder: an entry would be filed outside the store), no file
or path under one, a store that can be written; never a folder of another kind (a sweep's results,
a compare folder); a folder that holds other files than machine folders only with ``force``. The
store is marked as a history store when first filed into.

This is the first part of issue 42's history. The trend page, the change points and bisect
read it.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from ddpbench.errors import InputError
from ddpbench.experiment.host import fingerprint
from ddpbench.files.folders import check_target, check_writable
from ddpbench.files.sidefiles import (
    FOLDER_MODE,
    MAX_BYTES,
    SideFileError,
    field,
    inside,
    loads,
    read_json,
    replace_file,
    umask,
)
from ddpbench.files.writing import STORE, Claim, check_claim, holding
from ddpbench.results.benchmark_json import MADE_FROM, BenchmarkRun, benchmark_run
from ddpbench.results.schema import RESULTS_FILE
from ddpbench.results.store import ResultStore

MACHINE_FILE = "machine.json"
ENTRY_FILE = "entry.json"
#: the experiment file a results folder may hold beside its records, filed with them
EXPERIMENT_FILE = "experiment.toml"
#: a filed pytest-benchmark run's JSON, byte for byte
BENCHMARK_FILE = "benchmark.json"
#: an entry's folder: its number, the commit's first 7 characters, then its first sweep id (and how
#: many sweeps it holds, where more than one), or "bench-" and a hash of a benchmark run's datetime
ENTRY_NAME = re.compile(r"^(\d{6})-([0-9a-f]{7}|nocommit)-([0-9a-f]{1,32}(_\d+sweeps)?|bench-[0-9a-f]{8})$")
#: what an entry holds
KINDS = ("sweep", "benchmark")
#: a sweep id as ddpbench writes them (hex digits); a folder from anyone may hold anything there
SWEEP_ID = re.compile(r"^[0-9a-f]{1,32}$")
#: a full or abbreviated git commit
COMMIT = re.compile(r"^[0-9a-f]{7,40}$")


class HistoryError(InputError):
    """What cannot be filed or read: one line naming the folder or file, the key and what is wrong
    (bad input: the command line says it and exits with 2)."""


@dataclass(frozen=True)
class Entry:
    """One filed results folder or pytest-benchmark run (``kind``). ``commit_date``: the commit's own
    date (ISO 8601, as git prints it with ``%cI``), which orders a series; ``filed_utc``: when it was
    filed; ``source``: the results folder or JSON file it was filed from, as given; ``run_datetime``:
    a benchmark run's own ``datetime`` (None for a sweep; a benchmark entry's ``sweep_ids`` is empty)."""

    machine: str
    number: int
    commit: str | None
    commit_date: str | None
    sweep_ids: tuple[str, ...]
    source: str
    filed_utc: str
    path: Path
    kind: str = "sweep"
    run_datetime: str | None = None


def machine_id(print_: dict) -> str:
    """A folder name for a fingerprint: readable words (CPU, cores, GPUs, torch), then 8 hex digits
    of the whole fingerprint's hash, so two fingerprints that read alike still file apart."""
    digest = hashlib.sha256(json.dumps(print_, sort_keys=True).encode()).hexdigest()[:8]
    gpus = print_.get("gpus") or []
    words = [str(print_.get("cpu_model") or "unknown-cpu"), f"{print_.get('cores_usable') or '?'} cores",
             f"{len(gpus)}x {gpus[0]}" if gpus else "cpu", f"torch {print_.get('torch_version') or '?'}"]
    if print_.get(MADE_FROM):  # pytest-benchmark's machine_info: the folder says so, and holds no torch
        words = ["pytest-benchmark", str(print_.get("cpu_model") or "unknown-cpu"),
                 f"{print_.get('cores_logical') or '?'} cores", f"python {print_.get('python_version') or '?'}"]
    slug = re.sub(r"[^a-z0-9.]+", "-", " ".join(words).lower()).strip("-")
    return f"{slug[:80].rstrip('-')}-{digest}"


def sweep_envs(results_dir: Path) -> list[tuple[str, dict]]:
    """(sweep id, environment block) of every sweep record of a results folder, in order."""
    path = results_dir / RESULTS_FILE
    if not path.is_file():
        raise HistoryError(results_dir, None, f"no {RESULTS_FILE} to file")
    if path.is_symlink() or not inside(path, results_dir):
        raise HistoryError(path, None, "refused: a link, not the folder's own file")
    found = [(str(r.get("sweep_id")), r.get("env") or {}) for r in ResultStore(results_dir).records()
             if r.get("kind") == "sweep"]
    if not found:
        raise HistoryError(path, None, "no sweep record (not a sweep's results)")
    odd = [sid for sid, _ in found if not SWEEP_ID.match(sid)]
    if odd:
        raise HistoryError(path, "sweep_id", f"{odd[0][:40]!r} is not a sweep id ddpbench writes (hex digits)")
    return found


def file_results(store: str | Path, results_dir: str | Path, commit: str | None = None,
                 commit_date: str | None = None, now: _dt.datetime | None = None, force: bool = False) -> Entry:
    """File a results folder into the history ``store`` under its machine and ``commit`` (the code
    it measured, with the commit's date); return the new entry. Refused with one line
    (:class:`HistoryError`): a folder that is not a sweep's results, one whose sweeps ran on
    machines of different fingerprints, a malformed commit, or a sweep filed already."""
    store, results_dir = Path(store), Path(results_dir)
    if commit is not None and not COMMIT.match(commit):
        raise HistoryError(results_dir, "commit", f"{commit!r} is not a git commit (7 to 40 lowercase hex digits)")
    envs = sweep_envs(results_dir)
    prints = {json.dumps(fingerprint(env), sort_keys=True) for _, env in envs}
    if len(prints) > 1:
        raise HistoryError(results_dir, None, f"its sweeps ran on {len(prints)} different machines; file each "
                           "machine's results folder on its own")
    print_ = fingerprint(envs[0][1])
    sweep_ids = tuple(sorted({sid for sid, _ in envs}))
    record = {"commit": commit, "commit_date": commit_date, "sweep_ids": list(sweep_ids),
              "source": str(results_dir)}

    def copy(staging: Path) -> None:
        shutil.copyfile(results_dir / RESULTS_FILE, staging / RESULTS_FILE)
        if (results_dir / EXPERIMENT_FILE).is_file() and inside(results_dir / EXPERIMENT_FILE, results_dir):
            shutil.copyfile(results_dir / EXPERIMENT_FILE, staging / EXPERIMENT_FILE)

    name = sweep_ids[0] + (f"_{len(sweep_ids)}sweeps" if len(sweep_ids) > 1 else "")
    return _file(store, print_, record, copy, name, results_dir,
                 lambda e: e.kind == "sweep" and e.sweep_ids == sweep_ids, "the same sweeps", now, force)


def file_benchmark(store: str | Path, path: str | Path, commit: str | None = None, commit_date: str | None = None,
                   now: _dt.datetime | None = None, force: bool = False) -> Entry:
    """File a pytest-benchmark run's JSON (``pytest --benchmark-json FILE``) into the history
    ``store`` under its machine and ``commit``, byte for byte as ``benchmark.json``; return the new
    entry. Its machine is the fingerprint ddpbench's plugin put in its ``machine_info``, or one
    made from pytest-benchmark's own fields where the run did not use the plugin. Refused with one
    line (:class:`HistoryError`): a file that is not a pytest-benchmark JSON (:func:`read_benchmark`
    says what it lacks), a malformed commit, or the same run (its ``datetime`` on its machine)
    filed already at that commit."""
    store, path = Path(store), Path(path)
    if commit is not None and not COMMIT.match(commit):
        raise HistoryError(path, "commit", f"{commit!r} is not a git commit (7 to 40 lowercase hex digits)")
    raw = _read_bytes(path)
    try:
        run = benchmark_run(loads(raw, str(path)), str(path))
    except SideFileError as err:
        raise _unreadable(err) from None
    record = {"kind": "benchmark", "commit": commit, "commit_date": commit_date, "sweep_ids": [],
              "run_datetime": run.datetime, "source": str(path)}
    name = "bench-" + hashlib.sha256(run.datetime.encode()).hexdigest()[:8]
    return _file(store, run.fingerprint, record, lambda staging: (staging / BENCHMARK_FILE).write_bytes(raw),
                 name, path, lambda e: e.kind == "benchmark" and e.run_datetime == run.datetime,
                 "the same benchmark run", now, force)


def read_benchmark(entry: Entry) -> BenchmarkRun:
    """A benchmark entry's run, read as untrusted ground (SideFileError naming the file)."""
    path = entry.path / BENCHMARK_FILE
    return benchmark_run(read_json(path, entry.path), str(path))


def _read_bytes(path: Path) -> bytes:
    """A file's bytes, read once: what is checked is what is filed. HistoryError for a file that
    cannot be read, is not a regular file (a FIFO would block) or is larger than a side file may be."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        raise HistoryError(path, None, f"cannot be read: {err.strerror or err}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise HistoryError(path, None, "refused: not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read(MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > MAX_BYTES:
        raise HistoryError(path, None, f"refused: more than {MAX_BYTES} bytes")
    return raw


def store_claim(flag: str = "--store", writer: str = "history add") -> Claim:
    """What filing writes into a store (:mod:`ddpbench.files.writing`): a history store, shared by
    every run filed into it; its machine folders are its own names, where a store was written before
    the marker named a kind."""
    return Claim(STORE, writer, flag=flag, own=lambda p: p.is_dir() and (p / MACHINE_FILE).is_file(),
                 what="history store")


def claim_store(store: Path, force: bool = False, flag: str = "--store") -> Path:
    """The store's checks alone, before a long command (``history bisect``) files into it later."""
    claim = store_claim(flag)
    check_claim(Path(store), claim, force)
    check_writable(Path(store), flag, claim.what)
    return Path(store)


def _file(store: Path, print_: dict, record: dict, copy, name: str, source: Path, same, what: str,
          now: _dt.datetime | None, force: bool = False) -> Entry:
    """File an entry while holding the store (its kind, its lock: one filer at a time), claim the
    machine, refuse a repeat (``same`` at the same commit), stage the entry (``copy`` writes its files
    into the staging folder), then rename it into place."""
    machine = machine_id(print_)
    with holding(Path(store), store_claim(), force=force) as held:
        home = held / machine
        check_target(home, "--store", "machine folder of the store")  # a link would file the entry outside the store
        try:
            home.mkdir(exist_ok=True)
            _claim_machine(home, print_)
        except PermissionError as err:
            raise HistoryError(home, None, f"cannot be written: {err.strerror}") from None
        commit = record["commit"]
        for entry in entries(store, machine):
            if same(entry) and entry.commit == commit:
                raise HistoryError(source, None, f"filed already as {entry.path} ({what} at the same commit)")
        made = now or _dt.datetime.now(_dt.timezone.utc)
        record = {**record, "filed_utc": made.isoformat(timespec="seconds")}
        staging = Path(tempfile.mkdtemp(prefix=".filing-", dir=home))
        os.chmod(staging, FOLDER_MODE & ~umask())  # mkdtemp's 0700 would hide the entry from a group sharing the store
        try:
            copy(staging)
            (staging / ENTRY_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
            path = _rename_into_place(staging, home, f"{commit[:7] if commit else 'nocommit'}-{name}")
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return _entry(machine, path, record)


def _claim_machine(home: Path, print_: dict) -> None:
    """Write the machine's fingerprint once, whole (linked into place: a reader never sees it empty, and
    of two writers one wins); a fingerprint there already, or the other writer's, must be this one."""
    path = home / MACHINE_FILE
    text = json.dumps(print_, indent=1, sort_keys=True) + "\n"
    try:
        replace_file(path, text, replace=False)
        return
    except FileExistsError:
        pass
    try:
        there = read_json(path, home)
    except SideFileError as err:
        raise _unreadable(err) from None
    if there != json.loads(text):
        raise HistoryError(path, None, "holds another machine's fingerprint than its folder's name says")


def _rename_into_place(staging: Path, home: Path, tail: str) -> Path:
    """Rename the staged entry to the next free number (``<number>-<tail>``); never over an entry
    that is there (a rename onto an existing non-empty folder fails, and another filer may take a
    number first)."""
    number = max((int(m.group(1)) for m in map(ENTRY_NAME.match, os.listdir(home)) if m), default=0) + 1
    while True:
        target = home / f"{number:06d}-{tail}"
        try:
            os.mkdir(target)  # the number is ours once this folder is made; then the entry replaces it
        except FileExistsError:
            number += 1
            continue
        os.replace(staging, target)  # an empty folder is replaced, a non-empty one never
        return target


def entries(store: str | Path, machine: str | None = None) -> list[Entry]:
    """Every whole entry of the store (of one machine), in filing order within each machine. An
    entry whose ``entry.json`` cannot be read is left out with a warning naming it."""
    import warnings

    store = Path(store)
    if machine is not None:
        machines = [machine]
    else:
        machines = sorted(p.name for p in store.iterdir() if p.is_dir()) if store.is_dir() else []
    found = []
    for name in machines:
        home = store / name
        if not home.is_dir():
            continue
        if home.is_symlink():  # the store's own folders only: a link would read another folder's sweeps
            warnings.warn(f"{home}: left out of the history: a link; a store's machine folders are its own",
                          stacklevel=2)
            continue
        for child in sorted(home.iterdir()):
            if not ENTRY_NAME.match(child.name) or not child.is_dir():
                continue
            links = [p.name for p in (child, *(child / f for f in (ENTRY_FILE, RESULTS_FILE, BENCHMARK_FILE)))
                     if p.is_symlink()]
            if links:  # an entry holds its own files: a link would put another folder's records in the trend
                warnings.warn(f"{child}: left out of the history: {', '.join(links)} is a link; an entry holds its "
                              "own files", stacklevel=2)
                continue
            try:
                record = read_json(child / ENTRY_FILE, store)
                found.append(_entry(name, child, record))
            except (SideFileError, HistoryError) as err:
                warnings.warn(f"{child}: left out of the history: {err}", stacklevel=2)
    return found


def _entry(machine: str, path: Path, record) -> Entry:
    where = str(path / ENTRY_FILE)
    if not isinstance(record, dict):
        raise HistoryError(where, None, "not a JSON object")
    try:
        commit = field(record, "commit", str, where, optional=True)
        sweep_ids = field(record, "sweep_ids", list, where)
        kind = field(record, "kind", str, where, optional=True, default="sweep")  # entries before benchmarks: sweeps
        entry = Entry(machine=machine, number=int(ENTRY_NAME.match(path.name).group(1)), commit=commit,
                      commit_date=field(record, "commit_date", str, where, optional=True),
                      sweep_ids=tuple(str(s) for s in sweep_ids), source=field(record, "source", str, where),
                      filed_utc=field(record, "filed_utc", str, where), path=path, kind=kind,
                      run_datetime=field(record, "run_datetime", str, where, optional=kind != "benchmark"))
    except SideFileError as err:
        raise _unreadable(err) from None
    if kind not in KINDS:
        raise HistoryError(where, "kind", f"{kind[:40]!r} is not one of {', '.join(KINDS)}")
    if commit is not None and not COMMIT.match(commit):
        raise HistoryError(where, "commit", f"{commit!r} is not a git commit")
    return entry


def _unreadable(err: SideFileError) -> HistoryError:
    """A side file's error (its one line begins with the file: "PATH: what is wrong") as ours."""
    where, _, what = str(err).partition(": ")
    return HistoryError(where, None, what)


def describe(entry: Entry) -> dict:
    """An entry as a plain dict (for tables and JSON)."""
    found = asdict(entry)
    found["path"] = str(entry.path)
    found["sweep_ids"] = list(entry.sweep_ids)
    return found
