"""The repository's scripts as modules, for the tests of their pure parts: benchmarks/ and scripts/
are no packages (each file runs as ``python benchmarks/NAME.py``), so a test loads one by its path,
with nothing put on ``sys.path``."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from ddpbench.testing.cli import ROOT


def load_script(path: str) -> ModuleType:
    """The file at ``path`` (from the repository's root) as a module, loaded once a process: a
    test's monkeypatch on it is seen by every user of it, and its dataclasses find their module."""
    key = "_ddpbench_scripts." + path.removesuffix(".py").replace("/", ".")
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, ROOT / path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


def load_benchmark(name: str) -> ModuleType:
    """benchmarks/NAME.py as a module (:func:`load_script`)."""
    return load_script(f"benchmarks/{name}.py")
