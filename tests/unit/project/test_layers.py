"""The flow in the folders: import-linter's contracts (pyproject.toml), no import cycle between any two
modules, no module past the smoke alarm's length, and ``ddpbench/cli/`` holding commands only (beside
the program and what the commands share)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import grimp
import pytest

from ddpbench.testing import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

PACKAGE = ROOT / "ddpbench"
#: a smoke alarm, not a shape: a module this long likely holds two concerns, to be split where they part
#: (never cut to fit a number: a module holds one concern, whatever its length)
MAX_MODULE_LINES = 600
#: the command line's room: its modules are commands, but for the program that lists them (``program.py``);
#: what they share is its package ``shared/``
CLI = PACKAGE / "cli"
PROGRAM = "program.py"
#: a folder of the package holds at most this many modules (its __init__ aside)
MAX_FOLDER_MODULES = 24


@pytest.fixture(scope="module")
def graph():
    """Every import of the package, those inside functions too: an import that dodges a cycle at
    import time is a cycle all the same."""
    return grimp.build_graph("ddpbench", include_external_packages=True)


def broken(graph) -> set[tuple[str, str]]:
    """(importer, imported) of every import, direct or through others, that breaks a contract of
    pyproject.toml, as grimp finds them: the layers, and each forbidden pair."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    found = set()
    for contract in config["contracts"]:
        if contract["type"] == "layers":
            layers = [grimp.Layer(*(name.strip() for name in layer.split("|")), independent=True)
                      for layer in contract["layers"]]
            found |= {(d.importer, d.imported) for d in graph.find_illegal_dependencies_for_layers(
                layers=layers, containers=set(contract["containers"]))}
        elif contract["type"] == "forbidden":
            # allow_indirect_imports: only the source's own imports count, not those of what it imports
            reaches = graph.direct_import_exists if contract.get("allow_indirect_imports") else graph.chain_exists
            found |= {(source, target) for source in contract["source_modules"]
                      for target in contract["forbidden_modules"]
                      if target in graph.modules and reaches(importer=source, imported=target, as_packages=True)}
    return found


def test_import_linter_contracts_hold(capsys):
    from importlinter.cli import lint_imports

    code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    assert code == 0, capsys.readouterr().out


def test_the_contracts_find_a_stage_reaching_where_it_must_not(graph):
    """The contracts are not vacuous: the analysis reaching into the sweep, a rank into its launcher
    or into pandas, the report into a rank, and what is shown into a results folder's reader, are each found."""
    assert broken(graph) == set()
    planted = grimp.build_graph("ddpbench", include_external_packages=True)
    planted.add_import(importer="ddpbench.analysis.summary.table", imported="ddpbench.sweep.runner")
    planted.add_import(importer="ddpbench.rank.train", imported="ddpbench.launch.spawn")
    planted.add_import(importer="ddpbench.rank.devices", imported="pandas")
    planted.add_import(importer="ddpbench.report.build", imported="ddpbench.rank.train")
    planted.add_import(importer="ddpbench.show.projected", imported="ddpbench.analysis.folder")  # show reading
    assert {("ddpbench.analysis", "ddpbench.sweep"), ("ddpbench.rank", "ddpbench.launch"), ("ddpbench.rank", "pandas"),
            ("ddpbench.report", "ddpbench.rank"), ("ddpbench.show", "ddpbench.analysis.folder")} <= broken(planted)


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


def oversized(package: Path) -> dict[str, int]:
    """The modules under ``package`` longer than :data:`MAX_MODULE_LINES`, with their lengths."""
    sizes = {path.relative_to(package).as_posix(): len(path.read_text().splitlines())
             for path in package.rglob("*.py")}
    return {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES}


