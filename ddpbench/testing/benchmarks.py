"""The scripts of benchmarks/ as modules, for the tests of their pure parts: benchmarks/ is no
package (each file runs as ``python benchmarks/NAME.py``), so a test loads one by its path."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from ddpbench.testing.cli import ROOT


def load_benchmark(name: str) -> ModuleType:
    """benchmarks/NAME.py as a module, loaded once a process (a test's monkeypatch on it is seen by
    every user of it)."""
    key = f"_ddpbench_benchmarks.{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, ROOT / "benchmarks" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]
