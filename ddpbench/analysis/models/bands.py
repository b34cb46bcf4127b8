"""The band of a what-if prediction conditioned on what its user states: the compute, the gradients and the links.

The pooled band (:data:`.loso.BANDS`) spreads every held-out published error of a regime (one node, across
nodes) around every prediction alike. Those errors are not alike: in one node the model is too pessimistic for
convolutional nets, whose gradients cross the link in a small share of their compute, and too optimistic for
transformers trained in short steps, whose gradients take a larger share. The band here is conditioned on the
inputs a user states, through one figure, the **intensity**: the time the step's gradients take to cross the link
once at its nominal rate (the device's link in one node, the node's network across nodes), over the compute of an
optimizer step. Of the published rows it takes only those whose compute and links their sources state
(:func:`stated`; where a regime has fewer than :data:`MIN_ROWS` of them, every row of the regime, said so).

Its form: the held-out error (published - predicted, points) regressed on the logarithms of the intensity and of
the device count (:data:`FEATURES`, least squares), the band the regression's value plus the 5th and 95th
percentiles of its residuals. Checked leave-one-source-out (:func:`conditioned`): each source's band comes from a
regression and percentiles fitted to the other sources' rows alone. What ``whatif`` puts beside a prediction is
the same fitted to every source's rows (:func:`band_for`), read from :data:`REFERENCE`, the held-out errors and
features ``benchmarks/whatif_bands.py`` stores.

What is held out and what is not: the regressions and percentiles of each fold see no row of the source they
predict; the form (which rows, the intensity, the two features) was chosen on 2026-11-29 after comparing a few
forms on the held-out table of every source (the pooled band; the intensity alone; with the device count; with the
compute; fitted to the stated rows or to all), so the check holds out the fit, not the choice of form.
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from ddpbench.analysis.models import validation
from ddpbench.analysis.models.loso import BANDS, EFFICIENCY_QUANTITY, REGIMES, Band, regime, weighted_percentiles
from ddpbench.analysis.models.terms import GRAD_BYTES
from ddpbench.analysis.models.whatif import ddp_step
from ddpbench.analysis.models.wholenodes import largest

#: the reference rows whatif reads: each held-out published row's source, regime, devices, whether its compute and
#: links are stated, its intensity and its held-out error (written by benchmarks/whatif_bands.py)
REFERENCE = Path(__file__).with_name("band_reference.csv")
#: the inputs a row's source must state for its error to condition a band, by regime (:func:`.validation.assumed`)
STATED = {REGIMES[0]: ("system", "compute", "links in a node"),
          REGIMES[1]: ("system", "GPUs per node", "compute", "links in a node", "network", "transport")}
#: fewest stated rows a regime's band is fitted to; below it, every row of the regime
MIN_ROWS = 10
#: what the held-out error is regressed on (the logarithm of each)
FEATURES = ("intensity", "devices")
#: each regime's coverage measured leave-one-source-out over its stated rows (:func:`coverage`; a test holds the
#: two equal): what whatif says of the band it prints
COVERAGE = {REGIMES[0]: (0.872, 109), REGIMES[1]: (1.0, 4)}


def intensity(grad_bytes: float, compute_ms: float, link_gbit: float) -> float:
    """The ms ``grad_bytes`` take over a link of ``link_gbit`` at its nominal rate, over ``compute_ms``."""
    return grad_bytes * 8 / (link_gbit * 1e9) * 1e3 / compute_ms


def stated(row: dict) -> bool:
    """Whether a published row's source states every input :data:`STATED` names for its regime."""
    kind = regime(int(row["gpus"]), int(row["gpus_per_node"]))
    return not set(STATED[kind]) & set(validation.assumed(row))


def row_intensity(row: dict, systems: dict) -> float:
    """A published row's :func:`intensity`: its model's gradients in the dtype they travel in, over its optimizer
    step's compute (against one node: the node's published step stands in for it)."""
    accumulation = int(row.get("gradient_accumulation_steps") or 1)
    compute = validation.node_ms(row) if validation.against_node(row) else validation.compute_ms(row) * accumulation
    sizes, _ = validation.buckets(row)
    cluster = validation.cluster(row, systems)
    one_node = regime(int(row["gpus"]), cluster.gpus_per_node) == REGIMES[0]
    link = cluster.intra_gbit if one_node else cluster.inter_gbit
    return intensity(sum(sizes) * GRAD_BYTES[validation.grad_dtype(row)] / 4, compute, link)


