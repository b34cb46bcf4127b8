"""A results folder as untrusted ground: reading its JSON side files, writing into it without links.

A results folder may come from someone else. Its side files are read only when they are regular
files inside the folder (a link out of it, a FIFO or a device is refused), of bounded size, and
parse as JSON nested no deeper than :data:`MAX_DEPTH`; then every value a reader uses is checked
for its type. A damaged side file costs its section, with one line naming the file and the field;
never the report. What ddpbench writes into a folder (the page, its figures, compare.csv) goes
through :func:`replace_file`, so a link planted at a file's name is replaced, never followed.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

#: larger side files are refused (a tune's search.json is a few KB)
MAX_BYTES = 16 * 2**20
#: deeper JSON is refused before it reaches the parser (CPython's recursion limit is 1000)
MAX_DEPTH = 64


class SideFileError(ValueError):
    """A side file that cannot be used; the message is one line naming the file and what is wrong."""


def inside(path: Path, root: Path) -> bool:
    """Whether ``path`` resolves (links followed) to somewhere inside ``root``; False for a link loop."""
    try:
        return Path(path).resolve().is_relative_to(Path(root).resolve())
    except (OSError, RuntimeError):
        return False


def read_json(path: Path, root: Path) -> Any:
    """The JSON value of a side file in the results folder ``root``; SideFileError when it is not a
    regular file inside the folder, is too large, too deeply nested, or not JSON."""
    if not inside(path, root):
        raise SideFileError(f"{path}: refused: it is a link out of the results folder")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        raise SideFileError(f"{path}: cannot be read: {err.strerror or err}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SideFileError(f"{path}: refused: not a regular file")
        if info.st_size > MAX_BYTES:
            raise SideFileError(f"{path}: refused: {info.st_size} bytes, more than {MAX_BYTES}")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read(MAX_BYTES + 1)
    finally:
        os.close(fd)
    return loads(raw, str(path))


def loads(raw: bytes | str, where: str) -> Any:
    """``json.loads`` that refuses JSON nested deeper than :data:`MAX_DEPTH` (SideFileError)."""
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    if json_depth(text) > MAX_DEPTH:
        raise SideFileError(f"{where}: refused: JSON nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as err:
        raise SideFileError(f"{where}: not JSON ({str(err).splitlines()[0][:120]})") from None


def json_depth(text: str) -> int:
    """How deeply the arrays and objects of a JSON text nest (brackets inside strings not counted)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def field(obj: Any, name: str, kind, where: str, *, optional: bool = False, default: Any = None) -> Any:
    """``obj[name]`` checked to be of ``kind`` (a type or tuple; bool never counts as a number;
    numbers must be finite); SideFileError naming ``where`` and the field otherwise."""
    if not isinstance(obj, dict):
        raise SideFileError(f"{where}: is not a JSON object")
    if name not in obj or obj[name] is None:
        if optional:
            return default
        raise SideFileError(f"{where}: lacks {name!r}")
    value = obj[name]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    numeric = any(k in (int, float) for k in kinds)
    if isinstance(value, bool) and bool not in kinds:
        raise SideFileError(f"{where}: {name!r} is not a {_names(kinds)}: {_short(value)}")
    if not isinstance(value, kinds) or (numeric and isinstance(value, float) and not math.isfinite(value)):
        raise SideFileError(f"{where}: {name!r} is not a {_names(kinds)}: {_short(value)}")
    return value


def _names(kinds) -> str:
    words = {int: "whole number", float: "number", str: "string", list: "list", dict: "JSON object", bool: "boolean"}
    return " or ".join(words.get(k, k.__name__) for k in kinds)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


#: what a new file and a new folder may be before the umask takes its bits off (as ``open`` and ``mkdir``
#: make them): a store a group shares, under umask 002, stays readable and writable by the group
FILE_MODE = 0o666
FOLDER_MODE = 0o777


def replace_file(path: str | Path, data: bytes | str, mode: int = FILE_MODE, *, replace: bool = True) -> Path:
    """Write ``data`` to ``path`` as a new regular file, never through a link: into a fresh temporary
    file in the same folder (created exclusively, so no link can be planted at its name), then
    ``os.replace``, which replaces a link at ``path`` rather than writing where it points. Its mode is
    ``mode`` less the umask, as for any file the user makes.

    With ``replace=False`` nothing at ``path`` is replaced: the whole file is linked into place
    (``os.link`` fails where the name is taken, a link's included: :class:`FileExistsError`), so of two
    writers of one new file exactly one wins, and a reader sees the whole file or none."""
    path = Path(path)
    data = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            view = memoryview(data)
            while view:
                view = view[fh.write(view):]
            os.fchmod(fh.fileno(), mode & ~umask())
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
            os.unlink(tmp)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def umask() -> int:
    """The process's umask, read without changing it: Linux's ``/proc/self/status`` says it. Elsewhere
    it is set and set back, a file another thread makes meanwhile being private (077), never open."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask
