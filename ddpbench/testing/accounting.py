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
its record's name alone.

And where its wall time goes, test by test (``benchmarks/suite_durations.py``), as a pytest plugin:

    python -m pytest -p ddpbench.testing.accounting --suite-durations=OUT.json ...

records each test's setup, call and teardown seconds, each fixture's setup seconds (a fixture of a wider
scope is counted once, in the setup of the test that first asked for it) and the kinds of process the
test started (:class:`Recorder`), then writes them to ``OUT.json`` -- under pytest-xdist, each worker to
``OUT.gwN.json`` beside it (:func:`read`: all of them). A process's kind is the one :func:`kind_of`
gives its command line, read as the kind of process a test pays for by :data:`TEST_KINDS`: a thread
notes every process under pytest as it appears (:class:`Watcher`), and each ``subprocess.Popen`` of
pytest's own process by its command line (its audit event), so a process quicker than a look is seen
too. A rank that imports TensorFlow is told by its memory map (``/proc/PID/maps``: TensorFlow's
library), a test that imports it in pytest's process by ``sys.modules``."""

from __future__ import annotations

import json
import os
import re
import struct
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

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


# ---------------------------------------------------------------------------------------------
# the suite's wall time, test by test: a pytest plugin (``-p ddpbench.testing.accounting``)
# ---------------------------------------------------------------------------------------------

#: the kind of process a test pays for, by the kinds of process this module
#: tells, in the order a test that starts several is counted under (its costliest first); a kind
#: of process not named here (a compiler, git, the ``ddpbench`` command) is a plain subprocess
TEST_KINDS = (
    ("Slurm", ("slurm",)),
    ("Ray cluster", ("ray",)),
    ("browser", ("chromium",)),
    ("TensorFlow import", ()),  # told by the memory map, not the command line
    ("sweep", ("fork server", "forked rank", "rank, new interpreter", "torchrun agent")),
)
PLAIN = "plain subprocess"
NONE = "no process"
TENSORFLOW = "TensorFlow import"
#: a ``ddpbench`` command that starts ranks: a sweep (its ranks are children of it, seen as they start)
SWEEP_COMMANDS = (" sweep ", " ab ", " tune ", " bisect ")
#: the command line a fork of pytest that never exec'd is noted by (any other process of the test: a plain subprocess)
FORK_OF_ROOT = "(forked from the test run, never exec'd)"
#: what a process's memory map holds once it has imported TensorFlow
TENSORFLOW_LIBRARY = b"libtensorflow_framework"


def kind_of_test(kinds: set[str]) -> str:
    """The kind a test that started processes of ``kinds`` (accounting's, or :data:`TENSORFLOW`) is counted under."""
    for name, accounted in TEST_KINDS:
        if name in kinds or any(kind in kinds for kind in accounted):
            return name
    return PLAIN if kinds else NONE


def process_kind(command: str) -> str:
    """The accounting kind of a command line; a ``ddpbench`` command that starts ranks is a sweep's rank parent."""
    kind = kind_of(command) or "other"
    if kind == "ddpbench command" and any(word in f" {command} " for word in SWEEP_COMMANDS):
        return "fork server"  # its ranks are forked or spawned under it: counted as the sweep it is
    return kind


