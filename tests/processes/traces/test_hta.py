"""Side by side with Holistic Trace Analysis (HTA), on the committed H100 traces and on a generated
4-rank job: per rank, the temporal breakdown (compute, non-compute and idle time as shares of the
GPU's span) and the communication-computation overlap agree within 1 percentage point, where the two
define them alike (docs/traces.md). HTA runs in a process of its own per folder
(:func:`ddpbench.testing.traces.hta_reading`). HTA is an optional test extra; CI installs it. Only HTA
missing skips these tests; the committed traces missing where it is installed fails them."""

import shutil

import pandas as pd
import pytest

from ddpbench.testing import ROOT
from ddpbench.testing.traces import hta_reading, public_trace, write_job
from ddpbench.traces.folder import read_folder

pytest.importorskip("hta.trace_analysis", reason="HolisticTraceAnalysis is not installed (the hta extra)")

TRACES = ROOT / "reports/examples/gpu-trace-frameworks-h100/traces"
COMMITTED = sorted(TRACES.glob("*.json.gz"))
#: the most two readings may differ, in percentage points
TOLERANCE_PP = 1.0


def ours(folder) -> pd.DataFrame:
    (job,) = read_folder(folder, workers=1)
    ranks = job.ranks.set_index("rank")
    span = ranks["span_us"]
    return pd.DataFrame({"compute": 100 * ranks["compute_us"] / span,
                         "non-compute": 100 * ranks["non_compute_us"] / span, "idle": 100 * ranks["idle_us"] / span,
                         "overlap": 100 * ranks["overlap_us"] / ranks["comm_us"]})


def assert_agree(folder, overlap: bool) -> pd.DataFrame:
    mine, theirs = ours(folder), hta_reading(folder, overlap)
    for what in theirs.columns:
        gap = (mine[what] - theirs[what]).abs()
        assert gap.max() <= TOLERANCE_PP, f"{what}: ours {mine[what].tolist()}, HTA's {theirs[what].tolist()}"
    return mine


@pytest.mark.parametrize("trace", COMMITTED, ids=lambda p: p.name.split(".")[0])
def test_the_committed_h100_traces_agree_with_hta(tmp_path, trace):
    shutil.copy(trace, tmp_path / trace.name)
    assert_agree(tmp_path, overlap=False)  # one GPU: no communication to overlap


def test_the_committed_traces_are_found():
    """The comparison above takes its traces from a glob, and pytest skips a test of no parameters without a
    word: where HTA is installed (CI installs it) and the traces it would read are gone, that is a failure."""
    assert COMMITTED, f"no committed trace (*.json.gz) in {TRACES}: nothing was compared with HTA"


def test_a_generated_job_with_communication_agrees_with_hta(tmp_path):
    write_job(tmp_path, 4, straggler=2, ranks_per_host=2)
    mine = assert_agree(tmp_path, overlap=True)
    assert (mine["overlap"] > 50).all()  # the all-reduces ran under compute


def test_a_generated_job_of_a_public_layout_agrees_with_hta(tmp_path):
    """The public A100 trace's layout (tests/integration/traces/test_public_layout.py), as the traces
    benchmark generates it, is read by HTA, and the two readings agree."""
    try:
        source = public_trace("a100")
    except FileNotFoundError as err:
        pytest.skip(str(err))
    write_job(tmp_path, 2, straggler=1, ranks_per_host=1, variants=2, source=source)
    mine = assert_agree(tmp_path, overlap=True)
    assert mine.index.tolist() == [0, 1]
