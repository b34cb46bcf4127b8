"""Before anything runs: does every job's workload build, and does its dataset hold a global batch?

The workloads that are not presets are built once each, in a child process
(:func:`ddpbench.workloads.catalog.probe`): the sweep process never imports a user's code.
"""

from __future__ import annotations

from ddpbench.errors import InputError
from ddpbench.experiment.overrides import flag_name
from ddpbench.workloads.catalog import PROBE_TIMEOUT_S, ProbeFailed, facts, probe
from ddpbench.workloads.registry import SIZED_MODELS


def check_workloads(jobs, source: str, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """One line naming the key (``model`` or ``model_args``) for the first job whose workload does
    not build (within ``timeout_s``: a sweep gives its experiment's), or whose dataset holds less
    than one global batch (a preset's is made to fit)."""
    jobs = [spec for spec in jobs if not spec.script]  # a script builds its own, when it runs
    probe(jobs, timeout_s)
    for spec in jobs:
        try:
            found = facts(spec)
        except ProbeFailed as err:
            raise InputError(source, _key(err.key, source), f"{spec.model_label}: {err}") from None
        if spec.model not in SIZED_MODELS and found.samples < spec.per_rank_batch * spec.world_size:
            raise InputError(source, _key("batch_size", source),
                             f"{spec.model_label}'s dataset holds {found.samples} samples, less "
                             f"than one global batch of {spec.per_rank_batch * spec.world_size} at world_size "
                             f"{spec.world_size}")


def _key(field: str, source: str) -> str:
    """A job field as the user gave it: the flag of ``run``, else the experiment file's key."""
    return flag_name(field) if source == "command line" else field
