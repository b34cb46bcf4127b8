"""whatif's time to finish through the command: the answer that flips from the larger size to the smaller as the
work shrinks (the queue's waits given), and every bad input one line, exit 2, never a traceback."""

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ddpbench.testing import ROOT, run_main

NOWORK = ("whatif", "--model", "mlp", "--compute-ms", "100")  # a preset: built in this process
BASE = (*NOWORK, "--batch-size", "32")
#: two sizes, one node a device: 2 devices wait an hour in the queue, 1 starts now
QUEUED = (*BASE, "--gpus-per-node", "1", "--queue-wait", "1=0,2=1")


def _answer(out, head: str) -> str:
    assert out.returncode == 0, out.stderr
    return next(line for line in out.stdout.splitlines() if line.startswith(head)).split(": ", 1)[1]


def test_the_size_that_finishes_first_turns_from_the_larger_to_the_smaller_as_the_work_shrinks():
    long = run_main(*QUEUED, "--samples", str(32 * 360_000))  # 10 h on one device; about 5 + 1 on two
    short = run_main(*QUEUED, "--samples", str(32 * 18_000))  # half an hour on one; over an hour on two
    assert _answer(long, "finishes first").startswith("2")
    assert _answer(short, "finishes first") == "1 (sure: its band is apart from every other size's)"
    table = long.stdout.split("time to finish")[1].splitlines()
    two = next(line.split() for line in table if line.split()[:2] == ["2", "2"])
    assert "starts in h" in table[1] and two[-5] == "1"  # its wait, then when it finishes [and its band]


def test_epochs_of_a_dataset_are_its_samples_and_steps_are_the_same_at_every_size():
    epochs = run_main(*BASE, "--world-sizes", "1,8", "--epochs", "2", "--dataset-size", "500000")
    assert "time to finish 1,000,000 samples, 32 per device a step" in epochs.stdout
    steps = run_main(*BASE, "--world-sizes", "1,8", "--steps", "1000")
    assert "1,000 optimizer steps at every size" in steps.stdout
    one = next(line.split() for line in steps.stdout.split("time to finish")[1].splitlines()
               if line.split()[:1] == ["1"])
    assert float(one[3]) == pytest.approx(1000 * 0.1 / 3600, rel=1e-2)


def test_a_floor_no_size_reaches_is_said_not_refused():
    out = run_main(*BASE, "--world-sizes", "16,32", "--samples", "1000000", "--min-efficiency", "0.99")
    assert _answer(out, "largest whose efficiency band").startswith("no size asked keeps its band at or above 99%")


BAD = [
    ((*NOWORK, "--queue", "slurm"), "--queue: needs the run's work"),
    ((*NOWORK, "--queue-wait", "1=0"), "--queue-wait: needs the run's work"),
    ((*BASE, "--epochs", "2"), "--dataset-size: is needed with --epochs"),
    ((*NOWORK, "--dataset-size", "20"), "--epochs: is needed with --dataset-size"),
    ((*BASE, "--epochs", "0", "--dataset-size", "20"), "--epochs: must be a number above 0"),
    ((*BASE, "--samples", "10", "--steps", "5"), "--steps: sets the run's work, as --samples does"),
    ((*BASE, "--samples", "0"), "--samples: must be a whole number of 1 or more"),
    ((*BASE, "--samples", "10", "--min-efficiency", "1.5"), "--min-efficiency: must be above 0 and at most 1"),
    ((*BASE, "--samples", "10", "--queue", "slurm", "--partition=-x"), "--partition: must be a Slurm name"),
    ((*BASE, "--samples", "10", "--queue", "slurm", "--account", "a;rm -rf"), "--account: must be a Slurm name"),
    ((*BASE, "--samples", "10", "--queue", "slurm", "--time-limit", "1h"), "--time-limit: must be a Slurm time"),
    ((*BASE, "--samples", "10", "--queue", "pbs"), "--queue: invalid choice"),
    ((*BASE, "--samples", "10", "--queue-wait", "1=0,2=1", "--world-sizes", "1,4"),
     "--queue-wait: must give a wait for each world size and no other (no wait for 4; 2 not in --world-sizes)"),
    ((*BASE, "--samples", "10", "--partition", "p"), "--partition: does nothing without --queue"),
    ((*BASE, "--samples", "10", "--queue", "slurm", "--queue-wait", "1=0"), "--queue-wait: does nothing with --queue"),
    ((*NOWORK, "--min-efficiency", "0.5"), "--min-efficiency: does nothing without"),
    (("whatif", "--from", str(ROOT / "reports" / "examples" / "cost-cpu"), "--samples", "100"),
     "--samples: the time to finish is given on a cluster described"),
]


def _refused(out, words: str) -> None:
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert words in lines[0], lines[0]


@pytest.mark.parametrize("argv, words", BAD, ids=[words.split(":")[0] + str(n) for n, (_, words) in enumerate(BAD)])
def test_each_bad_input_is_one_line_and_exit_2(argv, words):
    _refused(run_main(*argv), words)


def test_no_sbatch_on_the_path_is_one_line(tmp_path):
    out = run_main(*BASE, "--samples", "1000", "--queue", "slurm", env={"PATH": str(tmp_path)})
    _refused(out, "--queue: slurm: no sbatch on PATH")


@settings(max_examples=30, deadline=None)
@given(st.text(alphabet="0123456789=,.-x ", min_size=1, max_size=12))
@example("--")  # argparse reads `--queue-wait=--` as no value at all, without calling the flag's type
def test_a_queue_wait_is_taken_or_refused_in_one_line(text):
    out = run_main(*BASE, "--samples", "1000", f"--queue-wait={text}")
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1 and "--queue-wait" in lines[0], out.stderr
    else:
        assert "finishes first, wait included" in out.stdout


def test_help_states_every_flag_s_default():
    import argparse

    from ddpbench.cli.program import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for action in sub.choices["whatif"]._actions:
        if action.option_strings and not isinstance(action, argparse._HelpAction):
            assert "default" in action.help, action.option_strings
