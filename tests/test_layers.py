"""The flow in the folders: import-linter's contracts (pyproject.toml), no import cycle between any two
modules, and modules small enough to read in one sitting."""

from __future__ import annotations

import sys

import grimp
import pytest

from conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

PACKAGE = ROOT / "ddpbench"
MAX_MODULE_LINES = 500
MAX_COMMAND_LINES = 150


@pytest.fixture(scope="module")
def graph():
    """Every import of the package, those inside functions too: an import that dodges a cycle at
    import time is a cycle all the same."""
    return grimp.build_graph("ddpbench")


def layers_contract() -> dict:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return contract


def illegal(graph) -> list:
    """The imports that break the layers contract, as grimp finds them for its layers."""
    contract = layers_contract()
    layers = [grimp.Layer(*(name.strip() for name in layer.split("|")), independent=True)
              for layer in contract["layers"]]
    return sorted(graph.find_illegal_dependencies_for_layers(layers=layers, containers=set(contract["containers"])),
                  key=str)


def test_import_linter_contracts_hold(capsys):
    from importlinter.cli import lint_imports

    code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    assert code == 0, capsys.readouterr().out


def test_the_layers_forbid_a_stage_importing_one_above_it(graph):
    """The contract is not vacuous: the analysis reaching into the sweep, or a rank into its
    launcher, is found."""
    assert illegal(graph) == []
    graph = grimp.build_graph("ddpbench")  # a graph of its own to plant imports in
    graph.add_import(importer="ddpbench.analysis.summary", imported="ddpbench.sweep.runner")
    graph.add_import(importer="ddpbench.rank.train", imported="ddpbench.launch.spawn")
    graph.add_import(importer="ddpbench.report.build", imported="ddpbench.rank.train")
    found = {(d.importer, d.imported) for d in illegal(graph)}
    assert found == {("ddpbench.analysis", "ddpbench.sweep"), ("ddpbench.rank", "ddpbench.launch"),
                     ("ddpbench.report", "ddpbench.rank")}


def cycles(graph) -> list[str]:
    """Every import that comes back to its importer through others: "a -> b -> ... -> a"."""
    found = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            if graph.chain_exists(importer=imported, imported=importer):
                found.append(" -> ".join([importer, *graph.find_shortest_chain(importer=imported, imported=importer)]))
    return found


def test_no_module_imports_itself_back(graph):
    assert cycles(graph) == []
    planted = grimp.build_graph("ddpbench")
    planted.add_import(importer="ddpbench.results.schema", imported="ddpbench.results.tables")
    assert "ddpbench.results.schema -> ddpbench.results.tables -> ddpbench.results.schema" in cycles(planted)


def test_modules_are_small_enough_to_read_in_one_sitting():
    sizes = {path.relative_to(ROOT).as_posix(): len(path.read_text().splitlines()) for path in PACKAGE.rglob("*.py")}
    assert {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES} == {}
    commands = {name: n for name, n in sizes.items()
                if name.startswith("ddpbench/cli/") and name.rsplit("/", 1)[1] not in
                ("main.py", "common.py", "sweeping.py", "tables.py", "__init__.py")}
    assert commands and {name: n for name, n in commands.items() if n > MAX_COMMAND_LINES} == {}


def test_what_outside_code_names_still_resolves():
    """Entry points other processes start, and the paths users' files name, survive the layout."""
    from importlib import import_module
    from importlib.metadata import entry_points

    import ddpbench
    import ddpbench.regression
    import ddpbench.tasks

    scripts = {ep.name: ep for ep in entry_points(group="console_scripts") if ep.value.startswith("ddpbench")}
    plugins = {ep.name: ep for ep in entry_points(group="pytest11") if ep.value.startswith("ddpbench")}
    assert scripts["ddpbench"].load() is import_module("ddpbench.cli.main").main
    assert plugins["ddpbench"].load() is import_module("ddpbench.regression.plugin")
    assert import_module("ddpbench.rank.protocol").RANK_MODULE == "ddpbench.rank"  # what every launcher starts
    assert (ROOT / "ddpbench" / "rank" / "__main__.py").is_file()
    for name in ("AllReduce", "ModelStep", "Task", "TrainStep"):  # users' benchmark files import these
        assert getattr(ddpbench.tasks, name) is getattr(ddpbench.regression, name)
    from ddpbench.results import load_collectives, load_tables  # noqa: F401 - the README names them
    from ddpbench.strategies.base import RankContext, Strategy  # noqa: F401 - plug-ins subclass these
    assert callable(ddpbench.load) and callable(ddpbench.load_collectives) and callable(ddpbench.summarize)
