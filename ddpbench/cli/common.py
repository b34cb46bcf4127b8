"""What every command shares: exit codes, the one-line error, the output folder check."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ddpbench.errors import InputError

EXIT_FAILED = 1  # a job failed or timed out, or results could not be written
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def say_error(text: str) -> None:
    """One line on stderr, whatever the user typed: control characters (a newline in a flag's
    value) and the lone surrogates a non-UTF-8 file name arrives as are written as escapes."""
    sys.stderr.write("".join(c if c.isprintable() else ascii(c)[1:-1] for c in text) + "\n")
    sys.stderr.flush()


def check_out_dir(out_dir: Path) -> None:
    """The output folder must be a folder we can write, and its results file a file."""
    from ddpbench.results.schema import RESULTS_FILE

    if out_dir.exists() and not out_dir.is_dir():
        raise InputError("command line", "--out", f"{out_dir} is a file; give a folder")
    if (out_dir / RESULTS_FILE).exists() and not (out_dir / RESULTS_FILE).is_file():
        raise InputError("command line", "--out", f"{out_dir / RESULTS_FILE} is not a file; give another folder")
    probe = out_dir / f".ddpbench-write-test-{os.getpid()}"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as err:
        raise InputError("command line", "--out", f"cannot write to {out_dir}: {err.strerror}; "
                         "give a folder you can write") from None
