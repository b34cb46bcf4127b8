"""ruff, as configured in pyproject.toml ([tool.ruff], import sorting on), finds nothing in the package,
its tests, its benchmarks or its scripts. ruff is the one process a unit test may start
(:func:`ddpbench.testing.one_process.ruff`: it has no Python API, and lints the four trees in a fraction of
a second), so the inner loop holds every tree to it."""

from __future__ import annotations

import pytest

from ddpbench.testing import ROOT
from ddpbench.testing.one_process import ruff

#: the trees ruff checks: the package, its tests, its benchmarks and its scripts
TREES = ("ddpbench", "tests", "benchmarks", "scripts")


def test_ruff_finds_nothing_in_the_package_tests_benchmarks_or_scripts():
    done = ruff(*TREES, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("tree", TREES)
def test_ruff_finds_a_planted_finding_in_each_tree(tree):
    """The check is not vacuous: an unused import, an over-long line and unsorted imports in a file
    of the tree (its text through stdin, under the repository's config and its excludes) each fail it."""
    planted = "import sys\nimport os\n\nx = '" + "a" * 130 + "'\n"
    done = ruff("--force-exclude", "--stdin-filename", f"{tree}/planted.py", cwd=ROOT, stdin=planted)
    assert done.returncode == 1, done.stdout + done.stderr
    assert all(code in done.stdout for code in ("F401", "E501", "I001")), done.stdout
