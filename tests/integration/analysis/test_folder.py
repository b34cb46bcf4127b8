"""A results folder is loaded and summarised once, by one object (ddpbench.analysis.folder), for
every reader: the report, the sweep's end, export-benchmark, compare and whatif --from. The same
object diagnoses it, states the verdict, fits the cost model and checks the findings, each at most
once per reader, and only where the reader shows them."""

from __future__ import annotations

import ast
import html
import shutil
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

import ddpbench
from ddpbench.analysis import folder as folder_module
from ddpbench.analysis.diagnosis import claims as claims_module
from ddpbench.analysis.diagnosis import finders as diagnosis_module
from ddpbench.analysis.diagnosis import verdict as verdict_module
from ddpbench.analysis.models import model as model_module
from ddpbench.analysis.models import network as network_module
from ddpbench.analysis.summary import table as summary_module
from ddpbench.results import tables as tables_module
from ddpbench.testing import ROOT

QUICK = ROOT / "reports" / "examples" / "quick-cpu"  # training jobs, world size 1 and 2, and collectives
#: none of the counted calls
NOTHING = {"summarize": 0, "load_tables": 0, "diagnose": 0, "held_out_check": 0, "headline": 0, "cost_model": 0,
           "audit_findings": 0}


@pytest.fixture
def calls(monkeypatch):
    """How often summarize, load_tables, the diagnosis, the verdict, the cost model and the checker
    ran: each wrapped wherever a ddpbench module holds it."""
    originals = {"summarize": summary_module.summarize, "load_tables": tables_module.load_tables,
                 "diagnose": diagnosis_module.diagnose, "headline": verdict_module.headline,
                 "cost_model": model_module.cost_model, "audit_findings": claims_module.audit_findings,
                 "held_out_check": network_module.held_out_check}
    counts = dict.fromkeys(originals, 0)

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
    assert calls == {**NOTHING, "summarize": 1, "load_tables": 1}  # nothing concluded until a section asks
    assert len(ctx.summary) == 4 and len(ctx.collectives) > 0 and ctx.damaged == []
    assert ctx.folder.summary is ctx.summary


def test_the_report_diagnoses_states_the_verdict_and_fits_the_model_once(calls, tmp_path):
    from ddpbench.report.build import write_report

    write_report(QUICK, tmp_path / "r")  # the verdict, diagnosis and projection sections all show them
    assert calls == {**NOTHING, "summarize": 1, "load_tables": 1, "diagnose": 1, "held_out_check": 1, "headline": 1,
                     "cost_model": 1}


def test_the_report_check_and_the_sweep_end_load_and_summarise_once(calls, capsys):
    from rich.console import Console

    from ddpbench.cli.program import main
    from ddpbench.cli.shared.running import finish_report

    assert main(["report", str(QUICK), "--check"]) == 0  # the findings and the checker's problems
    assert calls == {**NOTHING, "summarize": 1, "load_tables": 1, "diagnose": 1, "held_out_check": 1, "cost_model": 1,
                     "headline": 1, "audit_findings": 1}
    assert finish_report(QUICK, Console(quiet=True), write=False) == 0  # the table and the verdict
    assert calls == {**NOTHING, "summarize": 2, "load_tables": 2, "diagnose": 2, "held_out_check": 2, "cost_model": 2,
                     "audit_findings": 1, "headline": 2}
    out = capsys.readouterr().out
    assert ("8 finding(s) and the verdict over 4 job(s): 0 problem(s) against the figures re-derived from the records"
            in out and "verdict (--verbose: in sentences)" in out)


def test_the_sweep_end_prints_the_verdict_its_report_shows_computed_once(calls, tmp_path, capsys):
    from rich.console import Console

    from ddpbench.cli.shared.running import finish_report

    folder = tmp_path / "sweep"
    shutil.copytree(QUICK, folder)
    assert finish_report(folder, Console(quiet=True), verbose=True) == 0  # the table, the verdict, then the report
    assert calls == {**NOTHING, "summarize": 1, "load_tables": 1, "diagnose": 1, "held_out_check": 1, "headline": 1,
                     "cost_model": 1}
    printed = capsys.readouterr().out.split("verdict in sentences:\n")[1].splitlines()
    page = html.unescape((folder / "index.html").read_text())  # "setting's": the page escapes its apostrophe
    assert printed and all(f"</strong>: {line.split(': ', 1)[1].strip()}</li>" in page for line in printed)


def test_export_benchmark_loads_and_summarises_once(calls, tmp_path, capsys):
    from ddpbench.cli.program import main

    assert main(["export-benchmark", str(QUICK), "--out", str(tmp_path / "b.json")]) == 0
    assert calls == {**NOTHING, "summarize": 1, "load_tables": 1}  # it shows no finding: none computed
    assert "wrote 4 benchmarks" in capsys.readouterr().out


def test_compare_loads_and_summarises_each_folder_once(calls, tmp_path, capsys):
    from ddpbench.cli.program import main

    assert main(["compare", str(QUICK), str(QUICK), "--out", str(tmp_path / "cmp")]) == 0
    assert calls == {**NOTHING, "summarize": 2, "load_tables": 2}  # A and B; no finding shown, none computed
    assert (tmp_path / "cmp" / "index.html").is_file()


def test_whatif_from_a_folder_loads_and_summarises_once(calls, capsys):
    from ddpbench.cli.program import main

    assert main(["whatif", "--from", str(QUICK), "--inter-gbit", "100"]) == 0
    # its own model of a cluster; the folder's model built once, for its own hold-out check's band
    assert calls == {**NOTHING, "summarize": 1, "load_tables": 1, "cost_model": 1}
    assert capsys.readouterr().out.startswith("model output for transformer-s")
    # on the link it measured: the folder's own model, the report's projection, built once
    assert main(["whatif", "--from", str(QUICK)]) == 0
    assert calls == {**NOTHING, "summarize": 2, "load_tables": 2, "cost_model": 2}
    assert capsys.readouterr().out.startswith("model output for transformer-s")


