"""What a run checks of its experiment against this machine before anything runs, for ``sweep``,
``run`` and ``tune`` alike: that it can emulate the nodes the jobs ask for (else one line naming
the flag or the key), and a warning for bucket caps that will give DDP the same buckets."""

from __future__ import annotations

import sys

from ddpbench.errors import InputError


def warn_same_buckets(experiment) -> None:
    """A warning line (stderr) for each set of bucket caps that will give the same DDP buckets."""
    from ddpbench.experiment.buckets import same_buckets

    key = "--bucket-cap-mb" if experiment.source == "command line" else "bucket_cap_mb"
    for found in same_buckets(experiment.jobs):
        print(f"warning: {experiment.source}: {key}: {found.sentence()}", file=sys.stderr)


def check_can_emulate(experiment, from_flags: bool) -> None:
    """Before anything runs: whether this machine can emulate the nodes the jobs ask for; the error
    names the flag when the flags asked for them, else the experiment file's key."""
    from ddpbench.launch.emulate import emulation_problem

    emulated = [spec for spec in experiment.jobs if spec.emulated]
    if not emulated:
        return
    delay = any(spec.link_delay_ms for spec in emulated)
    problem = emulation_problem(delay=delay)
    if problem:
        netem = delay and "netem" in problem
        if experiment.source == "command line" or from_flags:
            raise InputError("command line", "--link-delay-ms" if netem else "--emulate-nodes", problem)
        raise InputError(experiment.source, "link_delay_ms" if netem else "emulate_nodes", problem)
