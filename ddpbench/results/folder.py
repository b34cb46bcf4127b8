"""One results folder, one sweep: the lock a sweep holds on its folder, and which folders it may write.

* **The lock.** A sweep (``sweep``, ``run``, ``tune``, ``collectives``, ``--resume`` or not) holds
  ``.ddpbench.lock`` (:mod:`filelock`: an ``flock`` the kernel drops when the process ends, however
  it ends) from before it writes anything until its report is written, and notes its pid, host,
  start and command beside it in ``.ddpbench.owner``. A second sweep into the folder ends with one
  line naming the folder and that pid (exit 2), or with ``--wait`` waits for the lock.
* **Whose folder.** ddpbench writes only into a folder that is new, empty, or its own: one holding
  its marker ``.ddpbench-folder`` (written when a sweep first claims the folder), or a
  ``results.jsonl`` (folders written before the marker existed). Any other folder is refused with
  one line unless the user passes ``--force``. What another node or command of ddpbench has there for
  an instant (a write probe, a marker or owner note before its rename) is not another's file.
* **No links.** None of the names a sweep writes in the folder (the results file, ``logs/``,
  ``.work/``, ``traces/``, ``experiment.toml``, ``search.json``, the lock, owner and marker) may be a
  symbolic link: a sweep, ``--resume`` above all, would otherwise append or write through it to a
  file outside the folder.

The same policy holds for every folder a command writes into, in this module alone
(:func:`claim_output`): ``compare --out``, ``report --out``, ``history page --out``, and a history
store (``history add --store``, ``history bisect --store``), each of which writes the marker too:

* **An empty value is refused** (:func:`path_flag`): ``Path("")`` is this folder, and in CI an unset
  variable would write into the repository's root.
* **Whose folder**, as above: a folder holding files ddpbench did not write is refused unless the
  command's ``--force``, and then only the command's own files are replaced.
* **No links on the way in or out**: the folder itself may not be a link, nor a name the command
  writes in it (a history store's machine folders are its own names too).
* **One line, exit 2** for a file where a folder is wanted, a path under a file, and a folder that
  cannot be written (no permission, a read-only file system).
"""

from __future__ import annotations

import contextlib
import fnmatch
import datetime as _dt
import json
import os
import socket
import sys
from pathlib import Path
from collections.abc import Callable, Iterable, Iterator

from ddpbench.errors import InputError
from ddpbench.results.schema import RESULTS_FILE, SEARCH_FILE, TRACE_DIR

MARKER = ".ddpbench-folder"
LOCK = ".ddpbench.lock"
OWNER = ".ddpbench.owner"
#: every name a sweep writes directly in its folder (the report's files are the report's): files, folders
FILE_ENTRIES = (RESULTS_FILE, "experiment.toml", SEARCH_FILE, MARKER, LOCK, OWNER)
DIR_ENTRIES = ("logs", ".work", TRACE_DIR)
SWEEP_ENTRIES = FILE_ENTRIES + DIR_ENTRIES
#: the name (and the writer's pid after it) of the empty file a command writes and removes at once to
#: find the folder writable (:func:`ddpbench.cli.common.check_out_dir`): another node's or command's
#: probe, there for an instant, is not a file ddpbench did not write
WRITE_PROBE = ".ddpbench-write-test-"
FLAG = "--out"


def foreign_entries(out_dir: Path, own: Callable[[Path], bool] | None = None) -> list[str]:
    """The names in ``out_dir`` that make it a folder ddpbench did not write: none when it is
    missing, empty, or holds the marker or a results file. ``own``: what else is ddpbench's there
    (a history store's machine folders, written before the marker was)."""
    try:
        names = sorted(os.listdir(out_dir))
    except FileNotFoundError:
        return []
    if (out_dir / MARKER).is_file() or (out_dir / RESULTS_FILE).is_file():
        return []
    # a sweep stopped before its marker; another command's write probe; another node's marker or owner
    # note being written (:func:`_write_new`)
    return [name for name in names if name not in (LOCK, OWNER) and not name.startswith(WRITE_PROBE)
            and not _being_written(name) and not (own is not None and own(out_dir / name))]


