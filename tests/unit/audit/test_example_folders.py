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
    for folder in folders:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            problems = load(folder).contradictions
        assert problems == [], (folder, [p.line() for p in problems])
