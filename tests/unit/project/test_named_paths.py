"""Every path of the repository that a page or the code's own words name exists.

Named in prose, a path outlives the file it names: a module moved to another room, a test moved to
another folder, a doc split in two leave the old name behind. The pages (README.md, docs/,
benchmarks/ and the examples' READMEs) are read whole; the code (ddpbench/, tests/, benchmarks/,
scripts/) by its comments and docstrings only, since a string a test builds may name a file of a
user's project on purpose. A name is:

* a path of a source or doc file under ddpbench/, tests/, docs/, benchmarks/ or scripts/ (``.py``,
  ``.md``, ``.toml``, ``.sh``): the file must exist. A path holding ``NAME``, ``FILE``, ``*`` or
  ``<...>`` is a pattern, not a path, and :data:`USERS` are a user's files a page's example names;
* a dotted name of the package: a module, or a module and a name defined at its top (a function, a
  class, an assignment, an import, a name of its ``__all__``), or an attribute of that
  (``Class.method``).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from functools import cache
from pathlib import Path

from ddpbench.testing import ROOT

#: the pages read whole
PAGES = ("README.md", "docs/*.md", "benchmarks/*.md", "reports/examples/README.md", "reports/examples/*/README.md")
#: the code read by its comments and docstrings
CODE = ("ddpbench", "tests", "benchmarks", "scripts")
FILE_PATH = re.compile(r"(?<![\w./-])((?:ddpbench|tests|docs|benchmarks|scripts)/[\w./-]*\.(?:py|md|toml|sh))(?![\w/])")
DOTTED = re.compile(r"(?<![\w./-])(ddpbench(?:\.[A-Za-z_]\w*)+)")
PATTERN = re.compile(r"NAME|FILE|[*<{]")
#: a user's files that a page's example names (an experiment's ``script``), not this repository's
USERS = frozenset({"scripts/train_cnn.py"})


def prose(path: Path) -> list[tuple[int, str]]:
    """(line, text) of what a file says in words: a page whole, a module's comments and docstrings."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        return list(enumerate(text.splitlines(), 1))
    found = [(token.start[0], token.string) for token in tokenize.generate_tokens(io.StringIO(text).readline)
             if token.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value,
                                                                                                   str):
                found += [(first.lineno + i, line) for i, line in enumerate(first.value.value.splitlines())]
    return found


@cache
def top_names(module: Path) -> frozenset[str]:
    """The names a module defines at its top."""
    names: set[str] = set()
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {t.id for t in ast.walk(target) if isinstance(t, ast.Name)}
                if isinstance(target, ast.Name) and target.id == "__all__" and node.value is not None:
                    # what a module's __getattr__ hands out lazily is listed there
                    names |= {c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.If, ast.Try)):  # a name defined under a version check
            names |= {t.id for t in ast.walk(node) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
            names |= {n.name for n in ast.walk(node) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    return frozenset(names)


def resolves(dotted: str, root: Path) -> bool:
    """Whether the dotted name names a module of ``root``, or a name defined in one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        base = root.joinpath(*parts[:cut])
        module = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if module.is_file():
            rest = ".".join(parts[cut:])
            # a name of a class or object defined there (``Class.method``) counts by its first part
            return not rest or rest.split(".")[0] in top_names(module)
    return False


def missing(files: list[Path], root: Path) -> list[str]:
    """``file:line: name`` of every path or dotted name that ``files`` name and ``root`` does not hold."""
    found = []
    for path in files:
        for line, text in prose(path):
            names = [(m.group(1), (root / m.group(1)).exists()) for m in FILE_PATH.finditer(text)]
            names += [(m.group(1).rstrip("."), resolves(m.group(1).rstrip("."), root)) for m in DOTTED.finditer(text)]
            found += [f"{path.relative_to(root)}:{line}: {name}" for name, there in names
                      if not there and not PATTERN.search(name) and name not in USERS]
    return found


def named_files(root: Path) -> list[Path]:
    pages = [path for pattern in PAGES for path in sorted(root.glob(pattern))]
    code = [path for folder in CODE for path in sorted((root / folder).rglob("*.py"))
            if "__pycache__" not in path.parts]
    return pages + code


def test_every_path_a_page_or_docstring_names_exists():
    assert missing(named_files(ROOT), ROOT) == []


def test_a_stale_path_or_name_is_found(tmp_path):
    (tmp_path / "ddpbench" / "room").mkdir(parents=True)
    (tmp_path / "ddpbench" / "__init__.py").write_text("")
    (tmp_path / "ddpbench" / "room" / "__init__.py").write_text("")
    (tmp_path / "ddpbench" / "room" / "kept.py").write_text(
        '"""Kept: see ddpbench.room.kept.Kept.run and ddpbench.room.moved."""\n\n\nclass Kept:\n'
        "    def run(self):\n        return 'tests/unit/test_gone.py is a string, not prose'\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text(
        "Read `ddpbench/room/kept.py`, `ddpbench/room/gone.py` and ddpbench.room.kept.nothing;\n"
        "a user's `tests/NAME.py` is a pattern.\n")
    found = missing([tmp_path / "docs" / "guide.md", tmp_path / "ddpbench" / "room" / "kept.py"], tmp_path)
    assert found == ["docs/guide.md:1: ddpbench/room/gone.py", "docs/guide.md:1: ddpbench.room.kept.nothing",
                     "ddpbench/room/kept.py:1: ddpbench.room.moved"]
