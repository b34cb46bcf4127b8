"""What whatif asks Slurm (ddpbench.launch.queue): every user value one argv element of the form --flag=VALUE,
checked first; Slurm's time limits read in every form it writes."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ddpbench.errors import InputError
from ddpbench.launch.queue import NAME, limit_minutes, sbatch_argv, slurm_name


@pytest.mark.parametrize("text, minutes", [("90", 90), ("1:30", 2), ("1:30:00", 90), ("2-12", 3600),
                                           ("1-0:30", 1470), ("0-0:0:30", 1), ("0:0:59", 1)])
def test_slurm_s_time_limits(text, minutes):
    assert limit_minutes(text) == minutes


@pytest.mark.parametrize("text", ["", "0", "1h", "-5", "1:2:3:4", "1-", "a-1", "1 2"])
def test_a_limit_slurm_does_not_write_is_refused(text):
    with pytest.raises(InputError, match="--time-limit"):
        limit_minutes(text)


def test_the_argv_asks_one_task_a_device_and_puts_every_value_after_an_equals_sign():
    argv = sbatch_argv(16, 2, 90, "gpu", "gpu-a100", "proj_1")
    assert argv[:2] == ["sbatch", "--test-only"] and argv[-1] == "--wrap=true"
    assert {"--nodes=2", "--ntasks=16", "--ntasks-per-node=8", "--gpus-per-node=8", "--time=90",
            "--partition=gpu-a100", "--account=proj_1"} <= set(argv)
    cpu = sbatch_argv(3, 2, 5, "cpu")
    assert not any(a.startswith(("--gpus", "--partition", "--account")) for a in cpu)
    assert all(a.startswith("--") and "=" in a for a in cpu[2:])


@given(st.text(min_size=1, max_size=70))
def test_a_name_is_taken_only_where_slurm_could_have_it(text):
    if NAME.fullmatch(text):
        assert slurm_name(text, "--partition") == text and not text.startswith("-")
    else:
        with pytest.raises(InputError, match="--partition: must be a Slurm name"):
            slurm_name(text, "--partition")
