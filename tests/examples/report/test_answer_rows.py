"""Every committed example folder's verdict as its answer table (docs/reading-the-report.md#the-verdict-an-
answer-table-first): the questions in their declared order, and a call the launches cannot make always says
what would settle it."""

from __future__ import annotations

from ddpbench.analysis.diagnosis.verdict import QUESTIONS
from ddpbench.analysis.folder import load
from ddpbench.testing import ROOT

EXAMPLES = ROOT / "reports" / "examples"


def test_every_committed_folder_answers_in_the_declared_order_and_says_what_would_settle_a_cannot_tell():
    seen = 0
    for folder in sorted(EXAMPLES.glob("*/results.jsonl")):
        measured = load(folder.parent)
        rows = measured.answers
        questions = [a.question for a in rows]
        assert questions == [q for q in QUESTIONS if q in questions], folder
        for a in rows:
            seen += 1
            assert a.answer and a.sure, (folder, a)
            if a.sure.startswith("cannot tell"):  # a call not made says what would make it
                assert a.settle, (folder, a)
            if a.sure.startswith("significant") or a.question == "scaling" and a.answer.startswith("scales"):
                assert "launches" not in a.settle, (folder, a)  # a call made needs no more launches
    assert seen > 40