def test_the_object_holds_the_summary_with_the_datasheet_peak(tmp_path):
    measured = folder_module.load(QUICK)
    again = summary_module.summarize(measured.steps, measured.runs, measured.ranks,
                                     datasheet_tflops=summary_module.datasheet_peak(measured.sweeps))
    assert measured.results_dir == QUICK and measured.damaged == ()
    assert measured.summary.equals(again)
    assert folder_module.load(QUICK, collectives=False).collectives.empty


def test_the_object_concludes_once_what_the_analysis_gives_of_its_tables():
    from ddpbench.analysis.models.costmodel import fit_collectives
    from ddpbench.analysis.models.network import held_out_check, network_table

    measured = folder_module.load(QUICK)
    model = measured.model
    assert model.measured.source == "collectives" and len(model.checks) > 0 and len(model.projection) > 0
    assert set(model.primary_checks["link"]) == {model.measured.name}
    direct = diagnosis_module.diagnose(measured.summary, model.shown_projection, model.primary_checks,
                                       held_out_check(network_table(measured.summary, measured.ranks)),
                                       link=fit_collectives(measured.collectives))
    assert [f.text for f in measured.findings] == [f.text for f in direct] and len(direct) == 8
    assert measured.verdict[:4] == verdict_module.headline(direct, measured.summary)
    # no price stored: the fastest setting, and no cheapest
    assert [label for label, _ in measured.verdict] == ["scaling", "lost time", "top cause", "best setting", "fastest"]
    assert measured.contradictions == claims_module.audit_findings(QUICK, direct,
                                                                  measured.verdict, measured.summary) == []
    # kept: asking again gives the same objects
    assert measured.model is model and measured.findings is measured.findings and measured.verdict is measured.verdict


def test_a_folder_without_jobs_concludes_nothing():
    measured = folder_module.Measured(QUICK, *(pd.DataFrame() for _ in range(5)), pd.DataFrame())
    assert measured.findings == [] and measured.verdict == [] and measured.contradictions == []
    assert measured.model.measured is None and measured.model.projection.empty


def test_a_report_context_made_by_hand_gets_the_object_over_its_own_tables(tmp_path):
    from ddpbench.report.page import ReportContext

    measured = folder_module.load(QUICK)
    ctx = ReportContext(measured.summary, measured.steps, measured.runs, measured.ranks, measured.sweeps, QUICK,
                        tmp_path, measured.collectives)
    assert ctx.folder is not measured and ctx.folder.summary is measured.summary
    assert [f.text for f in ctx.folder.findings] == [f.text for f in measured.findings]


@pytest.mark.parametrize("argv", [["export-benchmark", "{f}", "--out", "{t}/b.json"], ["whatif", "--from", "{f}"],
                                  ["compare", "{f}", "{f}", "--out", "{t}/cmp"], ["report", "{f}", "--check"]])
def test_a_damaged_record_is_said_once_per_command(argv, tmp_path, capsys):
    from ddpbench.cli.program import main

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
    from ddpbench.cli.program import main

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
    goes through the object, not through its own copy of the recipe. (ddpbench/testing is the tests'
    support: its checks of a folder derive what they check on their own, as tests do.)"""
    package = Path(ddpbench.__file__).parent
    both = []
    for path in sorted(p for p in package.rglob("*.py") if not p.is_relative_to(package / "testing")):
        called = _calls(ast.parse(path.read_text(), str(path)))
        if "summarize" in called and called & {"load_tables", "load_folder", "load"}:
            both.append(str(path.relative_to(package)))
    assert both == [str(Path("analysis") / "folder.py")]


def _imports(tree: ast.AST) -> set[str]:
    """Every module an import statement names (``from a.b import c`` names a.b and a.b.c)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_only_the_report_imports_its_sections():
    """The command line and the benchmarks take the findings, the verdict and the model from the folder
    object: no module outside ddpbench/report imports a report section (imports inside functions too)."""
    package = Path(ddpbench.__file__).parent
    report = package / "report"
    reaching = []
    for path in sorted([*package.rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]):
        if path.is_relative_to(report):
            continue
        names = _imports(ast.parse(path.read_text(), str(path)))
        if any(n == "ddpbench.report.sections" or n.startswith("ddpbench.report.sections.") for n in names):
            reaching.append(str(path.relative_to(ROOT)))
    assert reaching == []
    # the scan sees a section import where one is
    assert "ddpbench.report.sections.diagnosis" in _imports(ast.parse("from ddpbench.report.sections import diagnosis"))


def test_a_sweep_whose_jobs_all_failed_says_so_first_with_the_first_reason(tmp_path):
    """Nothing measured, nothing concluded: the verdict is one line, that every job failed and why the first
    did (issue 59: it said "top cause: none: no fix the diagnosis knows would recover 10 %" beside it)."""
    from ddpbench.testing.records import failed, write_results

    write_results(tmp_path, [failed("RuntimeError: gloo connect timed out", world_size=2),
                             failed("boom", status="timed_out", world_size=1)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        measured = folder_module.load(tmp_path)
    assert [label for label, _ in measured.verdict] == ["failed"]
    text = measured.verdict[0][1]
    assert text.startswith("every job failed (1 failed, 1 timed_out)") and "gloo connect timed out" in text
    assert measured.contradictions == []
