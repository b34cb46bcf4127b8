"""Before anything runs: which DDP bucket caps of an experiment will give the same buckets.

DDP packs gradients into buckets of at most ``bucket_cap_mb``, but never splits a tensor, so caps
below a model's largest tensors often give the very same buckets: such jobs are one setting
measured twice, not two settings. Nothing has run yet, so the layouts are predicted from the
model's tensor sizes by DDP's own assignment (:func:`ddpbench.strategies.ddp.predicted_buckets`,
which assumes gradients become ready in reverse registration order), and the warning says
"predicted"; the report judges by the layouts DDP recorded (:mod:`ddpbench.analysis.models.layouts`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ddpbench.experiment.spec import fields_but

#: what jobs alike in all but their bucket cap share: every field but the cap and how often they are measured
_SETTINGS = fields_but("bucket_cap_mb", roles=("measurement", "recovery"))


@dataclass(frozen=True)
class SameBuckets:
    """Jobs alike in all but their bucket cap whose caps are predicted to give one bucket layout."""

    model: str
    where: str  # world size, and the emulated network when there is one
    caps: tuple[float, ...]
    layout: tuple[int, ...]  # bytes per bucket, predicted

    def sentence(self) -> str:
        caps = ", ".join(f"{c:g}" for c in self.caps[:-1]) + f" and {self.caps[-1]:g} MB"
        sizes = ", ".join(f"{b / 1e6:.1f}" for b in self.layout[:6]) + (", ..." if len(self.layout) > 6 else "")
        return (f"{caps} are predicted to give DDP the same {len(self.layout)} bucket(s) for {self.model} at "
                f"{self.where} (predicted layout: [{sizes}] MB): those jobs are likely one setting, measured "
                f"{len(self.caps)} times")


def same_buckets(jobs) -> list[SameBuckets]:
    """Every set of two or more caps predicted to give the same buckets to otherwise identical DDP jobs."""
    from ddpbench.strategies.ddp import predicted_buckets
    from ddpbench.workloads.catalog import ProbeFailed, facts

    groups: dict[tuple, list] = {}
    for spec in jobs:
        if spec.strategy == "ddp" and spec.world_size > 1 and not spec.script:
            ident = tuple((k, getattr(spec, k)) for k in _SETTINGS)
            groups.setdefault(ident, []).append(spec)
    found = []
    for group in groups.values():
        caps = sorted({s.bucket_cap_mb for s in group})
        if len(caps) < 2:
            continue
        try:
            sizes = facts(group[0]).tensor_bytes
        except ProbeFailed:
            continue  # check_workloads names what is wrong with it
        by_layout: dict[tuple, list[float]] = {}
        for cap in caps:
            by_layout.setdefault(predicted_buckets(sizes, cap), []).append(cap)
        for layout, same in by_layout.items():
            if len(same) > 1:
                first = group[0]
                where = f"world size {first.world_size}" + (f" on {first.emulate_nodes} nodes x {first.link}"
                                                            if first.emulated else "")
                found.append(SameBuckets(first.model_label, where, tuple(same), layout))
    return found


def setting(spec) -> tuple:
    """What a job measures, with its bucket cap replaced by the buckets it is predicted to give, before
    it runs: two jobs with the same setting are one setting measured twice (a DDP job at world size 1,
    or whose model cannot be built here, keeps its cap)."""
    from ddpbench.strategies.ddp import predicted_buckets
    from ddpbench.workloads.catalog import ProbeFailed, facts

    rest = tuple((k, getattr(spec, k)) for k in _SETTINGS)
    if spec.strategy != "ddp" or spec.world_size < 2 or spec.script:
        return rest, spec.bucket_cap_mb
    try:
        return rest, predicted_buckets(facts(spec).tensor_bytes, spec.bucket_cap_mb)
    except ProbeFailed:
        return rest, spec.bucket_cap_mb


def distinct_settings(jobs) -> tuple[list, dict[str, str]]:
    """(the jobs to race, {key of a job left out: key of the earlier job with its buckets})."""
    first: dict[tuple, str] = {}
    same_as: dict[str, str] = {}
    for job in jobs:
        ident = setting(job)
        if ident in first:
            same_as[job.key] = first[ident]
        else:
            first[ident] = job.key
    return [j for j in jobs if j.key not in same_as], same_as
