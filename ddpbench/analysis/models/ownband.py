"""The band from the user's own measurement: where a results folder was measured at enough world sizes for its
hold-out check (:mod:`.holdout`: the largest hidden, predicted from the rest), the check's own error bounds the
projection's, and where that is narrower than the band of published scaling it is the band used.

The check says the model's step at the hidden size is within :data:`.holdout.TOLERANCE_PCT` of the measurement, or
inside its interval where that is wider; so the band on a step is the tolerance widened to the check's interval and
to its error, as shares of the predicted step, and the efficiency (the step alone over the step) is read through it.
It holds as far as the check supports the projection (its ``supported_to``); a check that did not hold gives none."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ddpbench.analysis.models.holdout import TOLERANCE_PCT


@dataclass(frozen=True)
class OwnBand:
    """The step's band as shares of the predicted step (``low`` below 0, ``high`` above), how far it holds, and the
    check it comes from, in words."""

    low: float
    high: float
    supported_to: int
    check: str

    def points(self, efficiency: float) -> tuple[float, float]:
        """The band of ``efficiency`` in points below and above it: the step's band read through step alone / step."""
        return 100 * (efficiency / (1 + self.high) - efficiency), 100 * (efficiency / (1 + self.low) - efficiency)

    def applies(self, devices: int) -> bool:
        """Whether the check supports a projection at ``devices``."""
        return 1 < devices <= self.supported_to


def own_band(checks: pd.DataFrame) -> OwnBand | None:
    """The band of a workload's hold-out checks (:func:`.holdout.checks`' rows of one workload on one network): the
    widest of their tolerances, intervals and errors; None where there is no check or one did not hold."""
    if checks is None or checks.empty or not checks["holds"].astype(bool).all():
        return None
    tol = TOLERANCE_PCT / 100
    low = min(-tol, *(checks["low_ms"] / checks["predicted_ms"] - 1), *(checks["measured_ms"] / checks["predicted_ms"]
                                                                          - 1))
    high = max(tol, *(checks["high_ms"] / checks["predicted_ms"] - 1), *(checks["measured_ms"] / checks["predicted_ms"]
                                                                          - 1))
    c = checks.iloc[0]
    said = (f"world size {int(c['hidden_world_size'])} hidden and predicted from {c['from_world_sizes']}, "
            f"{c['error_pct']:+.0f} %")
    return OwnBand(float(low), float(high), int(checks["supported_to"].min()), said)


def band_words(own: OwnBand | None, used: list[int], why: str = "") -> str:
    """Which band whatif used, in one line: the folder's own check's at ``used`` sizes, the published elsewhere."""
    if own is None:
        return ("band used: the published one (python -m ddpbench whatif --validate): your folder's own hold-out "
                f"check gives none ({why or 'no check that held'})")
    step = f"{100 * own.low:+.0f} to {100 * own.high:+.0f} % of the step"
    if not used:
        return (f"band used: the published one: your folder's own hold-out check ({own.check}: {step}, to "
                f"{own.supported_to} devices) is no narrower at any size it supports")
    return (f"band used: your folder's own hold-out check ({own.check}: {step}) at {', '.join(map(str, used))} "
            f"device(s), where it supports the projection (to {own.supported_to}) and is narrower than the published "
            "band; the published one elsewhere and for the largest size within the band")
