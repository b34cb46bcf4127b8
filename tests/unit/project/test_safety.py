"""Safety: nothing ddpbench reads from a file can run code, and a one-machine run listens on
loopback only. (HTML escaping of experiment and results text: tests/integration/report/test_report.py.)"""

import ast
from pathlib import Path

from ddpbench.testing import ROOT

PACKAGE = ROOT / "ddpbench"


def calls(tree):
    """(dotted name, call node) for every call in a module: ``torch.load(...)`` -> "torch.load"."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            parts, func = [], node.func
            while isinstance(func, ast.Attribute):
                parts.append(func.attr)
                func = func.value
            if isinstance(func, ast.Name):
                parts.append(func.id)
            yield ".".join(reversed(parts)), node


def keyword(node, name):
    for kw in node.keywords:
        if kw.arg == name:
            return kw.value
    return None


def unsafe_loads(source: str, where: str):
    """Calls in ``source`` that could unpickle: (line, what), and the lines of ``pickle.loads``."""
    unsafe, pipe_loads = [], []
    for name, node in calls(ast.parse(source, where)):
        last = name.rsplit(".", 1)[-1]
        if name.endswith("pickle.loads"):
            pipe_loads.append(node.lineno)
        elif last in ("read_pickle", "Unpickler") or name.endswith(("pickle.load", "shelve.open", "dill.load",
                                                                     "joblib.load")):
            unsafe.append((node.lineno, name))
        elif name.endswith("torch.load"):
            weights_only = keyword(node, "weights_only")
            if not (isinstance(weights_only, ast.Constant) and weights_only.value is True):
                unsafe.append((node.lineno, "torch.load without weights_only=True"))
        elif last == "load" and name.split(".")[0] in ("np", "numpy"):
            allow = keyword(node, "allow_pickle")
            if allow is not None and not (isinstance(allow, ast.Constant) and allow.value is False):
                unsafe.append((node.lineno, "np.load with allow_pickle"))
    return unsafe, pipe_loads


def test_nothing_is_unpickled_from_a_file():
    """Results are JSON lines; a snapshot is read with torch.load(weights_only=True). pickle.loads
    takes a task from the persistent group's pipe, written by its own rank 0, and the report's
    loaded folder and sections between the report process and the helper it forked, through unnamed
    temporary files only those two hold (ddpbench.report.workers)."""
    unsafe, pipe_loads = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(ROOT))
        bad, loads = unsafe_loads(path.read_text(), where)
        unsafe += [f"{where}:{line} {what}" for line, what in bad]
        pipe_loads += [where for _ in loads]
    assert not unsafe
    workers = str(Path("ddpbench") / "report" / "workers.py")  # the folder in, the sections back
    assert pipe_loads == [str(Path("ddpbench") / "benchplugin" / "group.py"), workers, workers]


def test_the_scan_finds_every_form_it_forbids():
    code = ("import pickle, torch, numpy as np, pandas as pd\n"
            "pickle.load(f)\ntorch.load(p)\ntorch.load(p, weights_only=False)\npd.read_pickle(p)\n"
            "np.load(p, allow_pickle=True)\ntorch.load(p, weights_only=True)\nnp.load(p)\njson.load(f)\n")
    unsafe, _ = unsafe_loads(code, "planted.py")
    assert [line for line, _ in unsafe] == [2, 3, 4, 5, 6]
