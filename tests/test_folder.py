"""A results folder is loaded and summarised once, by one object (ddpbench.analysis.folder), for
every reader: the report, the sweep's end, export-benchmark, compare and whatif --from."""

from __future__ import annotations

import ast
import shutil
import sys
from pathlib import Path

import pytest

import ddpbench
from ddpbench.analysis import folder as folder_module
from ddpbench.analysis import summary as summary_module
from ddpbench.results import tables as tables_module

ROOT = Path(__file__).parent.parent
QUICK = ROOT / "reports" / "examples" / "quick-cpu"  # training jobs, world size 1 and 2, and collectives


@pytest.fixture
def calls(monkeypatch):
    """How often summarize and load_tables ran: each wrapped wherever a ddpbench module holds it."""
    counts = {"summarize": 0, "load_tables": 0}
    originals = {"summarize": summary_module.summarize, "load_tables": tables_module.load_tables}

    def counting(name):
        def wrapper(*args, **kwargs):
            counts[name] += 1
            return originals[name](*args, **kwargs)
        return wrapper

    wrappers = {name: counting(name) for name in originals}
    for module in list(sys.modules.values()):
        if not getattr(module, "__name__", "").startswith("ddpbench"):
            continue
        for name, original in originals.items():
            if getattr(module, name, None) is original:
                monkeypatch.setattr(module, name, wrappers[name])
    return counts


def damaged_copy(tmp_path: Path) -> Path:
    """quick-cpu with a line cut mid-write at its end: one damaged record, named by this test's path."""
    folder = tmp_path / "damaged"
    folder.mkdir()
    shutil.copy(QUICK / "results.jsonl", folder / "results.jsonl")
    with open(folder / "results.jsonl", "a") as f:
        f.write('{"kind": "run", "key": "cut"\n')
    return folder


def test_the_report_loads_and_summarises_once(calls):
    from ddpbench.report.build import load_context

    ctx = load_context(QUICK)
    assert calls == {"summarize": 1, "load_tables": 1}
    assert len(ctx.summary) == 4 and len(ctx.collectives) > 0 and ctx.damaged == []


def test_the_report_check_and_the_sweep_end_load_and_summarise_once(calls, capsys):
    from rich.console import Console

    from ddpbench.cli import main
    from ddpbench.cli.sweeping import finish_report

    assert main(["report", str(QUICK), "--check"]) == 0
    assert calls == {"summarize": 1, "load_tables": 1}
    assert finish_report(QUICK, Console(quiet=True), write=False) == 0  # the table and the verdict
    assert calls == {"summarize": 2, "load_tables": 2}
    out = capsys.readouterr().out
    assert "over 4 job(s)" in out and "verdict:" in out


def test_export_benchmark_loads_and_summarises_once(calls, tmp_path, capsys):
    from ddpbench.cli import main

    assert main(["export-benchmark", str(QUICK), "--out", str(tmp_path / "b.json")]) == 0
    assert calls == {"summarize": 1, "load_tables": 1}
    assert "wrote 4 benchmarks" in capsys.readouterr().out


def test_compare_loads_and_summarises_each_folder_once(calls, tmp_path, capsys):
    from ddpbench.cli import main

    assert main(["compare", str(QUICK), str(QUICK), "--out", str(tmp_path / "cmp")]) == 0
    assert calls == {"summarize": 2, "load_tables": 2}  # A and B
    assert (tmp_path / "cmp" / "index.html").is_file()


def test_whatif_from_a_folder_loads_and_summarises_once(calls, capsys):
    from ddpbench.cli import main

    assert main(["whatif", "--from", str(QUICK)]) == 0
    assert calls == {"summarize": 1, "load_tables": 1}
    assert capsys.readouterr().out.startswith("model output for transformer-s")


def test_the_object_holds_the_summary_with_the_datasheet_peak(tmp_path):
    measured = folder_module.load(QUICK)
    again = summary_module.summarize(measured.steps, measured.runs, measured.ranks,
                                     datasheet_tflops=summary_module.datasheet_peak(measured.sweeps))
    assert measured.results_dir == QUICK and measured.damaged == ()
    assert measured.summary.equals(again)
    assert folder_module.load(QUICK, collectives=False).collectives.empty


@pytest.mark.parametrize("argv", [["export-benchmark", "{f}", "--out", "{t}/b.json"], ["whatif", "--from", "{f}"],
                                  ["compare", "{f}", "{f}", "--out", "{t}/cmp"], ["report", "{f}", "--check"]])
def test_a_damaged_record_is_said_once_per_command(argv, tmp_path, capsys):
    from ddpbench.cli import main

    folder = damaged_copy(tmp_path)
    assert main([a.format(f=folder, t=tmp_path) for a in argv]) == 0
    err = capsys.readouterr().err
    assert err.count(f"warning: {folder / 'results.jsonl'}:") == 1, err


def test_the_object_lists_each_damaged_record_once_and_warns_once(tmp_path):
    from ddpbench.results.store import DamagedRecord

    folder = damaged_copy(tmp_path)
    with pytest.warns(DamagedRecord) as said:
        measured = folder_module.load(folder)
    assert len(measured.damaged) == 1 and measured.damaged[0].startswith(f"{folder / 'results.jsonl'}:")
    assert [str(w.message) for w in said if w.category is DamagedRecord] == list(measured.damaged)
    assert len(measured.summary) == 4


def test_a_refused_folder_still_says_what_was_damaged(tmp_path, capsys):
    from ddpbench.cli import main

    folder = tmp_path / "all-damaged"
    folder.mkdir()
    (folder / "results.jsonl").write_text('{"kind": "run", "key": "cut"\n')
    assert main(["compare", str(folder), str(QUICK)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith(f"warning: {folder / 'results.jsonl'}:1: damaged record skipped")
    assert err[1] == f"error: A ({folder}): results.jsonl: holds no training jobs (empty, damaged, or collectives only)"
    assert len(err) == 2


def _calls(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.id if isinstance(func, ast.Name) else getattr(func, "attr", ""))
    return names


def test_only_the_folder_object_loads_the_tables_and_summarises():
    """No module but analysis/folder.py calls a table loader and summarize: a new reader of a folder
    goes through the object, not through its own copy of the recipe."""
    package = Path(ddpbench.__file__).parent
    both = []
    for path in sorted(package.rglob("*.py")):
        called = _calls(ast.parse(path.read_text(), str(path)))
        if "summarize" in called and called & {"load_tables", "load_folder", "load"}:
            both.append(str(path.relative_to(package)))
    assert both == [str(Path("analysis") / "folder.py")]
