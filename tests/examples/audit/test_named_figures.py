"""Figures the checker holds to the one their words name, on a committed example folder (a test that
reads a strategies folder of 39 jobs: beside the other example tests, not in the inner loop)."""

from __future__ import annotations

import re
import warnings

from ddpbench.analysis.folder import load
from ddpbench.audit import Claim, derive
from ddpbench.audit.checks import check_claim
from ddpbench.testing import ROOT

EXAMPLES = ROOT / "reports" / "examples"


def test_a_master_s_traffic_and_its_baseline_s_step_are_held_to_their_own_figures():
    """"Rank 0 moves 161 MB per step, the median rank 54 MB" (the busiest rank's and the median rank's
    traffic) and "against the baseline's 22.2 ms step" (the world-size-1 job's own): each figure is held
    to the one its words name, not to any figure of its unit (checker-cpu/held-out/strategies)."""
    folder = EXAMPLES / "checker-cpu" / "held-out" / "strategies"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        measured = load(folder)
    fig = derive(folder)
    master = next(f for f in measured.findings if "Rank 0 moves 161 MB per step, the median rank 54 MB" in f.text)
    contention = next(f for f in measured.findings if "against the baseline's" in f.text)
    for finding in (master, contention):
        claim = Claim(finding.text, finding.job, finding.fix_fields, finding.basis, finding.kind)
        assert check_claim(fig, claim) == []
    for wrong in ("the median rank 32 MB", "the median rank 81 MB"):
        text = master.text.replace("the median rank 54 MB", wrong)
        assert check_claim(fig, Claim(text, master.job, master.fix_fields, master.basis, master.kind)), wrong
    said = re.search(r"the baseline's ([\d.]+) ms step", contention.text).group(1)
    text = contention.text.replace(f"the baseline's {said} ms", f"the baseline's {float(said) * 0.95:.1f} ms")
    assert check_claim(fig, Claim(text, contention.job, contention.fix_fields, contention.basis, contention.kind))