def reference(table: pd.DataFrame) -> pd.DataFrame:
    """The held-out efficiency rows of ``table`` (:func:`.loso.held_out`'s) with whether each is :func:`stated` and
    its :func:`row_intensity`: :data:`REFERENCE`'s columns."""
    rows, systems = validation.load()
    part = table[table["quantity"] == EFFICIENCY_QUANTITY]
    return pd.DataFrame({"row": part["row"].to_numpy(), "source": part["source"].to_numpy(),
                         "regime": part["regime"].to_numpy(), "devices": part["gpus"].to_numpy(),
                         "stated": [stated(rows[int(i)]) for i in part["row"]],
                         "intensity": [row_intensity(rows[int(i)], systems) for i in part["row"]],
                         "published": part["published"].to_numpy(), "predicted": part["predicted"].to_numpy(),
                         "error_pp": part["error_pp"].to_numpy()})


def pool(rows: pd.DataFrame, kind: str) -> tuple[pd.DataFrame, bool]:
    """The rows of regime ``kind`` a band is fitted to: the stated ones, else (fewer than :data:`MIN_ROWS`) all;
    and whether they are the stated ones."""
    mine = rows[rows["regime"] == kind]
    chosen = mine[mine["stated"].astype(bool)]
    return (chosen, True) if len(chosen) >= MIN_ROWS else (mine, False)


def _design(intensities, devices) -> np.ndarray:
    return np.column_stack([np.ones(len(intensities)), np.log(np.asarray(intensities, dtype=float)),
                            np.log(np.asarray(devices, dtype=float))])


def fit(rows: pd.DataFrame) -> tuple[np.ndarray, float, float]:
    """The regression of (published - predicted) on :data:`FEATURES` over ``rows``, and its residuals' percentiles."""
    gap = -rows["error_pp"].to_numpy(dtype=float)
    design = _design(rows["intensity"], rows["devices"])
    coefficients = np.linalg.lstsq(design, gap, rcond=None)[0]
    # the pooled band's percentiles (.loso.BAND_PERCENTILES), each row weighing the same
    low, high = weighted_percentiles(gap - design @ coefficients, np.arange(len(rows)))
    return coefficients, low, high


def shift(coefficients: np.ndarray, intensity_: float, devices: int) -> float:
    return float((_design([intensity_], [devices]) @ coefficients)[0])


def conditioned(rows: pd.DataFrame, carried: bool = False) -> pd.DataFrame:
    """Leave-one-source-out: each stated row of ``rows`` (:func:`reference`'s) with its band (``low``, ``high``,
    the published efficiency's) fitted to the other sources' rows of its regime alone, and whether its published
    figure is inside it (``inside``). ``carried``: the regression carried past the intensities it was fitted to
    (what whatif does not do; the benchmark shows what it would give)."""
    found = []
    for source in sorted(set(rows["source"])):
        for kind in REGIMES:
            mine = rows[(rows["source"] == source) & (rows["regime"] == kind) & rows["stated"].astype(bool)]
            if mine.empty:
                continue
            rest = rows[rows["source"] != source]
            others, _ = pool(rest, kind)
            coefficients, low, high = fit(others)
            centre = mine["predicted"].to_numpy() + _design(mine["intensity"], mine["devices"]) @ coefficients
            # as whatif does: outside the intensities fitted to, the pooled band of the regime's other rows
            everyone = -rest[rest["regime"] == kind]["error_pp"].to_numpy()
            wide_low, wide_high = weighted_percentiles(everyone, np.arange(len(everyone)))
            inside = mine["intensity"].between(others["intensity"].min(), others["intensity"].max()).to_numpy() \
                | carried
            found.append(mine.assign(low=np.where(inside, centre + low, mine["predicted"] + wide_low),
                                     high=np.where(inside, centre + high, mine["predicted"] + wide_high),
                                     conditioned=inside))
    out = pd.concat(found).sort_values("row", ignore_index=True)
    out["inside"] = (out["published"] >= out["low"]) & (out["published"] <= out["high"])
    out["width"] = out["high"].clip(upper=100) - out["low"].clip(lower=0)  # as whatif shows it: 0 to 100 %
    return out


