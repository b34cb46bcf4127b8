"""One writer's contract: what every command that writes a folder holds to, in this module alone.

Each command that writes (``sweep``, ``run``, ``tune``, ``collectives``, ``report``, ``compare``,
``ab``, ``history add``, ``history page``, ``traces``, ``watch``) says what it is about to write as a
:class:`Claim`, and :func:`holding` does the rest:

* **Kinds of folder.** A results folder, a report folder, a compare folder, an ``ab`` folder, a
  history store, a history page's folder, a trace report's folder and a watched run's folder are
  each one :class:`Kind` (:data:`KINDS`). A folder is the kind its marker ``.ddpbench-folder``
  names; a command refuses a folder of another kind in one line, ``--force`` or not: a compare page
  never lands in a results folder, a store is never filed inside a sweep's results. A results folder
  (and a watched run's) is its own report's folder (``report A`` writes into ``A``); a report of
  ``A`` elsewhere is a report folder.
* **Whose run.** The marker names the command that wrote the folder and the run it wrote
  (:attr:`Claim.run`: ``compare``'s two folders, the report's results folder, ``ab``'s two sides,
  the page's store). A command writes again into its own run's folder; another run's output is
  replaced only with ``--force``, and then only the command's own files. A results folder and a
  store hold every run of their kind (a sweep resumes; many sweeps file into one store).
* **No blessing.** A marker blesses its folder for its kind and run, never for every later
  command. A marker written before markers named a kind (ddpbench 2026 and earlier) stands for the
  kind whose files the folder holds; a folder of anything else is someone else's, and is written
  only with ``--force``.
* **One writer at a time.** Every writer holds the folder's lock (``.ddpbench.lock``, an ``flock``
  the kernel drops with the process however it ends) from its checks to its last file, and notes
  its pid, host, command and start beside it (``.ddpbench.owner``). A short writer (a report, a
  page, a filing) waits for another short one (:data:`WAIT_S` at most); a sweep or an ``ab`` is
  refused at once with one line naming the pid, unless the command's ``--wait`` waits.
* **Files whole.** Each file is written to a temporary name beside it and renamed into place
  (:func:`ddpbench.files.sidefiles.replace_file`): a reader never sees one half-written.

What each check refuses is one line (:class:`~ddpbench.errors.InputError`, exit 2); the folder
rules shared with the sweep's own names (links, files, writability) are
:mod:`ddpbench.files.folders`'s.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import fnmatch
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ddpbench.errors import InputError
from ddpbench.files.folders import (
    CONTROL,
    FLAG,
    LOCK,
    MARKER,
    OWNER,
    RESULTS_FILE,
    SWEEP_ENTRIES,
    check_folder,
    check_target,
    check_writable,
    foreign_entries,
    write_new,
)
from ddpbench.files.sidefiles import FILE_MODE, umask

#: how long a short writer (a report, a compare page, a filing) waits for another short one
WAIT_S = 120.0
#: how long a writer that finds the lock taken waits for the holder's note (written just after it)
OWNER_S = 2.0
_POLL_S = 0.05


@dataclass(frozen=True)
class Kind:
    """A kind of folder ddpbench writes: its name in the marker, and how a message names it."""

    name: str
    noun: str  # "a results folder"
    writers: str  # the commands that write one: "sweep, run, tune or collectives"


RESULTS = Kind("results", "a results folder", "sweep, run, tune or collectives")
REPORT = Kind("report", "a report folder", "report --out")
COMPARE = Kind("compare", "a compare folder", "compare")
AB = Kind("ab", "an ab folder", "ab")
TRACES = Kind("traces", "a trace report's folder", "traces")
STORE = Kind("store", "a history store", "history add")
PAGE = Kind("page", "a history page's folder", "history page")
WATCH = Kind("watch", "a watched run's folder", "watch")
#: every kind, by the name its marker holds
KINDS = {kind.name: kind for kind in (RESULTS, REPORT, COMPARE, AB, STORE, PAGE, TRACES, WATCH)}


@dataclass(frozen=True)
class Claim:
    """What one command is about to write into one folder."""

    kind: Kind
    writer: str  # the command, as the user typed it: "compare", "history page"
    #: the run the folder holds: what it was made from ("" where every run of the kind shares the
    #: folder: a results folder, a store)
    run: str = ""
    flag: str = FLAG
    #: the names (or glob patterns) it writes there; ``own``: what else in the folder is the kind's
    writes: tuple[str, ...] = ()
    own: Callable[[Path], bool] | None = field(default=None, compare=False)
    what: str = "folder"  # how a message names the folder: "folder", "history store"
    #: a short writer waits for another short one (:data:`WAIT_S`); a long one is refused at once
    short: bool = True


def marker(folder: Path) -> dict:
    """What the folder's marker says ({} where there is none or it cannot be read)."""
    try:
        found = json.loads((Path(folder) / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _names(folder: Path) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []


def _matches(name: str, patterns) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _is_own(folder: Path, name: str, claim: Claim) -> bool:
    return _matches(name, claim.writes) or (claim.own is not None and claim.own(folder / name))


def kind_of(folder: Path, claim: Claim | None = None) -> Kind | None:
    """The kind ``folder`` is: its marker's. A folder written before markers named a kind: a results
    folder where it holds a results file; where it holds a marker without a kind, the kind whose
    files are all it holds (a sweep's names, or ``claim``'s). None where no kind can be told: a
    folder of someone else's files, or an empty one."""
    folder = Path(folder)
    # listed before the marker is read: a writer marks its folder before it writes there, so whatever
    # of its own is seen here has its marker there by the time it is read (another writer may be at work)
    names = [n for n in _names(folder) if n not in CONTROL]
    said = marker(folder)
    named = said.get("kind")
    if isinstance(named, str) and named in KINDS:
        return KINDS[named]
    if RESULTS_FILE in names:
        return RESULTS
    if not names or not (folder / MARKER).is_file():
        return None
    if claim is not None and claim.kind is RESULTS and all(n in SWEEP_ENTRIES for n in names):
        return RESULTS
    if claim is not None and all(_is_own(folder, n, claim) for n in names):
        return claim.kind
    return None


def describe_run(found: dict) -> str:
    """A marker's writer and run, for a message: "compare's output of A vs B"."""
    writer, run = found.get("writer"), found.get("run")
    if not isinstance(writer, str):
        return "another run's output"
    return f"{writer}'s output" + (f" of {run}" if isinstance(run, str) and run else "")


def refusal(folder: Path, claim: Claim, force: bool) -> str:
    """Why ``claim`` may not write into ``folder`` ("" where it may): the kind, the run, whose files."""
    folder = Path(folder)
    foreign = foreign_entries(folder, claim.own)  # before the kind, as in kind_of: a writer marks, then writes
    found = kind_of(folder, claim)
    if found is not None and found is not claim.kind:
        return (f"{folder} is {found.noun} (written by {found.writers}), and {claim.writer} writes "
                f"{claim.kind.noun}: give another {claim.what}")
    said = marker(folder)
    if found is claim.kind:
        run = said.get("run")
        if claim.run and isinstance(run, str) and run and run != claim.run and not force:
            return (f"{folder} holds {describe_run(said)}; give another {claim.what}, or pass --force to replace "
                    f"{claim.writer}'s files there with this run's")
        return ""
    if foreign and not force:
        shown = ", ".join(repr(n) for n in foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        return (f"{folder} holds files ddpbench did not write ({shown}); give a new or empty {claim.what}, or pass "
                "--force to write into this one anyway")
    return ""


def check_claim(folder: Path, claim: Claim, force: bool = False) -> None:
    """Every check of the contract that needs no lock, before anything is written: the target (no
    link, no file, nothing under a file), no link at a name the command writes, the kind, the run
    and whose files. One line (:class:`InputError`) naming the flag otherwise."""
    folder = Path(folder)
    check_target(folder, claim.flag, claim.what)
    if claim.kind is RESULTS:
        check_folder(folder, force, claim.flag)  # a sweep's own names: no link, none of the wrong kind
    linked = [n for n in _names(folder) if _matches(n, (*claim.writes, *CONTROL)) and (folder / n).is_symlink()]
    if linked:
        raise InputError("command line", claim.flag, f"{folder / linked[0]} is a symbolic link; ddpbench writes only "
                         f"files of its own there: remove the link or give another {claim.what}")
    why = refusal(folder, claim, force)
    if why:
        raise InputError("command line", claim.flag, why)


def owner_of(folder: Path) -> dict:
    """What the writer holding the folder noted beside its lock (pid, host, since, command, writer);
    {} when unreadable."""
    try:
        owner = json.loads((Path(folder) / OWNER).read_text())
    except (OSError, ValueError):
        return {}
    return owner if isinstance(owner, dict) else {}


def describe_owner(owner: dict) -> str:
    """"compare, pid 412 on ci-7, running since 2026-11-28T16:40:02Z"."""
    pid = owner.get("pid")
    writer = owner.get("writer")
    who = f"{writer}, " if isinstance(writer, str) else ""
    if not isinstance(pid, int):
        return f"{who}a writer whose pid is not known"
    host, since = owner.get("host"), owner.get("since")
    return (f"{who}pid {pid}" + (f" on {host}" if isinstance(host, str) else "")
            + (f", running since {since}" if isinstance(since, str) else ""))


def busy(folder: Path) -> dict | None:
    """The owner note of the writer holding ``folder`` now, or None where none holds it; writes
    nothing (a reader's question: is this folder still being written?)."""
    try:
        fd = os.open(Path(folder) / LOCK, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None  # no lock file: no writer has held it yet
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return owner_of(folder)
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _take(lock, folder: Path, claim: Claim, wait: bool, on_wait: Callable[[str], None] | None) -> None:
    """Take the folder's lock: at once, or as the claim and ``wait`` say (module docstring)."""
    from filelock import Timeout

    deadline = time.monotonic() + OWNER_S
    while True:
        try:
            lock.acquire(timeout=0)
            return
        except Timeout:
            pass
        owner = owner_of(folder)
        # a holder without a note took the lock an instant ago (its note comes next) or is letting it go
        if owner or time.monotonic() > deadline:
            break
        time.sleep(_POLL_S)
    running = describe_owner(owner)
    patient = wait or (claim.short and owner.get("short") is True)
    if not patient:
        hint = "pass --wait to start when it does, " if claim.kind is RESULTS else ""
        raise InputError("command line", claim.flag, f"{folder} is in use by another writer ({running}); wait for it "
                         f"to end, {hint}or give another {claim.what}") from None
    if on_wait is not None:
        on_wait(running)
    try:
        lock.acquire(timeout=-1 if wait else WAIT_S, poll_interval=_POLL_S)
    except Timeout:
        raise InputError("command line", claim.flag, f"{folder} stayed in use by another writer ({running}) for "
                         f"{WAIT_S:g} s; run this again when it ends, or give another {claim.what}") from None


@contextlib.contextmanager
def holding(folder: Path, claim: Claim, *, force: bool = False, wait: bool = False,
            on_wait: Callable[[str], None] | None = None) -> Iterator[Path]:
    """Hold ``folder`` for ``claim`` (module docstring): check it, make it, take its lock, check it
    again under the lock (another writer may have changed it while this one waited), mark it with
    the claim's kind, writer and run, note this process beside the lock; release it on leaving.
    One line (:class:`InputError`) for every refusal."""
    from filelock import FileLock

    folder = Path(folder)
    check_claim(folder, claim, force)
    check_writable(folder, claim.flag, claim.what)
    # the umask decides, as for the folder's other files (filelock before 4 made it 0o644 whatever the
    # umask, and a group sharing a store could not take it)
    lock = FileLock(str(folder / LOCK), mode=FILE_MODE & ~umask())
    _take(lock, folder, claim, wait, on_wait)
    try:
        write_new(folder / OWNER, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": now(),
                                              "writer": claim.writer, "short": claim.short,
                                              "command": sys.argv}) + "\n")
        check_claim(folder, claim, force)
        said = marker(folder)
        mark = {"written_by": "ddpbench", "kind": claim.kind.name, "writer": claim.writer, "run": claim.run}
        if any(said.get(k) != v for k, v in mark.items() if k != "writer") or not said:
            write_new(folder / MARKER, json.dumps({**mark, "created": now()}) + "\n")
        yield folder
    finally:
        with contextlib.suppress(OSError):
            (folder / OWNER).unlink()
        lock.release()


def adopt(folder: Path, force: bool = False) -> None:
    """Check a results folder and mark it, without the lock: for a follower node of a multi-node
    sweep, which writes its agents' logs into node 0's folder while node 0 holds the lock."""
    claim = sweep_claim()
    check_claim(folder, claim, force)
    Path(folder).mkdir(parents=True, exist_ok=True)
    if marker(folder).get("kind") != RESULTS.name:
        write_new(Path(folder) / MARKER, json.dumps({"written_by": "ddpbench", "kind": RESULTS.name,
                                                     "writer": "sweep", "run": "", "created": now()}) + "\n")


def sweep_claim(writer: str = "sweep", flag: str = FLAG) -> Claim:
    """A sweep's claim on its results folder (``sweep``, ``run``, ``tune``, ``collectives``)."""
    return Claim(RESULTS, writer, flag=flag, writes=SWEEP_ENTRIES, short=False)


@contextlib.contextmanager
def claimed(folder: Path, *, wait: bool = False, force: bool = False, writer: str = "sweep",
            on_wait: Callable[[str], None] | None = None) -> Iterator[Path]:
    """Hold a results folder for one sweep: :func:`holding` with :func:`sweep_claim`."""
    with holding(folder, sweep_claim(writer), force=force, wait=wait, on_wait=on_wait) as held:
        yield held


def waited_for(line: Callable[[str], None], folder: Path) -> Callable[[str], None]:
    """The ``on_wait`` of a short writer: one line saying whom it waits for."""
    return lambda running: line(f"waiting for {folder}: another writer ({running}) holds it")


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
