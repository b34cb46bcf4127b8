"""The rules of a folder ddpbench writes that do not depend on which command writes it: the names a
sweep writes in its results folder, no links, no files where a folder is wanted, a folder that can
be written, and whose files are there. Which command may write which folder, its lock and its
marker are :mod:`ddpbench.files.writing`'s (one writer's contract).

* **Whose files.** A folder that is new, empty, or holds only ddpbench's own control files (its
  marker, lock and owner note, another command's write probe, a marker or owner note before its
  rename) holds nobody's files; anything else there (:func:`foreign_entries`) is someone's, and a
  command writes there only with ``--force``.
* **No links.** None of the names a sweep writes in its folder (the results file, ``logs/``,
  ``.work/``, ``traces/``, ``experiment.toml``, ``search.json``, the lock, owner and marker) may be a
  symbolic link: a sweep, ``--resume`` above all, would otherwise append or write through it to a
  file outside the folder; nor the folder itself.
* **An empty value is refused** (:func:`path_flag`): ``Path("")`` is this folder, and in CI an unset
  variable would write into the repository's root.
* **One line, exit 2** for a file where a folder is wanted, a path under a file, and a folder that
  cannot be written (no permission, a read-only file system).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ddpbench.errors import InputError

#: a results folder's records (:mod:`ddpbench.results.store`; what a record holds is :mod:`ddpbench.results.schema`'s)
RESULTS_FILE = "results.jsonl"
#: beside the results of a ``tune`` folder: the race (rounds, who went out and why, the verdict)
SEARCH_FILE = "search.json"
#: beside the results of traced jobs: their ranks' profiler traces (``<key>-r<repeat>.rank<r>.json.gz``)
TRACE_DIR = "traces"
MARKER = ".ddpbench-folder"
LOCK = ".ddpbench.lock"
OWNER = ".ddpbench.owner"
#: every name a sweep writes directly in its folder (the report's files are the report's): files, folders
FILE_ENTRIES = (RESULTS_FILE, "experiment.toml", SEARCH_FILE, MARKER, LOCK, OWNER)
DIR_ENTRIES = ("logs", ".work", TRACE_DIR)
SWEEP_ENTRIES = FILE_ENTRIES + DIR_ENTRIES
#: the name (and the writer's pid after it) of the empty file a command writes and removes at once to
#: find the folder writable (:func:`ddpbench.launch.can_run.check_out_dir`): another node's or command's
#: probe, there for an instant, is not a file ddpbench did not write
WRITE_PROBE = ".ddpbench-write-test-"
FLAG = "--out"
#: ddpbench's own control files in any folder it writes: its marker, its lock, the owner's note
CONTROL = (MARKER, LOCK, OWNER)


def foreign_entries(out_dir: Path, own: Callable[[Path], bool] | None = None) -> list[str]:
    """The names in ``out_dir`` that are someone else's: all but ddpbench's control files (module
    docstring). ``own``: what else is ddpbench's there (a history store's machine folders, written
    before the marker was). Whether the folder is this command's, whatever it holds, is the
    contract's (:func:`ddpbench.files.writing.refusal`)."""
    try:
        names = sorted(os.listdir(out_dir))
    except FileNotFoundError:
        return []
    # a sweep stopped before its marker; another command's write probe; another node's marker or owner
    # note being written (:func:`write_new`)
    return [name for name in names if name not in CONTROL and not name.startswith(WRITE_PROBE)
            and not _being_written(name) and not (own is not None and own(out_dir / name))]


def _temporary_name(name: str, pid: int | str) -> str:
    """The name :func:`write_new` writes ``name`` under before renaming it into place."""
    return f"{name}.{pid}.tmp"


def _being_written(name: str) -> bool:
    """Whether ``name`` is a marker or owner note of :func:`write_new` before its rename: two nodes of
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


def write_new(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (a marker, an owner note) by a temporary file renamed over it: never
    through a link, never seen half-written."""
    tmp = path.with_name(_temporary_name(path.name, os.getpid()))
    # 0o666 and the umask decide, as for any file the user makes: a store a group shares stays readable
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o666)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def check_folder(out_dir: Path, force: bool = False, flag: str = FLAG) -> None:
    """A sweep's own names in its folder, before anything is written: none a link, none of the wrong
    kind (one line, :class:`InputError`, otherwise). ``force`` changes neither."""
    linked = linked_entries(out_dir)
    if linked:
        raise InputError("command line", flag, f"{out_dir / linked[0]} is a symbolic link; a sweep writes only "
                         "regular files and folders of its own there: remove the link or give another folder")
    misplaced = misplaced_entries(out_dir)
    if misplaced:
        what = "a folder" if misplaced[0] in FILE_ENTRIES else "not a folder"
        raise InputError("command line", flag, f"{out_dir / misplaced[0]} is {what}, where a sweep writes "
                         f"{'a file' if what == 'a folder' else 'a folder'}: remove it or give another folder")


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
