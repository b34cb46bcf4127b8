"""A trace folder, answered: every job's ranks read (:mod:`ddpbench.traces.read`), checked, put
together (:mod:`ddpbench.traces.job`) and answered (:mod:`ddpbench.traces.answers`).

This is the one path every trace takes: a folder from anyone's cluster, and a ddpbench results
folder's own ``traces/``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ddpbench.traces import answers
from ddpbench.traces.job import bucket_layout, job_tables
from ddpbench.traces.read import Checked, check_job, jobs_in, read_on_ray, read_ranks


@dataclass
class TraceJob:
    """One job's traces, answered."""

    name: str
    world_size: int
    backend: str
    device: str
    notes: list
    steps: pd.DataFrame
    collectives: pd.DataFrame
    ranks: pd.DataFrame
    sizes: pd.DataFrame
    buckets: pd.DataFrame
    clock: dict
    budget: pd.DataFrame
    advice: list
    straggler: dict
    kernels: pd.DataFrame = field(default_factory=pd.DataFrame)
    files: list = field(default_factory=list)

    @property
    def sampled(self) -> bool:
        return len(self.ranks) < self.world_size


def answer(name: str, checked: Checked) -> TraceJob:
    tables = job_tables(checked)
    steps, coll = tables["steps"], tables["collectives"]
    budget = answers.budget(steps, len(checked.ranks), tables["clock"])
    buckets = bucket_layout(coll)
    notes = list(checked.notes)
    count = steps["step"].nunique() if len(steps) else 0
    if count < answers.MIN_STEPS:
        notes.append(f"{count} steps traced: too few for an interval (at least {answers.MIN_STEPS}), so no change is "
                     f"called for; trace {answers.MIN_STEPS} or more (torch.profiler.schedule(active=...))")
    if not tables["clock"]["aligned"] and len(checked.ranks) > 1 and not tables["clock"]["one_host"]:
        notes.append(f"the ranks ran {tables['clock']['why']}: their clocks are the hosts' own, not aligned")
    sampled = len(checked.ranks) < checked.world_size
    return TraceJob(name=name, world_size=checked.world_size, backend=checked.backend,
                    device=checked.ranks[0].device, notes=notes, steps=steps, collectives=coll,
                    ranks=tables["ranks"], sizes=tables["collective_sizes"], buckets=buckets, clock=tables["clock"],
                    budget=budget,
                    advice=answers.advice(budget, steps, buckets, tables["collective_sizes"], sampled),
                    straggler=answers.straggler(steps), kernels=tables["kernels"],
                    files=[t.path for t in checked.ranks])


def read_folder(folder: Path, workers: int | None = None, ray: str | None = None, progress=None) -> list[TraceJob]:
    """Every job in ``folder``, answered; one line (InputError) for what is not one job's traces."""
    jobs = jobs_in(folder)
    files = [f for job in jobs for f in job.files]
    tables = read_on_ray(files, ray, progress) if ray else read_ranks(files, workers, progress)
    out, at = [], 0
    for job in jobs:
        mine, at = tables[at:at + len(job.files)], at + len(job.files)
        out.append(answer(job.name, check_job(job, mine)))
    return out
