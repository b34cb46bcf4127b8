"""``whatif --global-batch B --micro-batch b`` through the command: the accumulation each size takes, the size
where it reaches 1 and the batch past it, the efficiency below weak scaling's, from a model and from a sweep's
workloads on a cluster described; and each bad input in one line, exit 2."""

import math
import re

import pytest

from ddpbench.testing import ROOT, run_main

MODEL = ("whatif", "--model", "mlp", "--model-size", "l", "--compute-ms", "30")


def _rows(out: str) -> dict[int, list[str]]:
    table = (line.split() for line in out.splitlines() if re.match(r"\s+\d+\s+\d+\s+[\d,]+\s", line))
    return {int(cells[0]): cells for cells in table}


def test_each_size_takes_its_accumulation_and_falls_below_weak_scaling():
    done = run_main(*MODEL, "--global-batch", "1024", "--micro-batch", "8", "--world-sizes", "1,8,64,128,256")
    assert done.returncode == 0, done.stderr
    rows = _rows(done.stdout)
    # devices, accumulation, global batch: 1024 / (8 x devices), never below 1, the batch growing past it
    assert {p: (int(r[1]), r[2]) for p, r in rows.items()} == {
        1: (128, "1,024"), 8: (16, "1,024"), 64: (2, "1,024"), 128: (1, "1,024"), 256: (1, "2,048")}
    efficiency, weak = int(rows[64][7].rstrip("%")), int(rows[64][9].rstrip("%"))
    assert efficiency < weak
    assert "the accumulation reaches 1 at 128 devices (1,024 = 8 x 1 x 128)" in done.stdout
    assert "so at 256 each device keeps its micro-batch of 8 and the global batch grows" in done.stdout
    assert "at 256 devices:" in done.stdout and "below it" in done.stdout


def _bands(out: str) -> dict[int, str]:
    cells = (line.split() for line in out.splitlines() if line[:8].strip().isdigit())
    return {int(c[0]): next(x for x in c if re.fullmatch(r"\d+-\d+%", x)) for c in cells
            if any(re.fullmatch(r"\d+-\d+%", x) for x in c)}


def test_past_where_the_accumulation_reaches_1_the_band_is_weak_scaling_s():
    """The band of each size at its own accumulation (conditioned as whatif's other answers are): where the
    accumulation is 1 the job is the same as each device keeping its micro-batch, and so is its band."""
    sizes = ("--world-sizes", "2,4,8")  # within a node, where published rows state their compute and links
    fixed = run_main(*MODEL, "--global-batch", "64", "--micro-batch", "8", *sizes)
    weak = run_main(*MODEL, *sizes)  # the compute given is the micro-step's: each device keeping it
    assert fixed.returncode == 0 and weak.returncode == 0, fixed.stderr + weak.stderr
    mine, theirs = _bands(fixed.stdout), _bands(weak.stdout)
    assert mine[8] == theirs[8]  # accumulation 1 at 8
    assert mine[4] != theirs[4]  # accumulation 2: less of its step on the link than at 1, another band


@pytest.mark.parametrize("work, steps_at", [
    (("--samples", "10000000"), lambda batch: math.ceil(10_000_000 / batch)),  # fewer steps once the batch grows
    (("--steps", "5000"), lambda batch: 5000),
])
def test_the_time_to_finish_takes_each_size_s_own_accumulation(work, steps_at):
    done = run_main(*MODEL, "--global-batch", "1024", "--micro-batch", "8", "--world-sizes", "8,64,128,256",
                    "--gpus-per-node", "8", "--inter-gbit", "100", "--price-per-device-hour", "2", *work)
    assert done.returncode == 0, done.stderr
    steps = _rows(done.stdout)
    assert "a global batch of 1,024 an optimizer step in micro-batches of 8" in done.stdout
    finish = {int(c[0]): c for c in (line.split() for line in done.stdout.split("time to finish", 1)[1].splitlines())
              if c and c[0].isdigit() and len(c) > 5}
    assert sorted(finish) == [8, 64, 128, 256]
    for p, cells in finish.items():  # devices, nodes, efficiency [band], train h [band], ...
        batch = int(steps[p][2].replace(",", ""))
        hours = steps_at(batch) * float(steps[p][3]) / 3.6e6  # the optimizer steps at the step the table gives
        assert float(cells[6]) == pytest.approx(hours, rel=0.01), (p, cells)
        assert float(cells[10]) == pytest.approx(float(cells[6]) * p, rel=0.01)  # device-hours


def test_the_time_to_finish_of_a_sweep_at_a_fixed_global_batch():
    done = run_main("whatif", "--from", ROOT / "reports" / "examples" / "fixed-batch-cpu", "--inter-gbit", "100",
                    "--samples", "1000000", "--world-sizes", "1,2,4,8")
    assert done.returncode == 0, done.stderr
    assert "time to finish 1,000,000 samples, a global batch of 128 an optimizer step in micro-batches of 32" \
        in done.stdout and "finishes first" in done.stdout


def test_a_sweeps_workloads_on_a_cluster_described():
    done = run_main("whatif", "--from", ROOT / "reports" / "examples" / "world-sizes-cpu", "--inter-gbit", "100",
                    "--global-batch", "1024", "--micro-batch", "32", "--world-sizes", "1,2,32,64")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("model output at a fixed global batch of 1,024 samples, micro-batches of 32") == 2
    assert [int(r[1]) for r in _rows(done.stdout).values()][:4] == [32, 16, 1, 1]


@pytest.mark.parametrize("flags, words", [
    (("--global-batch", "1024"), "--global-batch: does nothing without --micro-batch"),
    (("--micro-batch", "8"), "--micro-batch: does nothing without --global-batch"),
    (("--global-batch", "32", "--micro-batch", "8", "--world-sizes", "8,16"),
     "--global-batch: 32 is smaller than the micro-batch x devices at the smallest size (8 x 8 = 64)"),
    (("--global-batch", "96", "--micro-batch", "8"),
     "--global-batch: 96 is not divisible by the micro-batch x devices at 8 (8 x 8 = 64)"),
    (("--global-batch", "64", "--micro-batch", "0"), "--micro-batch: must be 1 or more (got 0)"),
    (("--global-batch", "64", "--micro-batch", "8", "--accumulation", "2"),
     "--accumulation: does nothing with --global-batch"),
])
def test_bad_input_in_one_line(flags, words):
    done = run_main(*MODEL, *flags)
    assert done.returncode == 2 and words in done.stderr and done.stderr.count("\n") == 1, done.stderr


@pytest.mark.parametrize("folder, flags, words", [
    ("world-sizes-cpu", (), "--global-batch: the cost and batch of training is given on a cluster described"),
    ("world-sizes-cpu", ("--inter-gbit", "100"), "--micro-batch: mlp-m, batch 32/rank was measured at 32 samples"),
    ("traces-cpu/traces", ("--inter-gbit", "100"), "--global-batch: takes a workload's micro-step"),
])
def test_from_a_folder_bad_input_in_one_line(folder, flags, words):
    done = run_main("whatif", "--from", ROOT / "reports" / "examples" / folder, "--global-batch", "64",
                    "--micro-batch", "8", *flags)
    assert done.returncode == 2 and words in done.stderr and done.stderr.count("\n") == 1, done.stderr
