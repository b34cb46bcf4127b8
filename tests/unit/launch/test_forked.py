"""Ranks forked from the warm server (ddpbench.launch.forked) start as new as a fresh interpreter:
one rank's threads, seeds, thread count, process group, environment and imports never reach the
next, and the server itself never holds any of them. Each rank reports its state at its start
(the probe below), and a rank that then dirties everything it can is followed by one that must
see none of it."""

import pytest

from ddpbench.experiment.collectives import CollectiveSpec
from ddpbench.experiment.spec import JobSpec
from ddpbench.launch import forked
from ddpbench.launch.forked import can_fork
from ddpbench.rank.devices import check_cuda_fork


def test_cpu_and_cuda_launches_are_forked():
    # a GPU rank too: the server never sets up the CUDA driver, each rank makes its own context
    assert can_fork(JobSpec(device="cpu")) and can_fork(JobSpec(device="cuda"))
    assert can_fork(CollectiveSpec(device="cpu")) and can_fork(CollectiveSpec(device="cuda"))
    assert not can_fork(JobSpec(device="mps"))


def test_a_gpu_rank_forked_from_a_process_with_cuda_set_up_fails_with_what_to_do(monkeypatch):
    import pytest
    import torch

    check_cuda_fork()  # this process set up no driver
    monkeypatch.setattr(torch.cuda, "_is_in_bad_fork", lambda: True)
    with pytest.raises(RuntimeError, match="DDPBENCH_FORK_SERVER=0"):
        check_cuda_fork()


def test_a_server_that_cannot_start_is_a_warning_and_nothing_is_forked(monkeypatch):
    """Its socket refused (a TMPDIR too long for one): a warning, and no fork is tried again, not even the
    warm-up child an A/B's side forks (which would raise the same OSError from multiprocessing)."""
    from multiprocessing import forkserver

    def refuse():
        raise OSError("AF_UNIX path too long")

    monkeypatch.setattr(forked, "_unavailable", False)
    monkeypatch.setattr(forkserver, "ensure_running", refuse)
    monkeypatch.setattr(forkserver._forkserver, "ensure_running", refuse)  # what a child's start calls
    with pytest.warns(RuntimeWarning, match="fork server could not start"):
        forked.wait_until_warm()
    assert not forked.enabled() and forked.start_server() is False
