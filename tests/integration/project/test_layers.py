"""No module of ddpbench uses another module's private names: every module parsed and each name looked
up. The import contracts and the modules' sizes are in tests/unit/project/test_layers.py."""

from __future__ import annotations

import ast

from ddpbench.testing import ROOT

PACKAGE = ROOT / "ddpbench"


def private_reaches(package_root) -> list[str]:
    """Where a module of the package uses another module's private name (``_name``): imported
    (``from m import _name``) or read through the module (``m._name``)."""
    modules = {".".join(path.relative_to(package_root.parent).with_suffix("").parts).removesuffix(".__init__"): path
               for path in package_root.rglob("*.py")}
    found = set()
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ddpbench"):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.add(f"{name}: from {node.module} import {alias.name}")
                    if f"{node.module}.{alias.name}" in modules:
                        aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Import):
                aliases.update({alias.asname or alias.name: alias.name for alias in node.names
                                if alias.name.startswith("ddpbench")})
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                found.add(f"{name}: {aliases[node.value.id]}.{node.attr}")
    return sorted(found)


def test_no_module_uses_another_modules_private_names(tmp_path):
    assert private_reaches(PACKAGE) == []
    planted = tmp_path / "ddpbench"
    (planted / "a").mkdir(parents=True)
    (planted / "a" / "b.py").write_text("_hidden = 1\n")
    (planted / "a" / "c.py").write_text("from ddpbench.a.b import _hidden\nfrom ddpbench.a import b\nx = b._hidden\n")
    assert private_reaches(planted) == ["ddpbench.a.c: ddpbench.a.b._hidden",
                                       "ddpbench.a.c: from ddpbench.a.b import _hidden"]
