"""The cost model of one results folder: the alpha-beta link fitted to its measurements (and the
links its experiment gives), what they project to larger clusters, and their check against the
measured jobs. The diagnosis quotes it and the report draws it; both read it from the folder
object (:attr:`ddpbench.analysis.folder.Measured.model`), which builds it once."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import pandas as pd

from ddpbench.analysis.models import costmodel, holdout
from ddpbench.analysis.models.measured import rank_spread


@dataclass(frozen=True)
class Model:
    """The cost model of one folder: the link fitted here, the given ones, and what they predict."""

    measured: costmodel.Link | None
    links: tuple[costmodel.Link, ...]
    projection: pd.DataFrame
    checks: pd.DataFrame  # predicted vs measured at the measured world sizes, per fitted link
    #: what was projected and checked (:func:`~ddpbench.analysis.models.costmodel.workloads`), derived once
    workloads: tuple[costmodel.Workload, ...] = ()
    #: each workload measured at three world sizes or more, its largest hidden and predicted from the rest
    #: (:func:`~ddpbench.analysis.models.holdout.checks`): how far the projection is drawn as checked
    holdout: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: what the projection projects on the link it measured, per network: (network, workload, link), the inputs
    #: ``whatif --from`` projects too
    projected: tuple[tuple[str, costmodel.Workload, costmodel.Link], ...] = ()

    def supported_to(self, workload: str) -> int | None:
        """The largest world size ``workload``'s projection is checked to (:func:`.holdout.supported_to`): the
        least over its checks; None where it was not checked."""
        mine = self.holdout[self.holdout["workload"] == workload] if len(self.holdout) else self.holdout
        return int(mine["supported_to"].min()) if len(mine) else None

    @property
    def primary_checks(self) -> pd.DataFrame:
        """The checks of the primary fitted link (the first) alone."""
        if not len(self.checks) or self.measured is None:
            return self.checks.iloc[0:0]
        return self.checks[self.checks["link"] == self.measured.name]

    @property
    def shown_projection(self) -> pd.DataFrame:
        """The projection the diagnosis puts in words: the primary fitted link (with the other extreme
        of its range, when it has one) and the given links, not the second fit."""
        measured = self.measured
        base = measured.name.replace(" (all bandwidth)", "") if measured is not None else None
        shown = [link.name for link in self.links if link.source == "experiment"
                 or (measured is not None and link.source == measured.source and link.name.startswith(base))]
        return self.projection[self.projection["link"].isin(shown)] if len(self.projection) else self.projection


def _with_spread(found: list, steps: pd.DataFrame | None) -> list:
    """Each workload with its ranks' step spread measured on its multi-rank job (0 where not measured)."""
    if steps is None:
        return found
    spreads = [rank_spread(steps, workload.job_key) for workload in found]
    return [replace(workload, rank_spread=0.0 if math.isnan(spread) else spread)
            for workload, spread in zip(found, spreads)]


def _emulated(summary: pd.DataFrame, ranks: pd.DataFrame, steps) -> tuple[tuple, pd.DataFrame, list, list]:
    """The links fitted on each emulated network (DDP's logged times of its jobs, :func:`.holdout.networks`), the
    projection of its workloads on them and their checks against its jobs: a network ddpbench shaped is projected
    as the one it measured."""
    links, frames, checks, pairs = [], [], [], []
    for network, frame in holdout.networks(summary):
        fitted = costmodel.fit_ddp_logs(frame) if network != "this machine" else None
        if fitted is None:
            continue
        named = [replace(link, name=f"{network}: {link.name.removeprefix('measured: ')}")
                 for link in costmodel.with_range([fitted])]
        links += named
        found = _with_spread(costmodel.workloads(frame, ranks), steps)
        frames.append(costmodel.projection(frame, ranks, named, found=found))
        checks.append(costmodel.predicted_vs_measured(frame, ranks, named[0], found=found))
        pairs += [(network, workload, named[0]) for workload in found]
    return tuple(links), pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(), checks, pairs


def cost_model(summary: pd.DataFrame, ranks: pd.DataFrame, collectives: pd.DataFrame, sweeps: pd.DataFrame,
               steps: pd.DataFrame | None = None) -> Model:
    """The model of a folder's tables: links fitted to its all_reduce micro-benchmarks and DDP's logs
    (:func:`ddpbench.analysis.models.costmodel.measured_links`, with their range) and given in its experiment,
    projected over the measured workloads and checked against the measured jobs. With ``steps``, each
    workload's ranks' step spread measured on its multi-rank job (:func:`.measured.rank_spread`): past the
    largest world size measured, the projected step waits longer for the slowest rank."""
    fitted = costmodel.measured_links(collectives, summary) if not summary.empty else []
    links = tuple(costmodel.with_range(fitted) + costmodel.given_links(sweeps))
    found = _with_spread(costmodel.workloads(summary, ranks), steps) if not summary.empty else []
    projection = (costmodel.projection(summary, ranks, list(links), found=found) if links and not summary.empty
                  else pd.DataFrame())
    emulated, projected, shaped, pairs = _emulated(summary, ranks, steps)
    pairs = [("this machine", workload, links[0]) for workload in found if links] + pairs
    links += emulated
    if len(projected):
        projection = pd.concat([projection, projected], ignore_index=True)
    checks = [c for c in (*(costmodel.predicted_vs_measured(summary, ranks, link, found=found) for link in fitted),
                          *shaped) if not c.empty]
    return Model(fitted[0] if fitted else None, links, projection,
                 pd.concat(checks, ignore_index=True) if checks else pd.DataFrame(), tuple(found),
                 holdout.checks(summary, ranks, collectives, steps) if not summary.empty else pd.DataFrame(),
                 tuple(pairs))
