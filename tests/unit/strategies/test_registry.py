"""Adding a strategy is complete (docs/development.md, the recipe): every module of
``ddpbench/strategies/`` but the interface gives the registry a strategy, each registered under the name
its class answers to, and each documented in docs/strategies.md."""

from __future__ import annotations

import re

from ddpbench.strategies import BUILTIN, strategy_class
from ddpbench.testing import ROOT

FOLDER = ROOT / "ddpbench" / "strategies"
#: the interface every strategy implements (and its helpers), no strategy of its own
NOT_A_STRATEGY = {"base"}


def test_every_strategy_module_is_registered():
    modules = {p.stem for p in FOLDER.glob("*.py") if p.name != "__init__.py"} - NOT_A_STRATEGY
    registered = {strategy_class(name).__module__.rsplit(".", 1)[1] for name in BUILTIN}
    assert sorted(modules - registered) == []


def test_every_strategy_answers_to_its_registered_name():
    assert {name: strategy_class(name).name for name in BUILTIN if strategy_class(name).name != name} == {}


def test_every_strategy_is_documented():
    page = (ROOT / "docs" / "strategies.md").read_text(encoding="utf-8")
    assert [name for name in BUILTIN if not re.search(rf"`{re.escape(name)}`", page)] == []
