"""A training repository for bisect's tests: a few commits of a tiny model module and an experiment
that trains it, one of them planting a slowdown (:func:`make_repository`).

The slowdown is a sleep in the model's forward, so the planted step is large and the same on every
launch: a test that asks bisect to find it depends on no machine's noise.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: the model module, as a user would write one: ``SLEEP_S`` and ``VERSION`` change from commit to commit
MODEL = '''"""A tiny model for a bisect test (commit {version})."""
import time

import torch
from torch import nn
from torch.utils.data import TensorDataset

from ddpbench import Workload

VERSION = {version}
SLEEP_S = {sleep_s!r}


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(16, 4)

    def forward(self, x):
        if SLEEP_S:
            time.sleep(SLEEP_S)
        return self.layer(x)


def make() -> Workload:
    data = TensorDataset(torch.randn(512, 16), torch.randint(0, 4, (512,)))
    return Workload(model=Tiny(), dataset=data, loss=nn.functional.cross_entropy, name="tiny")
'''

#: the experiment: world size 1 only, one thread, few steps, a few launches (five by default: Welch's test at
#: p < 0.001 needs t above 8.6 with three launches a side, 5 with five)
EXPERIMENT = """name = "tiny-bisect"
timeout_s = 60

[defaults]
model = "tinymodel:make"
backend = "gloo"
device = "cpu"
batch_size = 8
threads_per_rank = 1
warmup_steps = 1
steps = {steps}
repeats = {repeats}

[[grid]]
world_size = [1]
"""


@dataclass(frozen=True)
class Repository:
    """The repository made: its folder, its commits oldest first (full hashes), the experiment's path
    inside it, and the first commit that sleeps (``commits[slow_at]``)."""

    path: Path
    commits: tuple[str, ...]
    experiment: str
    slow_at: int

    @property
    def first_slow(self) -> str:
        return self.commits[self.slow_at]


def git(repo: Path, *args: str) -> str:
    """``git -C repo ARGS``'s output, stripped; CalledProcessError where it fails."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def make_repository(path: Path, commits: int = 6, slow_at: int = 3, sleep_s: float = 0.01, steps: int = 8,
                    repeats: int = 5) -> Repository:
    """A git repository at ``path`` of ``commits`` commits, each changing ``tinymodel.py``; from the
    commit ``slow_at`` (0-based) on, its forward sleeps ``sleep_s``. The experiment,
    ``bench/tiny.toml``, is there from the first commit."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    (path / "bench").mkdir(exist_ok=True)
    (path / "bench" / "tiny.toml").write_text(EXPERIMENT.format(steps=steps, repeats=repeats))
    made = []
    for n in range(commits):
        (path / "tinymodel.py").write_text(MODEL.format(version=n, sleep_s=sleep_s if n >= slow_at else 0.0))
        git(path, "add", "tinymodel.py", "bench/tiny.toml")
        date = f"2026-11-{n + 1:02d}T10:00:00+00:00"
        subprocess.run(["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m",
                        f"{'sleep in forward' if n == slow_at else 'tidy the model'} ({n})"], check=True,
                       capture_output=True, env={**os.environ, "GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date})
        made.append(git(path, "rev-parse", "HEAD"))
    return Repository(path=path, commits=tuple(made), experiment="bench/tiny.toml", slow_at=slow_at)
