"""Experiment files: TOML in, or one line naming the file and what is wrong with it."""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

from ddpbench.errors import InputError

#: the largest experiment file read (the largest shipped is a few KB)
MAX_BYTES = 1 << 20

#: an experiment's name: it names the folder its results go to (reports/<name>/)
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def read_toml(path: Path) -> dict:
    """A TOML file as a dict, or :class:`InputError` naming the file and what is wrong."""
    source = str(path)
    try:
        raw = read_regular(path)
    except FileNotFoundError:
        raise InputError(source, None, "no such experiment file; pass a path such as experiments/quick.toml") from None
    except IsADirectoryError:
        raise InputError(source, None, "is a folder; pass an experiment .toml file") from None
    except OSError as err:
        raise InputError(source, None, err.strerror if err.errno is None else f"cannot read: {err.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(source, None, f"not UTF-8 text (byte {err.start}); save the file as UTF-8") from None
    try:
        data = _toml_loads(text)
    except ValueError as err:  # tomllib.TOMLDecodeError is a ValueError
        raise InputError(source, None, f"invalid TOML: {err}") from None
    return data


def read_regular(path: Path, limit: int = MAX_BYTES) -> bytes:
    """The bytes of ``path``, which must be a regular file of at most ``limit`` bytes: a device
    (/dev/zero), a FIFO or a socket is refused before a byte is read, and without blocking (the
    file is opened non-blocking), so is a file past the limit. OSError otherwise; one whose errno
    is None carries its sentence."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(info.st_mode):
            raise OSError(None, "is not a regular file (a device, a FIFO or a socket); pass an experiment .toml file")
        if info.st_size > limit:
            raise OSError(None, f"is {info.st_size} bytes, more than an experiment file may be ({limit}); "
                          "pass an experiment .toml file")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:  # it grew while being read
            raise OSError(None, f"is more than an experiment file may be ({limit} bytes); pass an experiment "
                          ".toml file")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _toml_loads(text: str) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads(text)
