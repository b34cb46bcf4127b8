"""Experiment files: TOML in, or one line naming the file and what is wrong with it."""

from __future__ import annotations

import re
from pathlib import Path

from ddpbench.errors import InputError

#: an experiment's name: it names the folder its results go to (reports/<name>/)
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def read_toml(path: Path) -> dict:
    """A TOML file as a dict, or :class:`InputError` naming the file and what is wrong."""
    source = str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(source, None, "no such experiment file; pass a path such as experiments/quick.toml") from None
    except IsADirectoryError:
        raise InputError(source, None, "is a folder; pass an experiment .toml file") from None
    except OSError as err:
        raise InputError(source, None, f"cannot read: {err.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(source, None, f"not UTF-8 text (byte {err.start}); save the file as UTF-8") from None
    try:
        data = _toml_loads(text)
    except ValueError as err:  # tomllib.TOMLDecodeError is a ValueError
        raise InputError(source, None, f"invalid TOML: {err}") from None
    return data


def _toml_loads(text: str) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads(text)
