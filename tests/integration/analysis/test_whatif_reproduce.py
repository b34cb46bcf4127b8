"""``whatif --from`` reproduces what it measured before it projects: each public-shaped trace (collectives without
sizes, with or without their shapes; one traced rank of several; point-to-point only) gives a projection that
reproduces the measured step or one line saying why not, never a traceback; one traced rank's spread is said to be
the published fit's; and no flag that asks a question swaps the link it measured for a cluster assumed. Each
folder is one rank's trace, read in this process (ddpbench/testing/traces.py)."""

from __future__ import annotations

import copy

import pytest

from ddpbench.testing import ROOT, run_main
from ddpbench.testing.pages import whatif_rows
from ddpbench.testing.traces import point_to_point, tiny_trace, write_files, write_job

EX = ROOT / "reports" / "examples"


def _with_sends(trace: dict) -> dict:
    """``trace`` with a send after each step's compute (a pipeline's, exposed): traffic the model does not make."""
    for e in [e for e in trace["traceEvents"] if e.get("cat") == "kernel" and "AllReduce" in e["name"]]:
        send = copy.deepcopy(e)
        send.update(name="ncclDevKernel_SendRecv", ts=e["ts"] + 410.0, dur=80.0)
        send["args"]["Collective name"] = "send"
        trace["traceEvents"].append(send)
    return trace


def _folder(tmp_path, name: str, trace: dict):
    return write_files(tmp_path / name, {"rank1.pt.trace.json": trace})


def test_a_trace_whose_collectives_carry_no_sizes_takes_them_from_its_shapes_and_reproduces_its_step(tmp_path):
    """The V100 trace's shape: rank 1 of 2, its NCCL kernels without sizes, their host ranges with shapes."""
    out = run_main("whatif", "--from", _folder(tmp_path, "v100-like", tiny_trace(1, 2, sizes="shapes")),
                   "--world-sizes", "1,2,8")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert "1 bucket(s), 4.19 MB" in out.stdout  # 2**20 floats, from the host range's Input Dims
    rows = whatif_rows(out.stdout, "v100-like (traced)")
    assert sorted(rows) == [1, 2, 8] and rows[2][-2:] == ["(in", "sample)"] and rows[2][-3] == "reproduced"
    assert float(rows[2][9]) == pytest.approx(1.0)  # the measured step, beside the model's
    assert "not measured: one traced rank of 2; the step jitter fitted to published scaling" in out.stdout
    assert "measured between them" not in out.stdout and "no projection" not in out.stdout


def test_one_traced_rank_of_eight_is_reproduced_at_eight_and_projected_with_the_published_spread(tmp_path):
    """The A100 trace's shape: rank 3 of an 8-rank job alone."""
    write_job(tmp_path / "a100-like", 8, ranks=[3])
    out = run_main("whatif", "--from", tmp_path / "a100-like", "--world-sizes", "8,64")
    assert out.returncode == 0, out.stderr
    rows = whatif_rows(out.stdout, "a100-like (traced)")
    assert rows[8][-3] == "reproduced" and " ".join(rows[64][-3:]) == "past the check"
    assert float(rows[64][1]) > float(rows[8][1]) and float(rows[64][8].rstrip("%")) < 100  # the slowest of 64 waited
    assert "(not measured: one traced rank of 8;" in out.stdout and "ranks' step spread 0.0%" not in out.stdout


@pytest.mark.parametrize("name, trace, words", [
    ("no sizes nor shapes", tiny_trace(1, 2, sizes="none"), "record_shapes=True"),
    ("point-to-point only", point_to_point(tiny_trace(0, 2)), "no all-reduce, only send_recv"),
])
def test_a_trace_that_cannot_be_projected_is_one_line(tmp_path, name, trace, words):
    out = run_main("whatif", "--from", _folder(tmp_path, name.replace(" ", "-"), trace))
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert words in lines[0] and "cannot be projected" in lines[0] and not out.stdout


def test_a_trace_the_model_does_not_reproduce_gets_no_projection_and_one_line_why(tmp_path):
    out = run_main("whatif", "--from", _folder(tmp_path, "sends", _with_sends(tiny_trace(1, 2))))
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    rows = whatif_rows(out.stdout, "sends (traced)")
    assert sorted(rows) == [2] and " ".join(rows[2][-4:]) == "not reproduced (in sample)"  # its measured size alone
    (line,) = [x for x in out.stdout.splitlines() if x.startswith("no projection:")]
    assert "at 2 rank(s)" in line and "send_recv a step, which the model does not project" in line


def test_a_question_asked_of_a_folder_keeps_the_link_it_measured(capsys):
    """``--target-efficiency`` is answered on the link measured, not on a cluster assumed; a price is refused."""
    alone = run_main("whatif", "--from", EX / "world-sizes-cpu").stdout
    asked = run_main("whatif", "--from", EX / "world-sizes-cpu", "--target-efficiency", "0.5")
    assert asked.returncode == 0 and "devices a node" not in asked.stdout
    for label in ("mlp-m, batch 32/rank", "cnn-m, batch 32/rank"):
        assert whatif_rows(asked.stdout, label)[2] == whatif_rows(alone, label)[2]  # 2 ranks: 53 %, as measured
    assert "largest world size shown at 50% or better on the link it measured (--target-efficiency): 2 of 1024" \
        in asked.stdout
    priced = run_main("whatif", "--from", EX / "world-sizes-cpu", "--price-per-device-hour", "2")
    lines = priced.stderr.strip().splitlines()
    assert priced.returncode == 2 and len(lines) == 1 and "--price-per-device-hour: the cost and batch of training " \
        "is given on a cluster described" in lines[0], priced.stderr
