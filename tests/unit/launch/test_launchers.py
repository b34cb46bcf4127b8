"""Adding a launcher is complete (docs/development.md, the recipe): every launcher ``--launcher`` may name
(``launch/options.py``'s ``LAUNCHERS``) is made by ``make_launcher`` under that name and is documented in
docs/multi-node.md; every launcher class is one of them; every launcher flag belongs to one of them."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re

import pytest

from ddpbench.launch.base import Launcher
from ddpbench.launch.options import LAUNCHERS, LauncherOptions
from ddpbench.testing import ROOT


@pytest.mark.parametrize("name", LAUNCHERS)
def test_every_launcher_is_made_under_its_name(name):
    launcher = LauncherOptions(launcher=name).make_launcher()
    try:
        assert isinstance(launcher, Launcher) and launcher.name == name
    finally:
        launcher.close()  # starts nothing: a Ray cluster is started by the first launch


def test_every_launcher_class_is_named_among_the_launchers():
    classes = set()
    for path in (ROOT / "ddpbench" / "launch").glob("*.py"):
        module = importlib.import_module(f"ddpbench.launch.{path.stem}")
        classes |= {cls for _, cls in inspect.getmembers(module, inspect.isclass)
                    if issubclass(cls, Launcher) and not inspect.isabstract(cls)}
    assert {cls.__name__: cls.name for cls in classes if cls.name not in LAUNCHERS} == {}


def test_every_launcher_flag_belongs_to_a_launcher():
    owners = {f.metadata["owner"] for f in dataclasses.fields(LauncherOptions)} - {None}
    assert sorted(owners - set(LAUNCHERS)) == []


def test_every_launcher_is_documented():
    page = (ROOT / "docs" / "multi-node.md").read_text(encoding="utf-8")
    assert [name for name in LAUNCHERS if not re.search(rf"`--launcher {re.escape(name)}[ `]", page)] == []
