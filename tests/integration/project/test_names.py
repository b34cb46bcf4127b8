"""Each line of the loss budget is named once: its short name ("sync_compute") is written, as a quoted
string or as an identifier, in at most two files of the package outside the independent checker (its
declaration, ddpbench/analysis/core/budget_lines.py, and at most one more), and in at most one file of
the checker (ddpbench/audit/budget.py, its own list). Every other reader takes the lines from there.

Every module of the checker is counted whole. Outside it, a name the package also gives to other
things ("data" is a step phase and a setting too, "straggler" a cause, ``comm`` a variable's name for
communication time) is counted only in the budget's own modules and their readers, and only as a string
constant (a line is looked up by its name); the other names are counted in every module, as strings and
as identifiers. Prose (docstrings, comments) is never counted."""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize

from ddpbench.analysis.core import LOSS_LINES
from ddpbench.testing import ROOT

PACKAGE = ROOT / "ddpbench"
#: the independent checker: it imports nothing of the analysis and keeps its own list of the names
AUDIT = "ddpbench/audit/"
#: the most files that may write a line's name outside the checker, and inside it
MOST_OUTSIDE, MOST_IN_AUDIT = 2, 1
#: line names the package also gives to other things, with what: counted only in the budget's readers
OTHER_MEANINGS = {
    "contention": "a cause of the diagnosis and its finding",
    "comm": "a step phase, a trace event's kind, a rank record's field",
    "data": "a step phase, the data setting, a cause and its finding",
    "straggler": "a cause and its finding",
    "overhead": "a framework's overhead against raw DDP, a launch's time before its steps",
}
#: what marks a module as one of the budget's (beside "budget" in its file name): its source names the
#: declaration, the budget's lines or the loss budget in words
READS_BUDGET = re.compile(r"\b(?:budget_lines|lossbudget|LOSS_LINES|BUDGET_LINES)\b")


def sources() -> dict[str, str]:
    """Every module of the package, by its path from the checkout's root."""
    return {path.relative_to(ROOT).as_posix(): path.read_text() for path in sorted(PACKAGE.rglob("*.py"))}


def written(source: str, name: str, identifiers: bool = True) -> bool:
    """Whether ``source`` writes ``name`` as a whole string constant or (``identifiers``) as an identifier."""
    if name not in source:
        return False
    names, constants = _identifiers_and_strings(source)
    return (identifiers and name in names) or name in constants


@functools.cache  # each source is tokenized and parsed once, not once a line's name and a count
def _identifiers_and_strings(source: str) -> tuple[frozenset[str], frozenset[str]]:
    """The identifiers ``source`` writes (its NAME tokens) and its string constants."""
    names = frozenset(token.string for token in tokenize.generate_tokens(io.StringIO(source).readline)
                      if token.type == tokenize.NAME)
    return names, frozenset(node.value for node in ast.walk(ast.parse(source))
                            if isinstance(node, ast.Constant) and isinstance(node.value, str))


def is_budget_module(path: str, source: str) -> bool:
    return "budget" in path.rsplit("/", 1)[-1] or bool(READS_BUDGET.search(source))


def writers(found: dict[str, str]) -> dict[str, tuple[list[str], list[str]]]:
    """Each line's name -> (the files outside ddpbench/audit/ that write it, the files inside it)."""
    out = {}
    for line in LOSS_LINES:
        files = []
        for path, source in found.items():
            if path.startswith(AUDIT) or line.name not in OTHER_MEANINGS:  # every module, strings and identifiers
                files += [path] if written(source, line.name) else []
            elif is_budget_module(path, source):
                files += [path] if written(source, line.name, identifiers=False) else []
        out[line.name] = ([p for p in files if not p.startswith(AUDIT)], [p for p in files if p.startswith(AUDIT)])
    return out


def too_many(found: dict[str, str]) -> dict[str, list[str]]:
    """Each name written in more files than allowed, with those files."""
    return {name: outside + audit for name, (outside, audit) in writers(found).items()
            if len(outside) > MOST_OUTSIDE or len(audit) > MOST_IN_AUDIT}


def test_each_budget_line_is_named_in_its_declaration_and_the_checkers_list():
    assert set(OTHER_MEANINGS) <= {line.name for line in LOSS_LINES}
    found = sources()
    assert too_many(found) == {}
    for name, (outside, audit) in writers(found).items():
        assert "ddpbench/analysis/core/budget_lines.py" in outside, name
        assert audit == ["ddpbench/audit/budget.py"], name


def test_the_count_finds_a_name_written_out_again():
    """The count is not vacuous: a reader that writes a name out again, in the package or in the
    checker, is found (each planted twice: past the limit whatever else writes it); prose that mentions
    a name is not counted."""
    found = sources()
    assert too_many(found) == {}
    planted = {**found,
               "ddpbench/report/plots/again.py": 'COLOURS = {"sync_compute": "#937860"}\n',
               "ddpbench/cli/again.py": "def f(sync_compute):\n    return sync_compute\n",
               **{f"ddpbench/report/sections/again{i}.py": "from ddpbench.analysis.core import LOSS_LINES\n\n"
                                                          "def reading(row):\n    return row['data']\n"
                  for i in (1, 2)},
               "ddpbench/audit/again.py": "def lines(residual):\n    return residual\n",
               "ddpbench/analysis/summary/prose.py": '"""sync_compute, data and comm, in words."""\n# sync_compute\n'}
    assert set(too_many(planted)) == {"sync_compute", "data", "residual"}
    assert "ddpbench/analysis/summary/prose.py" not in str(too_many(planted))
    # a name the package also gives to other things is not counted outside the budget's modules, nor as
    # an identifier in them
    elsewhere = {**found, "ddpbench/rank/again.py": 'PHASES = ("data", "forward")\n',
                 "ddpbench/report/budget_again.py": "def f(comm):\n    return comm\n"}
    assert too_many(elsewhere) == {}
