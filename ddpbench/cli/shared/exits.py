"""How a command ends: its exit codes, the one line it says on stderr, and the line and code of a
command that could not write (a full disk, a folder it may not write)."""

from __future__ import annotations

import errno
import sys
from pathlib import Path

EXIT_FAILED = 1  # a job failed or timed out, or results could not be written
EXIT_BAD_INPUT = 2
EXIT_UNTESTED = 3  # a gate tested nothing, and waiting for more commits will not change that (history check)
EXIT_INTERRUPTED = 130


def say_error(text: str) -> None:
    """One line on stderr, whatever the user typed: control characters (a newline in a flag's
    value) and the lone surrogates a non-UTF-8 file name arrives as are written as escapes."""
    sys.stderr.write("".join(c if c.isprintable() else ascii(c)[1:-1] for c in text) + "\n")
    sys.stderr.flush()



#: errno -> what to do where a command could not write: (a sweep, which finishes with --resume; any other)
WRITE_FIXES = {errno.ENOSPC: ("free space", "free space and run it again"),
               errno.EDQUOT: ("free space", "free space and run it again"),
               errno.EROFS: ("make the folder writable", "give a folder you can write"),
               errno.EACCES: ("make the folder writable", "give a folder you can write"),
               errno.EPERM: ("make the folder writable", "give a folder you can write")}


def cannot_write(err: OSError, args) -> tuple[str, int] | None:
    """The one line and exit code of a command that could not write (:data:`WRITE_FIXES`); None for
    another error. A command with ``--resume`` keeps every launch it stored (the store truncates a
    record it could not finish) and exits 1; any other names the folder it could not write in, and
    exits 2 where that folder is one it may not write (bad input), 1 where the disk is full."""
    fixes = WRITE_FIXES.get(err.errno)
    if fixes is None:
        return None
    if hasattr(args, "resume"):
        return (f"error: cannot write {err.filename or 'the results'}: {err.strerror}; every launch stored before is "
                f"intact; {fixes[0]} and rerun with --resume to finish"), EXIT_FAILED
    where = f" in {Path(err.filename).parent}" if err.filename else ""
    fix = fixes[1] + (" (--out)" if fixes[1].startswith("give") and hasattr(args, "out") else "")
    return (f"error: cannot write{where}: {err.strerror}; {fix}",
            EXIT_FAILED if err.errno in (errno.ENOSPC, errno.EDQUOT) else EXIT_BAD_INPUT)

