"""The independent checker (ddpbench.audit) finds nothing wrong in any committed example folder:
the verdict and the findings of each, as `report --check` hands them over. (A file of its own:
the longest test of the inner loop, it runs beside test_audit.py on another core.)"""

import warnings

import pytest

from ddpbench.analysis.diagnosis.verdict import QUESTIONS
from ddpbench.analysis.folder import load
from ddpbench.audit.records import read
from ddpbench.results.tables import load_tables
from ddpbench.testing import ROOT

EXAMPLES = ROOT / "reports" / "examples"


def assert_answers(folder, rows) -> int:
    """The answer table's rows of one folder (docs/reading-the-report.md#the-verdict-an-answer-table-first): in
    the declared order of questions; a call the launches cannot make says what would settle it, and a call made
    asks for no more launches. Returns how many rows it read."""
    questions = [a.question for a in rows]
    assert questions == [q for q in QUESTIONS if q in questions], folder
    for a in rows:
        assert a.answer and a.sure, (folder, a)
        if a.sure.startswith("cannot tell"):
            assert a.settle, (folder, a)
        if a.sure.startswith("significant") or a.question == "scaling" and a.answer.startswith("scales"):
            assert "launches" not in a.settle, (folder, a)
    return len(rows)


def report_folders() -> list:
    """Every committed example folder read as a report: history-cpu's 29 sweeps of one experiment at 22 commits
    (its store's entries and bisect's folders) are read as a history, not as reports; its first and last
    entries stand for them."""
    folders = sorted(p.parent for p in EXAMPLES.glob("**/results.jsonl"))
    history = [f for f in folders if f.is_relative_to(EXAMPLES / "history-cpu")]
    entries = sorted(f for f in history if f.parent.parent.name == "store")
    return [f for f in folders if f not in history] + entries[:1] + entries[-1:]


def test_every_committed_example_folder_is_checked():
    folders = sorted(p.parent for p in EXAMPLES.glob("**/results.jsonl"))
    assert len(folders) >= 30
    history = [f for f in folders if f.is_relative_to(EXAMPLES / "history-cpu")]
    assert len(history) >= 22 and len([f for f in history if f.parent.parent.name == "store"]) >= 20
    assert len(report_folders()) >= 30


@pytest.mark.parametrize("folder", report_folders(), ids=lambda f: str(f.relative_to(EXAMPLES)))
def test_no_problem_in_the_committed_example_folder(folder):
    """The verdict (its sentences and its answer table) and the findings of a committed example folder, as
    `report --check` hands them over: the checker finds nothing -- no figure, interval, comparison ("Nx as fast
    as"), retired "N % faster than", scaling word against its speedup, or one name with two numbers -- and the
    answer table keeps its promises."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        measured = load(folder)
        problems = measured.contradictions
    assert problems == [], [p.line() for p in problems]
    finished = len(measured.summary) and (measured.summary["status"] == "ok").any()
    assert assert_answers(folder, measured.answers) > 0 or not finished


def test_the_checkers_reader_and_the_analysis_reader_agree_on_every_committed_folder():
    """Two readers of results.jsonl that share no code (ddpbench.audit.records, ddpbench.results.tables)
    keep the same launches of every committed folder, with the same step rows, times, batches and FLOPs."""
    folders = sorted(p.parent for p in EXAMPLES.glob("**/results.jsonl"))
    for folder in folders:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tables = load_tables(folder)
        own = read(folder)
        for mine, theirs in ((own.runs, tables.runs), (own.steps, tables.steps)):
            assert sorted(map(tuple, mine[["key", "repeat"]].to_numpy().tolist())) == \
                sorted(map(tuple, theirs[["key", "repeat"]].to_numpy().tolist())), folder
        for column in ("step_ms", "forward_ms", "ready_ms"):
            a = own.steps.groupby(["key", "repeat", "phase"])[column].sum(min_count=1)
            b = tables.steps.groupby(["key", "repeat", "phase"])[column].sum(min_count=1)
            assert a.round(9).equals(b.round(9)), (folder, column)
        batches = own.runs.set_index(["key", "repeat"])["global_batch"].sort_index()
        assert batches.equals(tables.runs.set_index(["key", "repeat"])["global_batch"].sort_index().astype(int)), folder
        if "flops_per_step" in tables.runs:  # what each process computed a step, for the TFLOP/s a finding quotes
            flops = tables.runs.set_index(["key", "repeat"])["flops_per_step"].sort_index().astype(float)
            assert own.runs.set_index(["key", "repeat"])["flops_per_step"].sort_index().equals(flops), folder
