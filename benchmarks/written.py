"""What every benchmark's ``--out`` (and each other file it is told to write) holds to: a file is written only
where the user asked, never through a symbolic link, never over a folder, and a note this script marks with its
header (``<!-- written by benchmarks/NAME.py -->``, the first line) only over a file that begins with it: a file of
someone else's is refused before the benchmark runs, in one line with exit code 2, and checked again at the write.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def refuse(said: str) -> None:
    print(said, file=sys.stderr)
    raise SystemExit(2)


def check_out(path: Path, header: str | None = None, flag: str = "--out") -> None:
    """Refuses ``path`` (exit 2, one line naming ``flag``) unless it is a new file, or a file (not a link, not a
    folder) that begins with ``header`` where one is given."""
    if path.is_symlink():
        refuse(f"{flag}: {path} is a symbolic link; give a file of its own")
    if path.exists() and not path.is_file():
        refuse(f"{flag}: {path} is not a file; give a file's path")
    if header is not None and path.exists() and not path.read_text(errors="replace").startswith(header):
        refuse(f"{flag}: {path} holds what this script did not write; give a new file")


def write_out(path: Path, text: str, header: str | None = None, flag: str = "--out") -> None:
    """``text`` into ``path``, checked again as :func:`check_out` does (the run took a while), and opened without
    following a link that appeared since."""
    check_out(path, header, flag)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def emit(lines: list[str], out: Path | None, header: str | None = None) -> None:
    """A benchmark's table, its ``lines``: printed, and written to ``out`` where one is given (:func:`write_out`)."""
    text = "\n".join(lines) + "\n"
    print(text)
    if out:
        write_out(out, text, header)
