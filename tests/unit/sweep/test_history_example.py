"""The history example's training repository (benchmarks/history_example.py): at least 20
commits, one of which, and only one, changes what a training step computes; no commit changes a
job's settings, so every commit measures the same two series."""

from __future__ import annotations

import re

from ddpbench.testing.scripts import load_benchmark

example = load_benchmark("history_example")


def _forward(model_py: str) -> str:
    return model_py[model_py.index("    def forward"):model_py.index("\ndef make")]


def test_one_commit_changes_the_step_and_none_changes_a_job():
    states = [files for _, files in example.history(planted=14, commits=22)]
    assert len(states) == 22
    changed = [i for i in range(1, 22) if _forward(states[i]["tinytrain/model.py"]) !=
               _forward(states[i - 1]["tinytrain/model.py"])]
    assert changed == [14]
    jobs = {re.sub(r"(?m)^#.*\n", "", s["bench.toml"]) for s in states}  # comments aside
    assert len(jobs) == 1
    subjects = [subject for subject, _ in example.history(planted=14, commits=22)]
    assert len(set(subjects)) == 22 and "spectral norm" in subjects[14]
    assert all(states[i] != states[i - 1] for i in range(1, 22))  # every commit changes something