def _temporary_name(name: str, pid: int | str) -> str:
    """The name :func:`_write_new` writes ``name`` under before renaming it into place."""
    return f"{name}.{pid}.tmp"


def _being_written(name: str) -> bool:
    """Whether ``name`` is a marker or owner note of :func:`_write_new` before its rename: two nodes of
    one sweep claim a shared folder at once, and one's marker is there for an instant under that name
    before the other sees the marker itself."""
    written, _, pid = name.removesuffix(".tmp").rpartition(".")
    return pid.isdigit() and written in (MARKER, OWNER) and name == _temporary_name(written, pid)


def linked_entries(out_dir: Path) -> list[str]:
    """The names a sweep writes in ``out_dir`` that are symbolic links there."""
    return [name for name in SWEEP_ENTRIES if (out_dir / name).is_symlink()]


def misplaced_entries(out_dir: Path) -> list[str]:
    """The names a sweep writes in ``out_dir`` that are there as the wrong kind (a folder where it
    writes a file, or the other way round)."""
    return ([name for name in FILE_ENTRIES if (out_dir / name).is_dir()]
            + [name for name in DIR_ENTRIES if (out_dir / name).exists() and not (out_dir / name).is_dir()])


def owner_of(out_dir: Path) -> dict:
    """What the running sweep noted beside the lock (pid, host, since, command); {} when unreadable."""
    try:
        owner = json.loads((out_dir / OWNER).read_text())
    except (OSError, ValueError):
        return {}
    return owner if isinstance(owner, dict) else {}


def describe_owner(owner: dict) -> str:
    pid = owner.get("pid")
    if not isinstance(pid, int):
        return "a sweep whose pid is not known"
    host = owner.get("host")
    since = owner.get("since")
    return f"pid {pid}" + (f" on {host}" if isinstance(host, str) else "") + (
        f", running since {since}" if isinstance(since, str) else "")


