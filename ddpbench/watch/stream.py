"""The stream a watched run's steps are written to as they arrive: ``steps.csv`` in the watch's output
folder, one row a step of any rank, in the order the collector (:mod:`ddpbench.watch.collector`)
received them. It is the run's record while the run goes on, so it is written as it is received,
whole rows only, and never anywhere but into a file of its own.

* **Columns** (:data:`STREAM_COLUMNS`, declared here once): the rank, the step row as the rank sent it
  (:data:`ddpbench.results.phases.WATCH_STEP_COLUMNS`), the rank's host (from its hello) and ``received_s``, the
  collector's wall clock when the batch came (seconds since the epoch: one clock for every rank, where
  ``end_s`` is each rank's host's own). A NaN (a phase of an unsampled step) is an empty cell; every other
  number is Python's ``repr`` of it, which reads back as the very same float.
* **Nothing received is lost to a crash.** Each batch is written with one unbuffered ``os.write`` before
  the collector reads on: a ``kill -9`` of the collector loses no row it had taken off a socket (the
  kernel holds what was written). :meth:`Stream.close` fsyncs, for the machine's own crash.
* **A file of its own.** The folder is checked as every output folder is
  (:func:`ddpbench.files.folders.check_target`, :func:`~ddpbench.files.folders.check_writable`); the
  stream is created new (``O_EXCL``) and never through a symbolic link (``O_NOFOLLOW``): a ``steps.csv``
  already there, a link among them, is refused in one line (:class:`~ddpbench.errors.InputError`)
  before anything runs, never appended to.
* **A full disk** (any ``OSError`` while writing: ENOSPC, EIO, EDQUOT) stops the stream, cut back to its
  last whole row; the rows received after it are counted (:attr:`Stream.unwritten`) and said in one
  line (:attr:`Stream.problem`), and the collector goes on collecting (its bounded windows, its listeners).
"""

from __future__ import annotations

import errno
import math
import os
from pathlib import Path

from ddpbench.errors import InputError
from ddpbench.files.folders import FLAG, check_target, check_writable
from ddpbench.results.phases import WATCH_STEP_COLUMNS as STEP_COLUMNS

#: the stream's file, in the watch's output folder
STREAM_FILE = "steps.csv"
#: the stream's columns, in order: who sent the row, the row as sent, and when it came (module docstring)
STREAM_COLUMNS = ("rank", *STEP_COLUMNS, "host", "received_s")


def append_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` at the end of ``fd`` (opened ``O_APPEND``), unbuffered: ``OSError`` as the
    system gives it (a full disk: ENOSPC)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def cell(text) -> str:
    """``text`` as a CSV cell: as it is, or quoted (its quotes doubled) where it holds a comma, a quote or
    a line break; None is an empty cell."""
    if text is None:
        return ""
    text = str(text)
    return f'"{text.replace(chr(34), chr(34) * 2)}"' if any(c in text for c in ',"\r\n') else text


def lines(rank: int, host, rows: list[tuple], received_s: float) -> str:
    """``rows`` (each in :data:`~ddpbench.results.phases.WATCH_STEP_COLUMNS`' order) as the stream's lines, in
    :data:`STREAM_COLUMNS`' order: NaN as an empty cell, other numbers exact (Python's ``repr``)."""
    head, tail = f"{rank},", f",{cell(host)},{received_s!r}\n"
    isnan = math.isnan
    return "".join(head + ",".join([repr(row[0]), *("" if isnan(v) else repr(v) for v in row[1:])]) + tail
                   for row in rows)


class Stream:
    """``steps.csv`` in ``folder``, created new with its header (module docstring); :class:`InputError`,
    naming ``flag``, where the folder cannot hold it or the file is there already.

    ``written``, ``unwritten``: the rows written, and those received after the stream stopped
    (a full disk); ``problem``: that stop in one line (None while it writes)."""

    def __init__(self, folder: Path, flag: str = FLAG):
        folder = Path(folder)
        check_target(folder, flag)
        check_writable(folder, flag)
        self.path = folder / STREAM_FILE
        if self.path.is_symlink():
            raise InputError("command line", flag, f"{self.path} is a symbolic link; the watch writes its stream "
                             "only into a file of its own: remove the link or give another folder")
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_APPEND
                               | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            raise InputError("command line", flag, f"{self.path} is there already, and the watch never writes over "
                             "or after a file it did not create: give a new folder") from None
        except OSError as err:
            raise InputError("command line", flag, f"cannot create {self.path}: {err.strerror or err}") from None
        self.written = self.unwritten = 0
        self._size = 0  # bytes of whole rows (and the header) in the file
        self._stopped: str | None = None  # why the stream stopped (a full disk), once it has
        self._write((",".join(STREAM_COLUMNS) + "\n").encode(), 0)

    def rows(self, rank: int, host, rows: list[tuple], received_s: float) -> None:
        """Append one batch of ``rank``'s rows, received at ``received_s`` (module docstring): one write."""
        if self._fd is None:
            self.unwritten += len(rows)
            return
        self._write(lines(rank, host, rows, received_s).encode(), len(rows))

    def _write(self, data: bytes, count: int) -> None:
        try:
            append_all(self._fd, data)
        except OSError as err:
            self._stop(err)
            self.unwritten += count
            return
        self._size += len(data)
        self.written += count

    def _stop(self, err: OSError) -> None:
        """The stream stopped by ``err``: cut back to its last whole row (best effort), closed."""
        name = errno.errorcode.get(err.errno, "") if err.errno else ""
        self._stopped = f"{err.strerror or err}{f' ({name})' if name else ''}"
        try:
            os.ftruncate(self._fd, self._size)
        except OSError:
            pass
        self._close_fd(sync=False)

    @property
    def problem(self) -> str | None:
        """The stream's stop in one line: what was not written and why (None while it writes)."""
        if self._stopped is None:
            return None
        return (f"{self.path}: {self.unwritten:,} rows received were not written (the stream stopped after "
                f"{self.written:,} rows: {self._stopped}); the collector kept each rank's latest rows only")

    def close(self) -> None:
        """Fsync and close the file (again: nothing)."""
        self._close_fd(sync=True)

    def _close_fd(self, sync: bool) -> None:
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is None:
            return
        try:
            if sync:
                os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)
