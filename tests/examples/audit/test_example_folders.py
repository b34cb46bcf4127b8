"""The independent checker (ddpbench.audit) finds nothing wrong in any committed example folder:
the verdict and the findings of each, as `report --check` hands them over. (A file of its own:
the longest test of the inner loop, it runs beside test_audit.py on another core.)"""

import warnings

from ddpbench.testing import ROOT

EXAMPLES = ROOT / "reports" / "examples"


def test_no_problem_in_any_committed_example_folder():
    """The verdict and the findings of every committed example folder, as `report --check` hands them over."""
    from ddpbench.analysis.folder import load

    folders = sorted(p.parent for p in EXAMPLES.glob("**/results.jsonl"))
    assert len(folders) >= 30
    # history-cpu holds 29 sweeps of one experiment at 22 commits (its store's entries and bisect's
    # folders): they are read as a history, not as reports; its first and last entries stand for them
    history = [f for f in folders if f.is_relative_to(EXAMPLES / "history-cpu")]
    entries = sorted(f for f in history if f.parent.parent.name == "store")
    assert len(history) >= 22 and len(entries) >= 20
    folders = [f for f in folders if f not in history] + [entries[0], entries[-1]]
    for folder in folders:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            problems = load(folder).contradictions
        assert problems == [], (folder, [p.line() for p in problems])
