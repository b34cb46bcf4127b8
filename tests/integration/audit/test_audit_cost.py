"""The independent checker re-derives costs, hours and per-sample gains from the records and the
price: the verdict's fastest, cheapest and deadline lines of the committed cost example hold, and a
line changed in any of its figures, or a deadline it does not meet, is caught."""

from __future__ import annotations

import re
import warnings

import pytest

from ddpbench import audit
from ddpbench.analysis.diagnosis.claims import verdict_claims
from ddpbench.analysis.folder import load
from ddpbench.testing import ROOT

COST = ROOT / "reports" / "examples" / "cost-cpu"


@pytest.fixture(scope="module")
def measured():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load(COST)


def _problems(measured, lines, price=None):
    claims = verdict_claims(measured.findings, lines, measured.summary)
    return audit.check_folder(COST, claims,
                              price if price is not None else measured.cost.to_dict())


def test_the_cost_lines_of_the_example_hold(measured):
    labels = [label for label, _ in measured.verdict]
    assert {"fastest", "cheapest", "deadline"} <= set(labels)
    assert measured.contradictions == []


#: a decimal figure (not the power calculation's): an amount, hours, a throughput, a share, or a speedup ("1.04x")
NUMBER = re.compile(r"(?<![\w.])(?<!spread )\d+\.\d+(?= USD| h| samples/s| %|x\b)")


def _changed(text: str, index: int) -> str:
    """``text`` with its ``index``-th decimal figure 40 % larger, at the same precision."""
    m = list(NUMBER.finditer(text))[index]
    digits = len(m.group().split(".")[1])
    return text[:m.start()] + f"{float(m.group()) * 1.4:.{digits}f}" + text[m.end():]


@pytest.mark.parametrize("label", ["fastest", "cheapest", "deadline"])
def test_every_figure_of_a_cost_line_is_checked(measured, label):
    text = dict(measured.verdict)[label]
    count = len(NUMBER.findall(text))
    assert count >= 2
    for index in range(count):
        wrong = _changed(text, index)
        assert _problems(measured, [(label, wrong)]), f"not caught: {wrong}"


def test_a_deadline_not_met_is_caught(measured):
    text = dict(measured.verdict)["deadline"]
    hours = float(re.search(r"within ([\d.]+) h: ([\d.]+) h", text).group(2))
    tight = re.sub(r"within [\d.]+ h", f"within {hours / 2:.3g} h", text)
    assert any(p.kind == "deadline" for p in _problems(measured, [("deadline", tight)]))


def test_costs_at_another_price_than_the_lines_were_written_at_are_caught(measured):
    line = ("cheapest", dict(measured.verdict)["cheapest"])
    assert _problems(measured, [line]) == []
    price = {**measured.cost.to_dict(), "price_per_device_hour": 2 * measured.cost.price_per_device_hour}
    assert _problems(measured, [line], price)


def test_a_price_of_nothing_is_checked_as_any_other(measured):
    """At 0 an hour every job costs nothing and no per-sample cost gain is made (0 / 0); the check goes on and
    catches the lines written at the example's price, where it once raised ZeroDivisionError."""
    price = {**measured.cost.to_dict(), "price_per_device_hour": 0.0}
    problems = _problems(measured, [("cheapest", dict(measured.verdict)["cheapest"])], price)
    assert problems and all(p.kind for p in problems)
