"""The git side of ``history bisect`` (:mod:`ddpbench.sweep.bisect`): the commits from good to bad,
checked, and one commit's sweep in a worktree of its own, removed after it however it ended."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ddpbench.errors import InputError
from ddpbench.sweep.revisions import commit as resolve
from ddpbench.sweep.revisions import git, toplevel
from ddpbench.sweep.revisions import said as _said


@dataclass(frozen=True)
class Commit:
    """A commit of the chain: its hash, its committer date (ISO 8601) and its subject."""

    sha: str
    date: str
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:7]


def chain(repo: Path, good: str, bad: str, experiment: str) -> tuple[Path, str, list[Commit]]:
    """(the repository's top folder, the experiment's path inside it, the commits good..bad with
    good first: the first-parent ancestry path). Refused in one line (:class:`InputError`): a folder
    that is no git repository, a rev that names no commit (:func:`ddpbench.sweep.revisions.commit`),
    good that is not an ancestor of bad, an experiment file that good or bad does not hold."""
    top = toplevel(repo)
    shas = {flag: resolve(top, rev, flag) for flag, rev in (("--good", good), ("--bad", bad))}
    if shas["--good"] == shas["--bad"]:
        raise InputError("command line", "--bad", f"{bad!r} is the good commit itself; give a later one")
    if git(top, "merge-base", "--is-ancestor", shas["--good"], shas["--bad"]).returncode != 0:
        raise InputError("command line", "--good", f"{good!r} is not an ancestor of {bad!r}: bisect searches the "
                         "commits from good to bad")
    path = inside_repository(top, experiment)
    for flag, sha in shas.items():
        if git(top, "cat-file", "-e", f"{sha}:{path}").returncode != 0:
            raise InputError("command line", "EXPERIMENT", f"{path} is not in the {flag[2:]} commit {sha[:12]}")
    done = git(top, "rev-list", "--first-parent", "--ancestry-path", "--reverse",
                f"{shas['--good']}..{shas['--bad']}")
    order = [shas["--good"], *done.stdout.split()]
    if done.returncode != 0 or order[-1] != shas["--bad"]:
        raise InputError("command line", "--bad", f"cannot list the commits from {good!r} to {bad!r}: {_said(done)}")
    done = git(top, "show", "-s", "--no-walk=unsorted", "--format=%H%x00%cI%x00%s", *order)
    found = {sha: Commit(sha, date, subject) for sha, date, subject in
             (line.split("\0", 2) for line in done.stdout.splitlines() if line.count("\0") == 2)}
    return top, path, [found.get(sha, Commit(sha, "", "")) for sha in order]


def inside_repository(top: Path, experiment: str) -> str:
    """The experiment's path inside the repository: as given, or made so from a path that exists here."""
    given = Path(experiment)
    here = given if given.is_absolute() else Path.cwd() / given
    if here.exists():
        try:
            return here.resolve().relative_to(top.resolve()).as_posix()
        except ValueError:
            if given.is_absolute():
                raise InputError("command line", "EXPERIMENT", f"{experiment} is not inside {top}") from None
    return given.as_posix()


def sweep_commit(top: Path, commit: Commit, experiment: str, folder: Path, scratch: Path) -> int:
    """Sweep ``experiment`` as ``commit`` has it, in a worktree of that commit, into ``folder``
    (its output into ``folder``.log); the sweep's exit code. The worktree is removed however the
    sweep ended."""
    tree = scratch / commit.sha[:12]
    done = git(top, "worktree", "add", "--detach", str(tree), commit.sha)
    if done.returncode != 0:
        raise InputError(f"--repo {top}", None, f"cannot make a worktree of {commit.short}: {_said(done)}")
    try:
        with open(folder.with_name(folder.name + ".log"), "w", encoding="utf-8") as log:
            proc = subprocess.Popen([sys.executable, "-m", "ddpbench", "sweep", experiment, "--out", str(folder),
                                     "--no-report"], cwd=tree, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)
            try:
                return proc.wait()
            except BaseException:
                _stop(proc)
                raise
    finally:
        if git(top, "worktree", "remove", "--force", str(tree)).returncode != 0:
            shutil.rmtree(tree, ignore_errors=True)
            git(top, "worktree", "prune")


def _stop(proc: subprocess.Popen) -> None:
    """End a sweep that bisect was stopped in: Ctrl-C reached it too, so give it a moment to stop
    its ranks; then SIGTERM (which a sweep takes as Ctrl-C), then SIGKILL."""
    for sig, wait_s in ((None, 5), (signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        if sig is not None:
            proc.send_signal(sig)
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue
