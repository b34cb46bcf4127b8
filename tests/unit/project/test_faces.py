"""Every package's face lists what it holds: the docstring of each ``__init__.py`` under ``ddpbench/``
names each of the package's modules and subpackages, so a reader who opens a folder's face sees every
room in it (docs/development.md, the layout)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ddpbench.testing import ROOT

PACKAGE = ROOT / "ddpbench"


def face(package: Path) -> str:
    """The docstring of ``package``'s ``__init__.py`` ("" without one)."""
    return ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""


def held(package: Path) -> list[str]:
    """The modules (``__init__`` aside) and subpackages of ``package``, by name."""
    return sorted({p.stem for p in package.glob("*.py") if p.name != "__init__.py"}
                  | {p.name for p in package.iterdir() if (p / "__init__.py").is_file()})


def unnamed(package: Path) -> list[str]:
    """What ``package`` holds that its face does not name as a word (``name``, ``.name``, ``pkg.name``)."""
    text = face(package)
    return [name for name in held(package) if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text)]


def packages(root: Path) -> list[Path]:
    return sorted(init.parent for init in root.rglob("__init__.py") if "__pycache__" not in init.parts)


def test_every_face_names_every_module_and_subpackage():
    found = {package.relative_to(ROOT).as_posix(): unnamed(package) for package in packages(PACKAGE)}
    assert {name: missing for name, missing in found.items() if missing} == {}


def test_a_face_that_leaves_a_module_out_is_found(tmp_path):
    room = tmp_path / "room"
    (room / "inner").mkdir(parents=True)
    (room / "inner" / "__init__.py").write_text('"""Inner: nothing in it."""\n')
    for name in ("plan", "run_once", "plan_more"):
        (room / f"{name}.py").write_text('"""A module."""\n')
    (room / "__init__.py").write_text('"""The room.\n\n  plan      what runs\n  run_once  runs it\n'
                                      '  inner     the rest\n  plan_more more of it\n"""\n')
    assert unnamed(room) == []
    (room / "__init__.py").write_text('"""The room.\n\n  plan_more  more of it\n  run_once   runs it\n"""\n')
    assert unnamed(room) == ["inner", "plan"]
