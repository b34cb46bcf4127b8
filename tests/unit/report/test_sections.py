"""Adding a report section is complete (docs/development.md, the recipe): every ``*_section`` function of
``ddpbench/report/sections/`` is on the page (``report/build.py``'s ``SECTIONS``) once, every module there
gives the page a section, and every section's heading is looked for by a test."""

from __future__ import annotations

import ast
import inspect
import re
import sys
from collections import Counter

from ddpbench.report import build
from ddpbench.testing import ROOT

FOLDER = ROOT / "ddpbench" / "report" / "sections"
#: where a test may look for a heading: the tests, and the page readers they share
TESTS = [*sorted((ROOT / "tests").rglob("*.py")), *sorted((ROOT / "ddpbench" / "testing").rglob("*.py"))]


def section_functions() -> dict[str, object]:
    """Every public ``*_section`` function defined in a module of the sections' folder, by dotted name."""
    found = {}
    for path in sorted(FOLDER.glob("*.py")):
        module = sys.modules.get(f"ddpbench.report.sections.{path.stem}")
        if module is None:
            continue  # not imported by the page at all: test_every_module_gives_the_page_a_section says so
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if name.endswith("_section") and not name.startswith("_") and fn.__module__ == module.__name__:
                found[f"{path.stem}.{name}"] = fn
    return found


def titles(fn) -> set[str]:
    """The headings a section function writes: the first text argument of each call that makes a section
    (``Section``, ``figure_section``, a module's own ``_..._section``), a literal or a module constant."""
    module = sys.modules[fn.__module__]
    tree = ast.parse(inspect.getsource(module))
    constants = {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                 for target in node.targets if isinstance(target, ast.Name)}
    body = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == fn.__name__)
    found = set()
    for call in ast.walk(body):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and (
                call.func.id == "Section" or call.func.id.endswith("_section")):
            for arg in call.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.add(arg.value)
                    break
                if isinstance(arg, ast.Name) and arg.id in constants:
                    found.add(constants[arg.id])
                    break
    return found


def test_every_section_function_is_on_the_page_once():
    on_page = Counter(f"{fn.__module__.rsplit('.', 1)[1]}.{fn.__name__}" for fn in build.SECTIONS)
    assert sorted(name for name in section_functions() if on_page[name] != 1) == []
    assert [name for name, count in on_page.items() if count > 1] == []


def test_every_module_gives_the_page_a_section():
    modules = {p.stem for p in FOLDER.glob("*.py") if p.name != "__init__.py"}
    assert sorted(modules - {fn.__module__.rsplit(".", 1)[1] for fn in build.SECTIONS}) == []


def test_every_heading_is_looked_for_by_a_test():
    texts = [path.read_text(encoding="utf-8") for path in TESTS]

    def looked_for(title: str) -> bool:
        spelled = {title, title.encode("ascii", "backslashreplace").decode()}
        return any(re.search(rf"""["'>]{re.escape(s)}["'<]""", text) for s in spelled for text in texts)

    headings = {fn.__name__: titles(fn) for fn in build.SECTIONS}
    assert {name: found for name, found in headings.items() if not found} == {}  # each heading is found here
    assert {name: sorted(t for t in found if not looked_for(t)) for name, found in headings.items()
            if not all(map(looked_for, found))} == {}