def coverage(checked: pd.DataFrame) -> dict[str, tuple[float, int]]:
    """Each regime's share of held-out rows inside their band and how many (:func:`conditioned`'s)."""
    return {kind: (round(float(part["inside"].mean()), 3), len(part))
            for kind in REGIMES if len(part := checked[checked["regime"] == kind])}


@cache
def stored() -> pd.DataFrame:
    """:data:`REFERENCE` as read."""
    return pd.read_csv(REFERENCE)


@cache
def _fitted(kind: str) -> tuple[np.ndarray, float, float, int, int, bool]:
    rows, chosen = pool(stored(), kind)
    coefficients, low, high = fit(rows)
    return coefficients, low, high, len(rows), rows["source"].nunique(), chosen


def band_for(devices: int, per_node: int, intensity_: float) -> tuple[Band, bool]:
    """The band of a prediction at ``devices`` devices, ``per_node`` a node, of a step of ``intensity_``
    (:func:`intensity`), fitted to every source's rows (:data:`REFERENCE`): the points it adds to the prediction,
    and whether it is conditioned. Outside the intensities of the rows it is fitted to, the regression is not
    carried past them: the pooled band of the regime (:data:`.loso.BANDS`), and False."""
    kind = regime(devices, per_node)
    coefficients, low, high, count, sources, _ = _fitted(kind)
    if not known(kind, intensity_):
        return BANDS[kind], False
    centre = shift(coefficients, intensity_, devices)
    return Band(centre + low, centre + high, COVERAGE[kind][0], count, sources), True


def known(kind: str, intensity_: float) -> bool:
    """Whether ``intensity_`` lies within the intensities of the rows regime ``kind``'s band is fitted to."""
    rows, _ = pool(stored(), kind)
    return bool(rows["intensity"].min() <= intensity_ <= rows["intensity"].max())


def band_at(work, cluster, devices: int) -> tuple[Band, bool]:
    """:func:`band_for` of a what-if step (:class:`.whatif.Work` on a :class:`.whatif.Cluster` at ``devices``)."""
    return band_for(devices, cluster.gpus_per_node, step_intensity(work, cluster, devices))


def largest_within(work, cluster, target: float, end: str, algorithm: str, costs, per: int) -> int:
    """The largest world size (whole nodes of ``per`` devices where above 1) whose efficiency plus its band's
    ``end`` ("low" or "high") still reaches ``target``: doubling until one misses, then bisection
    (:func:`.wholenodes.largest`); 1 where 2 miss (``per`` 1), 0 where one node does (``per`` above 1)."""
    def reaches(p: int) -> bool:
        found, _ = band_at(work, cluster, p)
        pp = found.low_pp if end == "low" else found.high_pp
        return 100 * ddp_step(work, p, cluster, algorithm, costs).efficiency + pp >= 100 * target

    return largest(reaches, per)


def step_intensity(work, cluster, devices: int) -> float:
    """:func:`intensity` of a what-if step (:class:`.whatif.Work` on a :class:`.whatif.Cluster` at ``devices``)."""
    one_node = regime(devices, cluster.gpus_per_node) == REGIMES[0]
    grad_bytes = sum(work.bucket_bytes) * GRAD_BYTES[work.grad_dtype] / 4
    compute = work.compute_ms * work.accumulation
    return intensity(grad_bytes, compute, cluster.intra_gbit if one_node else cluster.inter_gbit) \
        if compute > 0 else math.inf


def words() -> str:
    """What the band is, in one sentence for whatif's output."""
    said = []
    for kind in REGIMES:
        _, _, _, count, sources, chosen = _fitted(kind)
        share, held = COVERAGE[kind]
        said.append(f"{kind} from {count} held-out rows of {sources} sources"
                    + (" whose compute and links are stated" if chosen else " (too few state their compute and "
                       "links: every row)") + f", covering {share:.0%} of {held} held out by source")
    ranges = "; ".join(f"{kind} {rows['intensity'].min():.2g} to {rows['intensity'].max():.2g}"
                       for kind in REGIMES for rows in (pool(stored(), kind)[0],))
    return ("band: where published runs with the same intensity (the gradients' time on the link over the compute) "
            "and device count landed against the model, leave-one-source-out, 5th to 95th percentile; "
            + "; ".join(said) + f"; outside the intensities they span ({ranges}), the pooled band of every row of the "
            "regime (python benchmarks/whatif_bands.py)")
