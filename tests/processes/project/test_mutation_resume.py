"""``benchmarks/mutation.py --resume`` brings a group's copy to HEAD where only its tests moved (``brought_up``),
on a real git repository: tests written while a group ran then count at its end. Its package and settings, and
mutmut's results, stay as they were; a copy whose package changed, or whose tests lost a file, is not moved."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ddpbench.testing.scripts import load_benchmark

mutation = load_benchmark("mutation")
GROUP = {"modules": ["ddpbench/m.py"], "tests": ["tests"]}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def commit(repo: Path, files: dict[str, str | None], message: str) -> str:
    """``files`` written (None: deleted) and committed; the short commit."""
    for name, text in files.items():
        path = repo / name
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)
    return git(repo, "rev-parse", "--short", "HEAD")


def test_a_copy_whose_tests_alone_moved_is_brought_to_head_and_one_whose_package_moved_is_not(tmp_path):
    repo, work = tmp_path / "repo", tmp_path / "work"
    repo.mkdir()
    git(repo, "init", "-q")
    first = commit(repo, {"ddpbench/m.py": "X = 1\n", "pyproject.toml": "[tool.mutmut]\n", "README.md": "a\n",
                          "ddpbench/testing/h.py": "H = 1\n", "tests/test_a.py": "def test_a(): pass\n"}, "first")
    copy, at = mutation.staged(repo, work / "g", GROUP)
    assert at == first and "only_mutate" in (copy / "pyproject.toml").read_text()
    (copy / "mutants" / "ddpbench" / "testing").mkdir(parents=True)
    (copy / "mutants" / "results").write_text("mutmut's\n")
    (copy / "mutants" / "ddpbench" / "testing" / "h.py").write_text("H = 1\n")

    # tests and the package's test support changed, and the rest, the package not: brought to HEAD, its package,
    # settings and results kept; mutmut's copy of the test support taken away, for mutmut to copy it anew
    second = commit(repo, {"tests/test_b.py": "def test_b(): pass\n", "README.md": "b\n",
                           "ddpbench/testing/h.py": "H = 2\n"}, "tests")
    assert mutation.staged(repo, work / "g", GROUP) == (copy, second)
    assert (work / f"g.{mutation.COMMIT}").read_text() == second + "\n"
    assert (copy / "tests" / "test_b.py").is_file() and (copy / "README.md").read_text() == "b\n"
    assert "only_mutate" in (copy / "pyproject.toml").read_text()
    assert (copy / "ddpbench" / "testing" / "h.py").read_text() == "H = 2\n"
    assert not (copy / "mutants" / "ddpbench" / "testing").exists()
    assert (copy / "mutants" / "results").read_text() == "mutmut's\n"

    # the package changed since: the copy stays where it was, its tests too
    commit(repo, {"ddpbench/m.py": "X = 2\n", "tests/test_c.py": "def test_c(): pass\n"}, "package")
    assert mutation.staged(repo, work / "g", GROUP) == (copy, second)
    assert not (copy / "tests" / "test_c.py").exists() and (copy / "ddpbench" / "m.py").read_text() == "X = 1\n"


def test_a_copy_whose_tests_lost_a_file_stays_at_its_commit(tmp_path):
    """A mutant a deleted (or renamed) test killed may survive without it: the copy is not moved."""
    repo, work = tmp_path / "repo", tmp_path / "work"
    repo.mkdir()
    git(repo, "init", "-q")
    first = commit(repo, {"ddpbench/m.py": "X = 1\n", "pyproject.toml": "[tool.mutmut]\n",
                          "tests/test_a.py": "def test_a(): pass\n", "tests/test_b.py": "def test_b(): pass\n"},
                   "first")
    copy, _ = mutation.staged(repo, work / "g", GROUP)
    commit(repo, {"tests/test_a.py": None, "tests/test_d.py": "def test_d(): pass\n"}, "a test deleted")
    assert mutation.staged(repo, work / "g", GROUP) == (copy, first)
    assert (copy / "tests" / "test_a.py").is_file() and not (copy / "tests" / "test_d.py").exists()
