"""The phases of a step are declared once (ddpbench/results/phases.py): every reader's list is the
declaration's, and no module of the package writes a list of them by hand but the independent
checker's own (ddpbench/audit/pool.py), held equal to it."""

from __future__ import annotations

import ast

from ddpbench.results.phases import BY_COLUMN, FOLLOWED, PHASES, TIMED
from ddpbench.testing import ROOT

COLUMNS = tuple(phase.column for phase in PHASES)


def test_every_reader_takes_the_declared_phases():
    from ddpbench.analysis.core import COLUMNS as SUMMARY
    from ddpbench.analysis.history import changes, trend
    from ddpbench.audit import pool
    from ddpbench.report.plots import jobs, timeline
    from ddpbench.report.sections import gpu
    from ddpbench.results.schema import TIMED_PHASES, StepRow

    timed = tuple(phase.column for phase in TIMED)
    followed = tuple(phase.column for phase in FOLLOWED)
    assert timed == TIMED_PHASES == ("data_ms", "forward_ms", "backward_ms", "comm_ms", "optimizer_ms")
    assert StepRow._fields[3:3 + len(timed)] == timed  # a stored row's phases, in the step's order
    assert all(SUMMARY[column].meaning == BY_COLUMN[column].meaning for column in COLUMNS)
    assert followed == changes.PHASES == ("data_ms", "forward_ms", "backward_ms", "optimizer_ms", "exposed_comm_ms")
    assert set(followed) <= set(trend.FIGURES) and set(trend.FIGURES) & set(COLUMNS) == set(followed)
    assert [column for _, column, _ in jobs.SEGMENTS if column in COLUMNS] == [c for c in timed if c != "backward_ms"]
    assert all(colour == BY_COLUMN[column].colour for _, column, colour in jobs.SEGMENTS if column in COLUMNS)
    assert list(timeline.PHASE_COLORS) == [phase.name for phase in TIMED] == [name for _, name in gpu.PHASES]
    # the checker keeps its own list (it imports nothing of the analysis): the same names, in the same order
    assert pool.PHASES == timed


def test_each_phase_has_one_colour_that_no_change_point_has():
    """Two phases never share a colour, and none is a change point's (the trend draws both on one panel)."""
    from ddpbench.report.plots import trend

    colours = [phase.colour for phase in PHASES]
    assert len(set(colours)) == len(colours)
    assert not set(colours) & {trend.SLOWER_COLOR, trend.FASTER_COLOR, trend.MACHINE_COLOR}


def hand_written(source: str) -> list[int]:
    """The lines of ``source`` that write a list of phases by hand: a tuple, list or set of three or more
    phase columns, or a mapping of three or more phase columns or names to words or colours."""
    names = {phase.name for phase in PHASES}
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            found = {e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in COLUMNS}
        elif isinstance(node, ast.Dict):
            found = {k.value for k, v in zip(node.keys, node.values)
                     if isinstance(k, ast.Constant) and k.value in {*COLUMNS, *names}
                     and isinstance(v, ast.Constant) and (v.value is None or isinstance(v.value, str))}
        else:
            continue
        lines += [node.lineno] if len(found) >= 3 else []
    return lines


def test_no_module_writes_the_phases_out_again():
    found = {path.relative_to(ROOT).as_posix(): hand_written(path.read_text())
             for path in sorted((ROOT / "ddpbench").rglob("*.py"))}
    # the checker's own list alone (it imports nothing of the analysis), held to the declaration above
    assert {path: len(lines) for path, lines in found.items() if lines} == {"ddpbench/audit/pool.py": 1}
    # the count is not vacuous: each form a reader wrote before the declaration is found
    assert hand_written('PHASES = ("data_ms", "forward_ms", "backward_ms", "optimizer_ms")\n') == [1]
    assert hand_written('COLORS = {"data": "#a0a0a0", "forward": "#4c72b0", "comm": "#dd8452"}\n') == [1]
    assert hand_written('FIGURES = {"x": 1,\n "data_ms": None, "forward_ms": None, "optimizer_ms": None}\n') == [1]
    # a row of values is not a list of phases
    assert hand_written('row = {"data_ms": 0.0, "forward_ms": 1.0, "optimizer_ms": 1.0}\n') == []
