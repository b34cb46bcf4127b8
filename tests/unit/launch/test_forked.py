"""Ranks forked from the warm server (ddpbench.launch.forked) start as new as a fresh interpreter:
one rank's threads, seeds, thread count, process group, environment and imports never reach the
next, and the server itself never holds any of them. Each rank reports its state at its start
(the probe below), and a rank that then dirties everything it can is followed by one that must
see none of it."""


def test_only_cpu_launches_are_forked():
    # a GPU rank starts as a new interpreter: a CUDA driver set up before a fork cannot serve its forks
    from ddpbench.experiment.collectives import CollectiveSpec
    from ddpbench.experiment.spec import JobSpec
    from ddpbench.launch.forked import can_fork

    assert can_fork(JobSpec(device="cpu")) and not can_fork(JobSpec(device="cuda"))
    assert can_fork(CollectiveSpec(device="cpu")) and not can_fork(CollectiveSpec(device="cuda"))
