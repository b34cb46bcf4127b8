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


def module_file(module: str) -> Path:
    path = ROOT.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def origin(module: str, name: str) -> str:
    """The module that assigns ``name``, following ``from M import name`` from ``module`` (``module`` itself
    where it assigns it or where the name's source is not found)."""
    for node in ast.parse(module_file(module).read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module and any(a.name == name and a.asname in (None, name)
                                                                   for a in node.names):
            return origin(node.module, name) if module_file(node.module).is_file() else module
    return module


def exported_constants(package: Path) -> dict[str, str]:
    """Each UPPER_CASE name in ``package``'s ``__all__``, and the module that assigns it."""
    tree = ast.parse((package / "__init__.py").read_text())
    names = [elt.value for node in tree.body if isinstance(node, ast.Assign)
             and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
             for elt in node.value.elts if isinstance(elt, ast.Constant)]
    dotted = package.relative_to(ROOT).as_posix().replace("/", ".")
    return {name: origin(dotted, name) for name in names if name.isupper()}


def test_a_constant_two_faces_export_is_one_thing():
    """Two packages may not offer one name for two things (the workloads' ``PRESETS`` and the large models'
    were two; the held-out tables' ``EFFICIENCY`` was a label, the summary's a column)."""
    where: dict[str, set[str]] = {}
    for package in packages(PACKAGE):
        for name, module in exported_constants(package).items():
            where.setdefault(name, set()).add(module)
    assert {name: sorted(modules) for name, modules in where.items() if len(modules) > 1} == {}


def test_a_constant_is_traced_to_the_module_that_assigns_it():
    assert origin("ddpbench.analysis.models", "PRESETS") == "ddpbench.analysis.models.presets"
    assert exported_constants(PACKAGE / "analysis" / "core")["EFFICIENCY"] == "ddpbench.analysis.core.columns"
