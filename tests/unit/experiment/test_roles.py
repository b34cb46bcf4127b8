"""Each job field declares its roles once (ddpbench/experiment/spec.py: ``roles=`` and ``ROLES``): every list of
fields by role is read from there, the independent checker's own copies are held equal to it, and no other module
writes a list of five or more fields by hand but the few that choose columns to show."""

from __future__ import annotations

import ast

import pytest

from ddpbench.experiment import spec
from ddpbench.experiment.spec import FIELDS, ROLES, JobSpec, fields_but, with_role
from ddpbench.testing import ROOT

#: the kinds of field: each field is exactly one of these (and may have any of the other roles)
KINDS = ("model", "comm", "measurement", "recovery", "window", "check", "setting")
#: the modules outside the spec and the checker that still write a list of five or more fields by hand, each a
#: deliberate choice of columns to show (or, for the summary's GPU table, of what a CPU job shares with a GPU job)
CHOSEN = {
    "ddpbench/show/console_tables.py": 1,  # the jobs table's columns
    "ddpbench/report/sections/gpu.py": 1,  # what the GPU, compute and cost sections leave out of a job's label
    "ddpbench/analysis/summary/gpu.py": 1,  # what a CPU job shares with a CUDA job to stand beside it
}


def test_every_field_is_one_kind_and_every_role_has_a_meaning():
    assert all(isinstance(words, str) and words for words in ROLES.values()) and set(KINDS) <= ROLES.keys()
    for name, f in FIELDS.items():
        assert f.metadata["roles"] <= ROLES.keys(), name
        assert len(f.metadata["roles"] & set(KINDS)) == 1, f"{name}: {sorted(f.metadata['roles'])}"
    # what the lists said before the roles, where they drifted apart: script_to_end is how a script job is
    # measured after its window (experiment/buckets.py's list lacked it), never a setting
    assert {"script_to_end", "script_dir", "trace_steps", "repeats"} <= set(with_role("measurement"))
    assert set(with_role("ddp")) == {"bucket_cap_mb", "gradient_as_bucket_view", "static_graph",
                                     "find_unused_parameters"} <= set(with_role("knob"))
    assert not set(with_role("script decides")) & set(with_role("script only"))
    assert set(with_role("script only")) <= {*with_role("model"), *with_role("measurement")}


def test_the_spec_reads_every_list_from_the_roles():
    assert spec.MODEL_FIELDS == with_role("model")
    assert spec.COMM_ONLY_FIELDS == with_role("comm")
    assert spec.MEASURED_HOW == with_role("measurement", "recovery")
    assert spec.WINDOW_FIELDS == with_role("window")
    assert spec.SCRIPT_DECIDES == with_role("script decides") and spec.SCRIPT_ONLY == with_role("script only")
    assert spec.DDP_KNOBS == with_role("ddp") and spec.STRATEGY_KNOBS == with_role("knob")
    assert JobSpec(bucket_cap_mb=5.0, static_graph=True).ddp_arguments() == {
        "bucket_cap_mb": 5.0, "gradient_as_bucket_view": False, "static_graph": True, "find_unused_parameters": False}


def test_every_field_but_some():
    assert fields_but() == tuple(FIELDS)
    assert "bucket_cap_mb" not in fields_but("bucket_cap_mb") and len(fields_but("bucket_cap_mb")) == len(FIELDS) - 1
    left = fields_but("world_size", roles=("comm", "window"))
    assert set(left) == set(FIELDS) - {"world_size", *with_role("comm"), *with_role("window")}
    assert list(left) == [name for name in FIELDS if name in left]  # in the order they are declared
    with pytest.raises(KeyError, match="bucket_cap"):
        fields_but("bucket_cap")  # a misspelt field is no field left out
    with pytest.raises(KeyError, match="measurment"):
        with_role("measurment")


def test_every_reader_takes_the_lists_from_the_roles():
    from ddpbench.analysis.core import COMM_ONLY_FIELDS, WINDOW_FIELDS, jobs
    from ddpbench.analysis.models import layouts
    from ddpbench.experiment import buckets, scripts
    from ddpbench.rank.script import patches
    from ddpbench.sweep import checks

    assert jobs.MODEL_FIELDS == layouts.MODEL_FIELDS == with_role("model")
    assert COMM_ONLY_FIELDS == with_role("comm") and WINDOW_FIELDS == with_role("window")
    assert jobs.STRATEGY_KNOBS == with_role("knob")
    assert set(jobs._UNNAMED) == {*with_role("window"), *with_role("check"), *spec.MEASURED_HOW}
    assert set(jobs._BASELINE) == set(FIELDS) - {"world_size", "threads_per_rank", *with_role("comm"),
                                                   *spec.MEASURED_HOW, *with_role("window")}
    assert set(buckets._SETTINGS) == set(FIELDS) - {"bucket_cap_mb", *spec.MEASURED_HOW}
    assert checks.TIMED_ONLY == with_role("window", "measurement")
    assert (scripts.SCRIPT_DECIDES, scripts.SCRIPT_ONLY) == (with_role("script decides"), with_role("script only"))
    assert patches.ADOPTED == (*with_role("ddp"), "broadcast_buffers")


def test_the_checkers_own_copies_equal_the_roles():
    """The checker keeps its own lists (it re-derives what the analysis says by its own code): the same names."""
    from ddpbench.audit import choices, figures

    assert figures.MEASURED_HOW == spec.MEASURED_HOW
    assert figures.COMM_ONLY == with_role("comm")
    assert figures.WINDOW == with_role("window")
    assert choices.SAME_MODEL == with_role("model")


def hand_written(source: str) -> list[int]:
    """The lines of ``source`` that write a list of fields by hand: a tuple, list or set of five or more field
    names (a mapping is a row of values, not a list)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            found = {e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in FIELDS}
            lines += [node.lineno] if len(found) >= 5 else []
    return lines


def test_no_module_writes_a_list_of_fields_by_hand():
    found = {}
    for path in sorted((ROOT / "ddpbench").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name == "ddpbench/experiment/spec.py" or name.startswith(("ddpbench/audit/", "ddpbench/testing/")):
            continue  # the declaration, the checker's own copies (held equal above), the tests' rows
        if lines := hand_written(path.read_text()):
            found[name] = len(lines)
    assert found == CHOSEN
    # the count is not vacuous: each form a reader wrote before the roles is found
    assert hand_written('MODEL_FIELDS = ("model", "model_size", "model_args", "script", "script_args")\n') == [1]
    assert hand_written('x = [c for c in F if c not in ("repeats", "max_restarts", "fault_step", "fault_rank",\n'
                        '    "snapshot_every")]\n') == [1]
    assert hand_written('ROW = {"model": 1, "model_size": 1, "model_args": 1, "script": 1, "script_args": 1}\n') == []
    assert hand_written('KNOBS = ("bucket_cap_mb", "static_graph", "find_unused_parameters", "seed")\n') == []
