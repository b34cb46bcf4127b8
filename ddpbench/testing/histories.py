"""History stores made for tests: a job at world sizes 1 and 2 filed at a run of commits, each
commit's launches drawn around a level the test sets (:mod:`ddpbench.results.history`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ddpbench.experiment.spec import spec_from_dict
from ddpbench.results.history import file_results
from ddpbench.testing.records import ENV, ResultsFolder, job, result_for


def commit_name(number: int) -> str:
    """Commit ``number``'s 40 hex digits, readable in its first seven."""
    return f"{number:07x}" + "c" * 33


def synthetic_history(root: Path, steps_ws1: Sequence[float | None], steps_ws2: Sequence[float | None],
                      launches: int = 3,
                      spread: float = 0.01, seed: int = 0) -> Path:
    """A store under ``root``: commit i runs ``launches`` launches of a world-size-1 job with steps
    around ``steps_ws1[i]`` ms and of its world-size-2 job around ``steps_ws2[i]``, each launch off
    by a normal ``spread`` (relative); a level of None: that job is not run at that commit. Commits are
    dated a day apart, filed in order."""
    rng = np.random.default_rng(seed)
    store = root / "store"
    for i, levels in enumerate(zip(steps_ws1, steps_ws2)):
        folder = ResultsFolder(root / f"results-{i}", env=ENV)
        for world, level in zip((1, 2), levels):
            if level is None:
                continue
            spec = job(world_size=world, repeats=launches)
            for repeat in range(launches):
                step = level * (1 + spread * rng.standard_normal())
                folder.launch(spec_from_dict(spec), repeat, result=result_for(spec, step, repeat=repeat))
        file_results(store, root / f"results-{i}", commit=commit_name(i),
                     commit_date=f"2026-10-{i + 1:02d}T12:00:00+00:00")
    return store
