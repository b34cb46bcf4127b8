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

**The machine id** comes from the fields of a sweep's environment block that decide its speed
(:data:`FINGERPRINT_FIELDS`): the CPU model and core counts, the GPUs, torch and its CUDA,
NCCL, and ddpbench's own version. Two machines that differ in any of them file apart: their
figures are not one series. pytest-benchmark's machine id leaves out the CPU and GPU model; this
one does not. The hostname is not one of the fields, so two identical CI runners share a
series. The id is a readable name with a hash of the fingerprint behind it
(``amd-epyc-7b13-2-cores-cpu-torch-2.13.0-1f2e3d4c``), and ``machine.json`` holds the fingerprint
itself.

**Appending never rewrites.** An entry is written whole into a temporary folder beside the store's
entries, then renamed into place, so a history only ever has whole entries. An entry that is
there is never replaced. Filing the same sweep at the same commit again is refused with one line
(:class:`HistoryError`). Entries are numbered in the order they were filed, and the number only
grows. A filer killed between taking a number and its rename leaves that number's folder empty,
and readers skip it. Two filers of the same sweep at the same moment may both file it: the
check for a repeat is not atomic with the rename. A CI job files one sweep at a time. A store
that someone else wrote is read as untrusted ground: an entry whose ``entry.json`` cannot be
read is reported and skipped, never the history.

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
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from ddpbench.errors import InputError
from ddpbench.results.schema import RESULTS_FILE
from ddpbench.results.sidefiles import SideFileError, field, inside, read_json
from ddpbench.results.store import ResultStore

#: the environment block's fields that decide how fast the same code runs: a machine's fingerprint
FINGERPRINT_FIELDS = ("cpu_model", "cores_usable", "cores_logical", "gpus", "torch_version", "torch_cuda",
                      "nccl_version", "ddpbench_version")
MACHINE_FILE = "machine.json"
ENTRY_FILE = "entry.json"
#: the experiment file a results folder may hold beside its records, filed with them
EXPERIMENT_FILE = "experiment.toml"
#: an entry's folder: its number, the commit's first 7 characters, its first sweep id (and how many
#: sweeps it holds, where more than one)
ENTRY_NAME = re.compile(r"^(\d{6})-([0-9a-f]{7}|nocommit)-([0-9a-f]{1,32}(_\d+sweeps)?)$")
#: a sweep id as ddpbench writes them (hex digits); a folder from anyone may hold anything there
SWEEP_ID = re.compile(r"^[0-9a-f]{1,32}$")
#: a full or abbreviated git commit
COMMIT = re.compile(r"^[0-9a-f]{7,40}$")


class HistoryError(InputError):
    """What cannot be filed or read: one line naming the folder or file, the key and what is wrong
    (bad input: the command line says it and exits with 2)."""


@dataclass(frozen=True)
class Entry:
    """One filed results folder. ``commit_date``: the commit's own date (ISO 8601, as git prints
    it with ``%cI``), which orders a series; ``filed_utc``: when it was filed; ``source``: the
    results folder it was filed from, as given."""

    machine: str
    number: int
    commit: str | None
    commit_date: str | None
    sweep_ids: tuple[str, ...]
    source: str
    filed_utc: str
    path: Path


def fingerprint(env: dict) -> dict:
    """The fields of an environment block (a sweep record's ``env``) that tell machines apart;
    a field the block lacks is None."""
    found = {name: env.get(name) for name in FINGERPRINT_FIELDS}
    found["gpus"] = list(found["gpus"] or [])
    return found


def machine_id(print_: dict) -> str:
    """A folder name for a fingerprint: readable words (CPU, cores, GPUs, torch), then 8 hex digits
    of the whole fingerprint's hash, so two fingerprints that read alike still file apart."""
    digest = hashlib.sha256(json.dumps(print_, sort_keys=True).encode()).hexdigest()[:8]
    gpus = print_.get("gpus") or []
    words = [str(print_.get("cpu_model") or "unknown-cpu"), f"{print_.get('cores_usable') or '?'} cores",
             f"{len(gpus)}x {gpus[0]}" if gpus else "cpu", f"torch {print_.get('torch_version') or '?'}"]
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
                 commit_date: str | None = None, now: _dt.datetime | None = None) -> Entry:
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
    machine = machine_id(print_)
    home = store / machine
    home.mkdir(parents=True, exist_ok=True)
    _claim_machine(home, print_)
    sweep_ids = tuple(sorted({sid for sid, _ in envs}))
    for entry in entries(store, machine):
        if entry.sweep_ids == sweep_ids and entry.commit == commit:
            raise HistoryError(results_dir, None, f"filed already as {entry.path} (the same sweeps at the same "
                               "commit)")
    made = now or _dt.datetime.now(_dt.timezone.utc)
    record = {"commit": commit, "commit_date": commit_date, "sweep_ids": list(sweep_ids),
              "source": str(results_dir), "filed_utc": made.isoformat(timespec="seconds")}
    staging = Path(tempfile.mkdtemp(prefix=".filing-", dir=home))
    try:
        shutil.copyfile(results_dir / RESULTS_FILE, staging / RESULTS_FILE)
        if (results_dir / EXPERIMENT_FILE).is_file() and inside(results_dir / EXPERIMENT_FILE, results_dir):
            shutil.copyfile(results_dir / EXPERIMENT_FILE, staging / EXPERIMENT_FILE)
        (staging / ENTRY_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        path = _rename_into_place(staging, home, commit, sweep_ids)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return _entry(machine, path, record)


def _claim_machine(home: Path, print_: dict) -> None:
    """Write the machine's fingerprint once; a fingerprint there already must be this one."""
    path = home / MACHINE_FILE
    text = json.dumps(print_, indent=1, sort_keys=True) + "\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        try:
            there = read_json(path, home)
        except SideFileError as err:
            raise _unreadable(err) from None
        if there != json.loads(text):
            raise HistoryError(path, None, "holds another machine's fingerprint than its folder's name says")
        return
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


def _rename_into_place(staging: Path, home: Path, commit: str | None, sweep_ids: tuple[str, ...]) -> Path:
    """Rename the staged entry to the next free number; never over an entry that is there (a
    rename onto an existing non-empty folder fails, and another filer may take a number first)."""
    sweeps = sweep_ids[0] + (f"_{len(sweep_ids)}sweeps" if len(sweep_ids) > 1 else "")
    tail = f"{commit[:7] if commit else 'nocommit'}-{sweeps}"
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
        for child in sorted(home.iterdir()):
            if not ENTRY_NAME.match(child.name) or not child.is_dir():
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
        entry = Entry(machine=machine, number=int(ENTRY_NAME.match(path.name).group(1)), commit=commit,
                      commit_date=field(record, "commit_date", str, where, optional=True),
                      sweep_ids=tuple(str(s) for s in sweep_ids), source=field(record, "source", str, where),
                      filed_utc=field(record, "filed_utc", str, where), path=path)
    except SideFileError as err:
        raise _unreadable(err) from None
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
