"""The causes of lost time are declared once, in the registry: names, functions and order cannot drift."""

from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

from ddpbench.analysis.diagnosis import causes, estimates, finders, findings, wording


def _is_estimate(function) -> bool:
    """A function with the one signature of a cause's estimate: ``(row, context)``."""
    return inspect.isfunction(function) and list(inspect.signature(function).parameters) == ["row", "context"]


def test_every_registered_cause_has_its_one_function():
    assert causes.CAUSES == tuple(c.name for c in causes.REGISTRY)
    assert len(set(causes.CAUSES)) == len(causes.CAUSES)
    for declared in causes.REGISTRY:
        assert _is_estimate(declared.estimate), f"{declared.name}: no estimate(row, context)"
        assert causes.cause(declared.name) is declared


def test_every_estimate_function_is_registered():
    functions = {f for _, f in inspect.getmembers(causes, _is_estimate) if f.__module__ == causes.__name__}
    registered = {c.estimate for c in causes.REGISTRY}
    assert functions == registered, sorted(f.__name__ for f in functions ^ registered)


def test_each_function_estimates_the_cause_it_is_registered_as():
    for declared in causes.REGISTRY:
        tree = ast.parse(textwrap.dedent(inspect.getsource(declared.estimate)))
        named = {call.args[0].value for call in ast.walk(tree) if isinstance(call, ast.Call)
                 and getattr(call.func, "id", None) == "Estimate" and isinstance(call.args[0], ast.Constant)}
        assert named <= {declared.name}, (declared.name, named)


def test_an_unknown_cause_is_refused_by_name():
    with pytest.raises(KeyError, match="no cause named 'nope'"):
        causes.cause("nope")


def test_blaming_ranking_and_wording_read_the_declarations(monkeypatch):
    """No cause name is written in findings or wording: their rules follow the registry's flags."""
    for module in (findings, wording):
        source = inspect.getsource(module)
        for name in causes.CAUSES:
            assert f'"{name}"' not in source, (module.__name__, name)
    nan = estimates.Estimate("straggler", float("nan"), (estimates.Fix("f"),), "d")
    assert not findings.blames({"step_ms_mean": 10.0}, nan)
    flagged = tuple(causes.Cause(c.name, c.estimate, blamed_unestimated=True, first=c.name == "straggler")
                    if c.name == "straggler" else c for c in causes.REGISTRY)
    monkeypatch.setattr(causes, "_BY_NAME", {c.name: c for c in flagged})
    assert findings.blames({"step_ms_mean": 10.0}, nan)
    first = findings.Finding("straggler", "warn", "s", cause="straggler", recoverable_ms=1.0)
    other = findings.Finding("data", "warn", "d", cause="data", recoverable_ms=50.0)
    assert findings.rank([other, first]) == [first, other]



def test_the_finders_are_one_tuple_of_one_signature():
    assert finders.FINDERS and len(set(finders.FINDERS)) == len(finders.FINDERS)
    for finder in finders.FINDERS:
        assert list(inspect.signature(finder).parameters) == ["summary", "given"], finder
