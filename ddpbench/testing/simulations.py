"""The simulations that hold the code's intervals to what they say, shared by the tests that assert them
(tests/unit/analysis/core/test_sequential.py, tests/unit/traces/test_reading.py) and the prose check that quotes
their figures (tests/examples/project/test_prose_figures.py): the same draws, from one place. Properties of the
code on seeded simulated data, not measurements of a machine."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import stats

from ddpbench.analysis.core.sequential import t_bound
from ddpbench.traces.compare import shift


class Sequences(NamedTuple):
    """Seeded normal rounds (sd 2) of a true ``mean``, ``trials`` sequences of ``looks`` looks: each look's error
    in standard errors, the confidence sequence's bound (:func:`.t_bound`) and a fixed-sample 95 % t interval's."""

    x: np.ndarray
    mean: float
    error: np.ndarray
    bound: np.ndarray
    fixed: np.ndarray

    def missed(self) -> float:
        """The share of sequences that exclude the true mean at any look."""
        return float((self.error > self.bound).any(axis=1).mean())

    def peeked(self) -> float:
        """The same for the fixed-sample interval read at every look (peeking)."""
        return float((self.error > self.fixed).any(axis=1).mean())


def sequences(trials: int = 4000, looks: int = 60, mean: float = 0.3, seed: int = 56) -> Sequences:
    """Optional stopping, as the A/B does it, on :class:`Sequences` of normal rounds."""
    rng = np.random.default_rng(seed)
    x = rng.normal(mean, 2.0, (trials, looks))
    n = np.arange(1, looks + 1)
    means = x.cumsum(axis=1) / n
    spread = np.sqrt(np.maximum((x * x).cumsum(axis=1) - n * means**2, 0) / np.maximum(n - 1, 1))
    with np.errstate(divide="ignore"):  # one value has no spread: its error is infinite, its bound too
        error = np.abs(means - mean) / (spread / np.sqrt(n))
    bound = np.array([t_bound(k) for k in n])
    fixed = np.array([stats.t.ppf(0.975, k - 1) if k > 1 else np.inf for k in n])
    return Sequences(x, mean, error, bound, fixed)


def shift_calls(draws: int = 400, steps: int = 12, seed: int = 7) -> tuple[float, float]:
    """The traces' before/after shift interval (:func:`ddpbench.traces.compare.shift`) on gamma steps: the share of
    ``draws`` pairs of runs shifted by 1 whose interval holds 1, and of identical pairs it calls different."""
    rng = np.random.default_rng(seed)
    covered = called = 0
    for _ in range(draws):
        a, b = rng.gamma(4.0, 1.0, steps), rng.gamma(4.0, 1.0, steps)
        _, low, high = shift(a, b + 1.0)
        covered += low <= 1.0 <= high
        _, low, high = shift(a, b)
        called += low > 0 or high < 0
    return covered / draws, called / draws
