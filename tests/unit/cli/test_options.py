"""What is shown is handed the flags as a frozen value (ddpbench.cli.shared.parsing.Options) and the command reads
the folder (ddpbench.cli.shared.measured): ``whatif --from`` on a cluster leaves the parsed flags as they were."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from ddpbench.cli.shared import measured
from ddpbench.cli.shared.parsing import frozen
from ddpbench.testing import ROOT, run_main

QUICK = ROOT / "reports" / "examples" / "quick-cpu"


def test_options_are_read_as_the_flags_and_never_changed():
    args = argparse.Namespace(batch_size=8, from_dir=None)
    options = frozen(args, batch=8)
    assert (options.batch_size, options.batch, getattr(options, "queue", None)) == (8, 8, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.batch = 16
    with pytest.raises(dataclasses.FrozenInstanceError):
        del options.batch_size
    mine = options.but(batch=16)
    assert (mine.batch, options.batch) == (16, 8)
    assert vars(args) == {"batch_size": 8, "from_dir": None}  # the parsed flags as they were


def test_whatif_from_on_a_cluster_leaves_the_flags_as_they_were(monkeypatch):
    seen = []

    def described(args, cluster):
        before = dict(vars(args))
        shown(args, cluster)
        seen.append(before == vars(args))

    shown = measured.print_described
    monkeypatch.setattr(measured, "print_described", described)
    done = run_main("whatif", "--from", QUICK, "--gpus-per-node", "8", "--inter-gbit", "100")
    assert done.returncode == 0, done.stderr
    assert "as measured in" in done.stdout and seen == [True]