class Watcher:
    """Notes each process under ``root`` as it appears, and whether it imported TensorFlow, in a thread.

    A process is told by its command line once it differs from ``root``'s: a fork of pytest reads pytest's
    command line until it execs (:data:`FORK_OF_ROOT` if it never does within :data:`FORK_LOOKS` looks). A
    pid no longer listed is forgotten, so that a pid used again is a new process, not the old one's child."""

    FORK_LOOKS = 5

    def __init__(self, root: int, interval_s: float = 0.1, proc: Path = Path("/proc")):
        self.root, self.interval_s, self.proc = root, interval_s, proc
        self.root_command = self._command(root)
        self.parent: dict[int, int] = {}
        self.pending: dict[int, int] = {}  # forks of the root not exec'd yet: looks so far
        self.fresh: list[tuple[int, str]] = []  # (pid, command) seen since the last take()
        self.tensorflow: set[int] = set()
        self._checked_maps: dict[int, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="suite-durations")

    def _command(self, pid: int) -> str | None:
        try:
            return (self.proc / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            return None

    def _under_root(self, pid: int) -> bool:
        for _ in range(64):
            pid = self.parent.get(pid, 0)
            if pid == self.root:
                return True
            if pid <= 1:
                return False
        return False

    def _seen(self, pid: int, command: str) -> None:
        with self._lock:
            self.fresh.append((pid, command))
        self._checked_maps[pid] = 0.0

    def look(self) -> None:
        now = time.monotonic()
        try:
            alive = {int(entry) for entry in os.listdir(self.proc) if entry.isdigit()}
        except OSError:
            return
        for gone in [pid for pid in self.parent if pid not in alive]:
            self.parent.pop(gone)
            self._checked_maps.pop(gone, None)
            if self.pending.pop(gone, None) is not None:
                self._seen(gone, FORK_OF_ROOT)  # ended before it exec'd
        for pid in alive:
            if pid not in self.parent:
                try:
                    stat = (self.proc / str(pid) / "stat").read_text()
                except OSError:
                    continue
                self.parent[pid] = int(stat.rsplit(")", 1)[1].split()[1])
                if self._under_root(pid):
                    self.pending[pid] = 0
            if pid in self.pending:
                command = self._command(pid)
                if command is None:
                    continue
                if command != self.root_command or self.pending[pid] >= self.FORK_LOOKS:
                    del self.pending[pid]
                    self._seen(pid, command if command != self.root_command else FORK_OF_ROOT)
                else:
                    self.pending[pid] += 1
            if pid in self._checked_maps and pid not in self.tensorflow and now - self._checked_maps[pid] > 0.5:
                self._checked_maps[pid] = now
                try:
                    if TENSORFLOW_LIBRARY in (self.proc / str(pid) / "maps").read_bytes():
                        with self._lock:
                            self.tensorflow.add(pid)
                except OSError:
                    self._checked_maps.pop(pid, None)

    def take(self) -> tuple[list[tuple[int, str]], set[int]]:
        """The processes seen since the last take, and every one seen to have imported TensorFlow."""
        with self._lock:
            fresh, self.fresh = self.fresh, []
            return fresh, set(self.tensorflow)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.look()

    def start(self) -> Watcher:
        self.look()
        for _ in range(self.FORK_LOOKS + 1):
            self.look()
        with self._lock:
            self.fresh = []  # what ran before the first test (xdist's own, pytest's)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


class Recorder:
    """The plugin: each test's phases, its fixtures' setup and the kinds of process it started."""

    def __init__(self, out: Path):
        self.out = out
        self.tests: dict[str, dict] = {}
        self.current: dict | None = None
        self.watcher = Watcher(os.getpid())
        self._tensorflow_seen: set[int] = set()
        self._popened: set[str] = set()  # the kinds of this test's own Popen starts
        self._had_tensorflow = False
        sys.addaudithook(self._audit)

    def _audit(self, event: str, args: tuple) -> None:
        if event == "subprocess.Popen" and self.current is not None:
            command = args[1] if isinstance(args[1], (list, tuple)) else [args[1]]
            self._popened.add(process_kind(" ".join(map(str, command))))

    def _entry(self, nodeid: str) -> dict:
        return self.tests.setdefault(nodeid, {"setup": 0.0, "call": 0.0, "teardown": 0.0, "fixtures": {},
                                              "processes": {}, "outcome": "passed"})

    def _note(self, kind: str) -> None:
        if self.current is not None:
            self.current["processes"][kind] = self.current["processes"].get(kind, 0) + 1

    def _drain(self) -> None:
        fresh, tensorflow = self.watcher.take()
        for _pid, command in fresh:
            self._note(process_kind(command))
        for _ in tensorflow - self._tensorflow_seen:
            self._note(TENSORFLOW)
        self._tensorflow_seen |= tensorflow
        for kind in self._popened - set(self.current["processes"] if self.current is not None else ()):
            self._note(kind)  # quicker than a look
        self._popened = set()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session):
        self.watcher.start()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.current = self._entry(item.nodeid)
        self._had_tensorflow = "tensorflow" in sys.modules
        try:
            return (yield)
        finally:
            self.current = None

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        start = time.perf_counter()
        try:
            return (yield)
        finally:
            if self.current is not None:
                name = f"{fixturedef.argname} ({fixturedef.scope})"
                self.current["fixtures"][name] = self.current["fixtures"].get(name, 0.0) + time.perf_counter() - start

    def pytest_runtest_logreport(self, report):
        entry = self._entry(report.nodeid)
        entry[report.when] += report.duration
        if report.failed:
            entry["outcome"] = "failed"
        elif report.skipped and entry["outcome"] == "passed":
            entry["outcome"] = "skipped"

    def pytest_runtest_logfinish(self, nodeid, location):
        self._drain()
        if not self._had_tensorflow and "tensorflow" in sys.modules:
            self._note(TENSORFLOW)
        self.write()  # after each test: a run stopped part way keeps what it measured

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session):
        self.watcher.stop()
        self.write()

    def write(self) -> None:
        if not self.tests:
            return  # xdist's controller: its workers ran the tests and write their own
        for entry in self.tests.values():
            entry["kind"] = kind_of_test(set(entry["processes"]))
        self.out.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.out.with_suffix(".tmp")
        temporary.write_text(json.dumps(self.tests, indent=0, sort_keys=True))
        temporary.replace(self.out)


def pytest_addoption(parser):
    parser.addoption("--suite-durations", metavar="OUT.json", default=None,
                     help="write each test's setup/call/teardown seconds, its fixtures' setup and the kinds of "
                          "process it started to OUT.json (a worker's to OUT.gwN.json)")


def pytest_configure(config):
    out = config.getoption("suite_durations")
    if not out:
        return
    out = Path(out).resolve()
    worker = getattr(config, "workerinput", {}).get("workerid")
    if worker:
        out = out.with_name(f"{out.stem}.{worker}.json")
    config.pluginmanager.register(Recorder(out), "suite-durations-recorder")


def read(out: Path) -> dict[str, dict]:
    """Every test's record of a run into ``out``: its own file's and its xdist workers'."""
    out = Path(out)
    tests: dict[str, dict] = {}
    for path in [out, *sorted(out.parent.glob(f"{out.stem}.gw*.json"))]:
        if path.exists():
            tests.update(json.loads(path.read_text()))
    return tests
