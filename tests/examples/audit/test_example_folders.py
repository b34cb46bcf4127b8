"""The independent checker (ddpbench.audit) finds nothing wrong in any committed example folder:
the verdict and the findings of each, as `report --check` hands them over (the first half of the
folders here, the rest in test_example_folders_rest.py, so that the halves run on two cores)."""

import warnings

from ddpbench.testing import ROOT

EXAMPLES = ROOT / "reports" / "examples"


def checked_folders() -> list:
    """Every committed example folder with results; of history-cpu's 29 sweeps of one experiment at 22
    commits (its store's entries and bisect's folders), read as a history rather than as reports, its
    first and last entries stand for them."""
    folders = sorted(p.parent for p in EXAMPLES.glob("**/results.jsonl"))
    assert len(folders) >= 30
    history = [f for f in folders if f.is_relative_to(EXAMPLES / "history-cpu")]
    entries = sorted(f for f in history if f.parent.parent.name == "store")
    assert len(history) >= 22 and len(entries) >= 20
    return [f for f in folders if f not in history] + [entries[0], entries[-1]]


def no_problem_in(folders) -> None:
    """The verdict and the findings of each folder, as `report --check` hands them over, hold."""
    from ddpbench.analysis.folder import load

    for folder in folders:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            problems = load(folder).contradictions
        assert problems == [], (folder, [p.line() for p in problems])


def test_no_problem_in_any_committed_example_folder():
    """The first half of the folders (test_example_folders_rest.py checks the others: the suite runs a file
    at a time on each core, so the two halves run side by side)."""
    folders = checked_folders()
    no_problem_in(folders[: len(folders) // 2])


def test_the_checkers_reader_and_the_analysis_reader_agree_on_every_committed_folder():
    """Two readers of results.jsonl that share no code (ddpbench.audit.records, ddpbench.results.tables)
    keep the same launches of every committed folder, with the same step rows, times and batches."""
    from ddpbench.audit.records import read
    from ddpbench.results.tables import load_tables

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