def test_no_module_runs_past_the_smoke_alarm(tmp_path):
    assert oversized(PACKAGE) == {}
    (tmp_path / "long.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    (tmp_path / "whole.py").write_text("x = 1\n" * MAX_MODULE_LINES)
    assert oversized(tmp_path) == {"long.py": MAX_MODULE_LINES + 1}


def command_files(folder: Path) -> list[Path]:
    """The modules of the command line's room that must be commands: every one directly in ``folder`` but its
    ``__init__`` and the program (what the commands share is a package of its own, ``shared/``)."""
    return [path for path in sorted(folder.glob("*.py")) if path.name not in ("__init__.py", PROGRAM)]


def not_commands(folder: Path) -> list[str]:
    """The modules of ``folder`` that are not a command: a command module adds its parser (``add_parser``,
    or ``add_verb``/``add_verbs`` for a subcommand of ``history``) and runs it (a ``command`` function,
    or ``command_<verb>``). What the commands share lives in :mod:`ddpbench.cli.shared`, the program
    in :mod:`ddpbench.cli.program`."""
    found = []
    for path in command_files(folder):
        defined = {node.name for node in ast.parse(path.read_text()).body if isinstance(node, ast.FunctionDef)}
        adds = {"add_parser", "add_verb", "add_verbs"} & defined
        runs = {name for name in defined if name == "command" or name.startswith("command_")}
        if not (adds and runs):
            found.append(path.name)
    return found


def test_the_cli_folder_holds_commands_only(tmp_path):
    from ddpbench.cli import program

    assert not_commands(CLI) == []
    assert (CLI / PROGRAM).is_file() and (CLI / "shared" / "__init__.py").is_file()
    # every module that adds a parser of its own is a command the program lists
    listed = {command.__name__.rsplit(".", 1)[1] for command in program.COMMANDS}
    own = {path.stem for path in command_files(CLI) if "def add_parser(" in path.read_text()}
    assert own == listed
    (tmp_path / "helper.py").write_text("def shared_flag(parser):\n    pass\n")
    (tmp_path / "verb.py").write_text("def add_verb(verbs):\n    pass\n\n\ndef command(args):\n    return 0\n")
    (tmp_path / PROGRAM).write_text("def main(argv=None):\n    return 0\n")  # the program: no command
    assert not_commands(tmp_path) == ["helper.py"]


def reaching_up(graph) -> list[tuple[str, str]]:
    """(importer, imported) where what the commands share (``ddpbench.cli.shared``) imports, directly or through
    others, a command or the program: the room's own floor reaching into the floors above it."""
    shared = "ddpbench.cli.shared"
    above = sorted(m for m in graph.modules if m.startswith("ddpbench.cli.") and m.count(".") == 2 and m != shared)
    return [(shared, module) for module in above
            if graph.chain_exists(importer=shared, imported=module, as_packages=True)]


def test_what_the_commands_share_imports_no_command(graph):
    assert reaching_up(graph) == []
    planted = grimp.build_graph("ddpbench")
    planted.add_import(importer="ddpbench.cli.shared.running", imported="ddpbench.cli.report")
    assert reaching_up(planted) == [("ddpbench.cli.shared", "ddpbench.cli.report")]


def reached_inside(graph) -> list[tuple[str, str]]:
    """(importer, imported) where code outside the analysis imports a module inside one of its rooms."""
    return [(importer, imported) for imported in sorted(graph.modules)
            if imported.startswith("ddpbench.analysis.") and imported.count(".") >= 3
            for importer in sorted(graph.find_modules_that_directly_import(imported))
            if importer.startswith("ddpbench.") and not importer.startswith("ddpbench.analysis.")]


def test_outside_code_reaches_the_analysis_through_its_faces(graph):
    """The report, the command line and the rest import a room of the analysis by its face
    (``ddpbench.analysis.summary``) or the folder facade, never a module inside a room."""
    assert reached_inside(graph) == []
    planted = grimp.build_graph("ddpbench")
    planted.add_import(importer="ddpbench.report.build", imported="ddpbench.analysis.summary.table")
    assert reached_inside(planted) == [("ddpbench.report.build", "ddpbench.analysis.summary.table")]


def test_no_folder_holds_more_modules_than_a_reader_can_hold():
    counts = {path.relative_to(ROOT).as_posix(): len([p for p in path.glob("*.py") if p.name != "__init__.py"])
              for path in [PACKAGE, *PACKAGE.rglob("*")] if path.is_dir() and path.name != "__pycache__"}
    assert {name: n for name, n in counts.items() if n > MAX_FOLDER_MODULES} == {}


def test_what_outside_code_names_still_resolves():
    """Entry points other processes start, and the paths users' files name, survive the layout."""
    from importlib import import_module
    from importlib.metadata import entry_points

    import ddpbench
    import ddpbench.benchplugin
    import ddpbench.tasks

    scripts = {ep.name: ep for ep in entry_points(group="console_scripts") if ep.value.startswith("ddpbench")}
    plugins = {ep.name: ep for ep in entry_points(group="pytest11") if ep.value.startswith("ddpbench")}
    assert scripts["ddpbench"].load() is import_module("ddpbench.cli.program").main
    # an environment installed before the command line was one room names the program's earlier path
    assert import_module("ddpbench.program").main is import_module("ddpbench.cli.program").main
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert config["entry-points"]["pytest11"]["ddpbench"] == "ddpbench.benchplugin.plugin"
    # an environment installed before the plugin moved names its earlier path: the same fixture either way
    assert plugins["ddpbench"].load().ddp_group is import_module("ddpbench.benchplugin.plugin").ddp_group
    assert import_module("ddpbench.rank.protocol").RANK_MODULE == "ddpbench.rank"  # what every launcher starts
    assert (ROOT / "ddpbench" / "rank" / "__main__.py").is_file()
    for name in ("AllReduce", "ModelStep", "Task", "TrainStep"):  # users' benchmark files import these
        assert getattr(ddpbench.tasks, name) is getattr(ddpbench.benchplugin, name)
        assert getattr(import_module("ddpbench.regression"), name) is getattr(ddpbench.benchplugin, name)
    # a user's conftest may name the plugin's earlier path
    assert import_module("ddpbench.pytest_plugin").ddp_group is import_module("ddpbench.benchplugin.plugin").ddp_group
    from ddpbench.results import load_collectives, load_tables  # noqa: F401 - the README names them
    from ddpbench.strategies.base import RankContext, Strategy  # noqa: F401 - plug-ins subclass these
    assert callable(ddpbench.load) and callable(ddpbench.load_collectives) and callable(ddpbench.summarize)


def test_each_room_of_the_analysis_names_its_modules_in_its_face():
    """A room's face (its __init__'s docstring) lists every module in it, a line each, as a reader
    opening the room sees it first."""
    from importlib import import_module

    rooms = [path for path in (PACKAGE / "analysis").iterdir() if (path / "__init__.py").is_file()]
    assert len(rooms) >= 5
    for room in rooms:
        doc = import_module(f"ddpbench.analysis.{room.name}").__doc__ or ""
        listed = {line.split()[0] for line in doc.splitlines() if line.startswith("  ") and not line.startswith("    ")}
        assert listed == {path.stem for path in room.glob("*.py") if path.stem != "__init__"}, room.name
