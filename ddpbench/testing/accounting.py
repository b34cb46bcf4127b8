"""Where the test suite's CPU goes, by process, over the whole run (``benchmarks/suite_cpu.py``).

The kernel's process accounting (BSD ``acct``, turned on by ``accton FILE``) writes one record
for every process that ends: a forked rank as much as an interpreter, each with its own user and
system CPU (not its children's), its pid and its parent's. A record names its program by 15
bytes only ("python"), so :class:`Sampler` notes each process's command line as it appears, and
its parent then (a record's parent is the one at exit: an orphan's is whoever reaped it).
:func:`tally` sorts the records of the processes under one root process (pytest) into the kinds
of process the suite starts (:data:`KINDS`) and into the tests that started them: pytest names a
test's ``tmp_path`` after the test, and a sweep's command line names its experiment file there.

What it cannot see: a process killed with the accounting off; a pid used twice in one run (the
first command line seen is kept: Linux counts pids up to ``pid_max``, 4 million on 64 bits, so
a 20-minute suite does not wrap). A process that lives under 0.2 s and is not a fork is told by
its record's name alone."""

from __future__ import annotations

import os
import re
import struct
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

#: ``struct acct_v3`` (linux/acct.h): flag, version, tty, exit code, uid, gid, pid, ppid, begin time
#: (s), elapsed (a float, in ticks), then eight ``comp_t`` (user, system, ...) and 16 bytes of name
RECORD = struct.Struct("<BBHIIIIIIf8H16s")
VERSION = 3
#: the record's flag of a process that forked and did not exec
AFORK = 0x01
#: the ticks a record counts in (the kernel's ``AHZ``)
TICKS_PER_S = 100

#: the kinds of process, in the order they are tried: a kind and what its command line holds
KINDS = (
    ("fork server", ("multiprocessing.forkserver",)),
    ("pytest worker", ("exec(eval(sys.stdin.readline()))",)),
    ("rank, new interpreter", ("-m ddpbench.rank",)),
    ("torchrun agent", ("torch.distributed.run", "bin/torchrun")),
    ("ddpbench command", ("-m ddpbench",)),
    ("ray", ("/ray/", "ray::", "raylet", "gcs_server")),
    ("slurm", ("slurm", "srun ", "sbatch", "squeue", "scancel", "scontrol", "sacct")),
    ("chromium", ("chrom",)),
    ("pytest", ("pytest",)),
    ("compiler", ("cc1plus", "/ld ", "collect2")),
)
FORKED = "forked rank"
#: a test's ``tmp_path`` (``.../pytest-N/[popen-gwK/]<test name, 30 characters at most><n>/``), not a
#: worker's own folder (``--basetemp=.../popen-gwK/``)
TEST_FOLDER = re.compile(r"/pytest-\d+/(?:popen-gw\d+/)?(?!popen-gw\d+/)([A-Za-z_][^/\s]*?)\d+/")


@dataclass(frozen=True)
class Exited:
    """One process's accounting record."""

    pid: int
    ppid: int
    forked: bool  # forked and never exec'd
    cpu_s: float  # user and system, its own
    name: str  # its program's name, 15 bytes at most


def comp_t(value: int) -> int:
    """A ``comp_t``: a 13-bit mantissa and a 3-bit base-8 exponent."""
    return (value & 0x1FFF) << (3 * (value >> 13))


def read_records(path: Path) -> list[Exited]:
    """The version-3 records of an accounting file, in the order processes ended."""
    data = Path(path).read_bytes()
    records = []
    for start in range(0, len(data) - RECORD.size + 1, RECORD.size):
        flag, version, _tty, _code, _uid, _gid, pid, ppid, _btime, _etime, utime, stime, *_rest, name = \
            RECORD.unpack_from(data, start)
        if version & 0x0F != VERSION:
            continue
        records.append(Exited(pid, ppid, bool(flag & AFORK), (comp_t(utime) + comp_t(stime)) / TICKS_PER_S,
                              name.split(b"\0", 1)[0].decode(errors="replace")))
    return records


class Sampler:
    """Notes each new process's parent and command line, every ``interval_s``, in a thread."""

    def __init__(self, interval_s: float = 0.2, proc: Path = Path("/proc")):
        self.interval_s, self.proc = interval_s, proc
        self.seen: dict[int, tuple[int, str]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def look(self) -> None:
        for entry in os.listdir(self.proc):
            if not entry.isdigit() or int(entry) in self.seen:
                continue
            try:
                command = (self.proc / entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                stat = (self.proc / entry / "stat").read_text()
            except OSError:
                continue  # gone already
            self.seen[int(entry)] = (int(stat.rsplit(")", 1)[1].split()[1]), command.strip())

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.look()

    def __enter__(self) -> Sampler:
        self.look()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def kind_of(command: str) -> str | None:
    """The kind of :data:`KINDS` whose marks ``command`` holds, or None."""
    return next((kind for kind, marks in KINDS if any(mark in command for mark in marks)), None)


@dataclass
class Tally:
    """CPU-seconds of the processes under one root: by kind, by test, and the processes counted."""

    by_kind: Counter
    by_test: Counter
    processes: Counter

    @property
    def total_s(self) -> float:
        return sum(self.by_kind.values())


def tally(records: list[Exited], seen: dict[int, tuple[int, str]], root: int) -> Tally:
    """Sort the CPU of every process under ``root`` (whose records name it an ancestor, through the
    parents :class:`Sampler` saw first and the records' own) by kind and by test."""
    parent = {r.pid: r.ppid for r in records}
    parent.update({pid: ppid for pid, (ppid, _) in seen.items()})
    by_kind, by_test, processes = Counter(), Counter(), Counter()

    def lineage(pid: int) -> list[int]:
        chain = [pid]
        while chain[-1] != root and chain[-1] in parent and len(chain) < 64:
            chain.append(parent[chain[-1]])
        return chain if chain[-1] == root else []

    for record in records:
        chain = lineage(record.pid)
        if not chain:
            continue
        kind = _kind(record, seen)
        by_kind[kind] += record.cpu_s
        processes[kind] += 1
        by_test[_test(chain, seen)] += record.cpu_s
    return Tally(by_kind, by_test, processes)


def _kind(record: Exited, seen: dict[int, tuple[int, str]]) -> str:
    ppid, command = seen.get(record.pid, (record.ppid, ""))
    parent_kind = kind_of(seen.get(ppid, (0, ""))[1])
    if parent_kind == "fork server" and (record.forked or kind_of(command) == "fork server"):
        return FORKED  # a fork of the server carries its command line
    if command:
        return kind_of(command) or f"other: {record.name}"
    if record.forked and parent_kind:
        return f"fork of a {parent_kind}"
    return kind_of(record.name) or f"other: {record.name}"


def _test(chain: list[int], seen: dict[int, tuple[int, str]]) -> str:
    for pid in chain:
        found = TEST_FOLDER.search(seen.get(pid, (0, ""))[1])
        if found:
            return found.group(1)
    return "(no test named: pytest's own processes and what runs in them)"
