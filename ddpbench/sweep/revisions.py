"""The git revisions a user names (``history add --commit``, ``history bisect --good`` and ``--bad``),
checked in this one place before anything is filed or swept.

A value typed by a user never reaches git where git reads options: it is resolved by ``git
rev-parse --verify --end-of-options REV^{commit}`` (or ``REV`` alone where that is a commit, as
``:/text`` is: git reads a suffix after it as part of the text) and ``git cat-file -t``, and only
the full hash that comes back is handed to any other git command. A value that is not one commit
is refused with one line (:class:`~ddpbench.errors.InputError`, exit 2) that says why:

* an empty value (an unset variable in CI): ``empty value refused``;
* a control character (a newline pasted in): refused before git sees it;
* a folder that is no git repository: ``not a git repository`` (:class:`NotARepository`);
* a range (``A..B``, ``A...B``, ``^A``, ``A^@``, ``A^!``, ``A^-``): ``names a range, not a commit``;
* an object that is not a commit (``HEAD^{tree}``, ``HEAD:file``): ``names a tree, not a commit``;
* a full hash of no object in the repository (40 zeros): ``no commit with this id``;
* anything else git does not know, ``--output=FILE`` too: ``no such revision``.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from ddpbench.errors import InputError

#: what git takes as a set of commits rather than one
RANGE = re.compile(r"\.\.|^\^|\^[@!]$|\^-\d*$")


class NotARepository(InputError):
    """The folder given as the repository is not in a git repository (or git cannot run there)."""


def git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """``git -C repo ARGS``, its output captured; one line (:class:`InputError`) where git cannot run.
    Callers pass values a user typed only after ``--end-of-options`` or ``--``."""
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=120,
                              check=False)
    except (OSError, subprocess.SubprocessError) as err:
        raise NotARepository("--repo", None, f"cannot run git in {repo}: {err}") from None


def said(done: subprocess.CompletedProcess) -> str:
    """git's last line on stderr."""
    return (done.stderr.strip().splitlines() or ["git failed"])[-1]


def toplevel(repo: Path) -> Path:
    """The top folder of the git repository ``repo`` is in; :class:`NotARepository` where it is in none."""
    done = git(repo, "rev-parse", "--show-toplevel")
    if done.returncode != 0 or not done.stdout.strip():
        raise NotARepository(f"--repo {repo}", None, f"not a git repository ({said(done)})")
    return Path(done.stdout.strip())


def check_value(rev: str, flag: str) -> None:
    """What is refused before git is asked: an empty value, a control character."""
    if rev == "":
        raise InputError("command line", flag, "empty value refused; give a commit (a hash, a branch, a tag, HEAD~1)")
    if not rev.isprintable():
        raise InputError("command line", flag, f"{rev!r} holds a control character; give one commit")


def commit(repo: Path, rev: str, flag: str) -> str:
    """The full hash of the one commit ``rev`` names in the git repository ``repo``; one line
    (:class:`InputError`, module docstring) when it names none."""
    check_value(rev, flag)
    top = toplevel(repo)
    done = git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
    sha = done.stdout.strip()
    if done.returncode == 0 and re.fullmatch(r"[0-9a-f]{40,64}", sha):
        return sha
    if RANGE.search(rev):
        raise InputError("command line", flag, f"{rev!r} names a range, not a commit; give one commit")
    found = git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", rev)
    sha = found.stdout.strip()
    if found.returncode == 0 and re.fullmatch(r"[0-9a-f]{40,64}", sha):
        kind = git(top, "cat-file", "-t", sha).stdout.strip()
        if kind == "commit":  # ``:/text`` takes no ``^{commit}`` after it (git reads it as part of the text)
            return sha
        if not kind:  # a full hash git passes through without looking
            raise InputError("command line", flag, f"{rev!r}: no commit with this id in {top}")
        raise InputError("command line", flag, f"{rev!r} names a {kind}, not a commit; give a commit")
    raise InputError("command line", flag, f"{rev!r}: no such revision in {top}")


def commit_date(repo: Path, sha: str) -> str | None:
    """A commit's committer date (ISO 8601, git's ``%cI``) by its full hash; None where git says none."""
    done = git(repo, "show", "-s", "--format=%cI", sha, "--")
    return (done.stdout.strip() or None) if done.returncode == 0 else None
