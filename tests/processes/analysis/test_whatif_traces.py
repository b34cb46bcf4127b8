"""``whatif --from`` a folder of profiler traces: what its ranks ran (compute, the all-reduces where they were
launched, their times by size, the ranks' spread) projected on the link it measured. Reading the traces starts
the reader's worker processes."""

from __future__ import annotations

from ddpbench.cli.program import main
from ddpbench.testing import ROOT
from ddpbench.testing.pages import whatif_rows

EX = ROOT / "reports" / "examples"


def test_a_folder_of_traces_is_projected_from_what_its_ranks_ran(capsys):
    assert main(["whatif", "--from", str(EX / "traces-cpu"), "--world-sizes", "1,2,64"]) == 0
    out = capsys.readouterr().out
    assert "(traced) as measured in" in out and "each where the trace launched it" in out
    assert "traced: all_reduce, gloo, world size 2" in out
    assert "not checked: measured at fewer than 3 world sizes" in out
    rows = whatif_rows(out, "traces (traced)")
    assert sorted(rows) == [1, 2, 64] and float(rows[64][1]) >= float(rows[2][1]) >= float(rows[1][1])
    assert " ".join(rows[64][-3:]) == "past the check" and rows[2][-1] != "check"


def test_a_folder_of_traces_on_a_cluster_described_keeps_its_measured_spread_and_buckets(capsys):
    assert main(["whatif", "--from", str(EX / "traces-cpu" / "traces"), "--inter-gbit", "100", "--world-sizes",
                 "1,8"]) == 0
    out = capsys.readouterr().out
    assert "(traced) as traced in" in out and "each ready where the trace launched it" in out
    assert "measured between the 2 traced ranks of traces)" in out  # the spread the trace measured, not the fit's
    assert "8 devices a node at 2400 Gbit/s, nodes at 100 Gbit/s" in out