def _write_new(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` by a temporary file renamed over it: never through a link."""
    tmp = path.with_name(_temporary_name(path.name, os.getpid()))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def check_folder(out_dir: Path, force: bool = False) -> None:
    """The folder rules above, before anything is written: one line (InputError) naming what is wrong."""
    linked = linked_entries(out_dir)
    if linked:
        raise InputError("command line", FLAG, f"{out_dir / linked[0]} is a symbolic link; a sweep writes only "
                         "regular files and folders of its own there: remove the link or give another folder")
    misplaced = misplaced_entries(out_dir)
    if misplaced:
        what = "a folder" if misplaced[0] in FILE_ENTRIES else "not a folder"
        raise InputError("command line", FLAG, f"{out_dir / misplaced[0]} is {what}, where a sweep writes "
                         f"{'a file' if what == 'a folder' else 'a folder'}: remove it or give another folder")
    _refuse_foreign(out_dir, foreign_entries(out_dir), force, FLAG)


def _refuse_foreign(out_dir: Path, foreign: list[str], force: bool, flag: str) -> None:
    if foreign and not force:
        shown = ", ".join(repr(name) for name in foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3
                                                                 else "")
        raise InputError("command line", flag, f"{out_dir} holds files ddpbench did not write ({shown}); give a new "
                         "or empty folder, or pass --force to write into this one anyway")


def path_flag(flag: str) -> Callable[[str], Path]:
    """The argparse ``type`` of a flag that names a folder or store: its path, or one line
    (:class:`InputError`, which the command line reports as it parses) for an empty value."""
    def given(text: str) -> Path:
        if not text.strip():
            raise InputError("command line", flag, "empty value refused (an unset variable?); give a folder")
        return Path(text)

    given.__name__ = "path"
    return given


def check_target(path: Path, flag: str = FLAG, what: str = "folder") -> None:
    """Before anything is written: ``path`` is no link, no file, and lies under no file (one line,
    :class:`InputError`, naming the flag otherwise). An empty value never gets here: ``Path("")`` is
    already the current folder, so the flag refuses it as it is parsed (:func:`path_flag`)."""
    if path.is_symlink():
        raise InputError("command line", flag, f"{path} is a symbolic link; ddpbench writes only into a {what} "
                         "that is no link: give the folder itself or another")
    if path.exists() and not path.is_dir():
        raise InputError("command line", flag, f"{path} is a file; give a {what}")
    above = next((p for p in path.parents if p.exists() or p.is_symlink()), None)
    if above is not None and not above.is_dir():
        raise InputError("command line", flag, f"{path} lies under {above}, which is a file; give a {what}")


def check_writable(path: Path, flag: str = FLAG, what: str = "folder") -> None:
    """Make ``path`` (and the folders above it) and write an empty file there and remove it: one
    line (:class:`InputError`) where it cannot be written (no permission, a read-only file system)."""
    probe = path / f"{WRITE_PROBE}{os.getpid()}"
    try:
        path.mkdir(parents=True, exist_ok=True)
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644))
        probe.unlink()
    except OSError as err:
        raise InputError("command line", flag, f"cannot write to {path}: {err.strerror or err}; give a {what} you "
                         "can write") from None


def claim_output(out_dir: Path, flag: str = FLAG, *, force: bool = False, writes: Iterable[str] = (),
                 own: Callable[[Path], bool] | None = None, what: str = "folder") -> Path:
    """The policy (module docstring) for a folder a command writes its own files into: no empty
    value, no link, no file, nothing under a file; a folder holding files ddpbench did not write only
    with ``force``; no link at a name the command writes (``writes``: names or glob patterns); made,
    found writable and marked as ddpbench's. One line (:class:`InputError`) otherwise."""
    out_dir = Path(out_dir)
    check_target(out_dir, flag, what)
    try:
        names = sorted(os.listdir(out_dir))
    except FileNotFoundError:
        names = []
    patterns = (*writes, MARKER)
    linked = [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns) and (out_dir / n).is_symlink()]
    if linked:
        raise InputError("command line", flag, f"{out_dir / linked[0]} is a symbolic link; ddpbench writes only "
                         f"files of its own there: remove the link or give another {what}")
    _refuse_foreign(out_dir, foreign_entries(out_dir, own), force, flag)
    check_writable(out_dir, flag, what)
    if not (out_dir / MARKER).exists():
        _write_new(out_dir / MARKER, json.dumps({"written_by": "ddpbench", "created": _now()}) + "\n")
    return out_dir


def adopt(out_dir: Path, force: bool = False) -> None:
    """Check the folder rules and mark ``out_dir`` as ddpbench's. Alone (without the lock) for a
    follower node of a multi-node sweep, which writes its agents' logs into node 0's folder while
    node 0 holds the lock."""
    check_folder(out_dir, force)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not (out_dir / MARKER).exists():
        _write_new(out_dir / MARKER, json.dumps({"written_by": "ddpbench", "created": _now()}) + "\n")


@contextlib.contextmanager
def claimed(out_dir: Path, *, wait: bool = False, force: bool = False,
            on_wait: Callable[[str], None] | None = None) -> Iterator[Path]:
    """Hold ``out_dir`` for one sweep: check the folder rules, take its lock (or, with ``wait``,
    wait for it, calling ``on_wait`` with the running sweep's description first), mark the folder
    as ddpbench's and note this process beside the lock; release it all on leaving."""
    from filelock import FileLock, Timeout

    out_dir = Path(out_dir)
    check_folder(out_dir, force)
    out_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(out_dir / LOCK))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        running = describe_owner(owner_of(out_dir))
        if not wait:
            raise InputError("command line", FLAG, f"{out_dir} is in use by another sweep ({running}); wait for it "
                             "to end, pass --wait to start when it does, or give another folder") from None
        if on_wait is not None:
            on_wait(running)
        lock.acquire()
    try:
        adopt(out_dir, force)  # as the sweep that held it left it
        _write_new(out_dir / OWNER, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": _now(),
                                                "command": sys.argv}) + "\n")
        yield out_dir
    finally:
        with contextlib.suppress(OSError):
            (out_dir / OWNER).unlink()
        lock.release()


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
