"""``python -m ddpbench history add|list`` against a real git repository: a sweep filed at the commit
it measured, with the commit's date; bad input in one line and exit 2 (git runs in a subprocess,
so these tests live here)."""

from __future__ import annotations

import subprocess

import pytest

from ddpbench.testing import ROOT, run_main

QUICK = ROOT / "reports" / "examples" / "quick-cpu"


def _git(repo, *args) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    """A training repository with two commits of known dates."""
    path = tmp_path / "train"
    path.mkdir()
    _git(path, "init", "-q")
    for n, date in ((1, "2026-11-01T10:00:00+00:00"), (2, "2026-11-02T10:00:00+00:00")):
        (path / "train.py").write_text(f"STEP = {n}\n")
        _git(path, "add", "train.py")
        subprocess.run(["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m",
                        f"step {n}"], check=True, env={"GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date,
                                                       "PATH": "/usr/bin:/bin"})
    return path


def test_a_sweep_is_filed_at_the_repository_s_head_and_listed(repo, tmp_path):
    store = tmp_path / "history"
    head = _git(repo, "rev-parse", "HEAD")
    done = run_main("history", "add", QUICK, "--store", store, "--repo", repo)
    assert done.returncode == 0, done.stderr
    assert "as entry 1 of machine" in done.stdout and f"at commit {head[:12]} (2026-11-02T10:00:00Z)" in \
        done.stdout.replace("+00:00", "Z")
    older = run_main("history", "add", QUICK, "--store", store, "--repo", repo, "--commit", "HEAD~1")
    assert older.returncode == 0 and _git(repo, "rev-parse", "HEAD~1")[:12] in older.stdout
    listed = run_main("history", "list", "--store", store)
    assert listed.returncode == 0 and "2 entries" in listed.stdout
    assert listed.stdout.index(head[:12]) < listed.stdout.index(_git(repo, "rev-parse", "HEAD~1")[:12])


def test_a_commit_named_by_its_message_is_filed_at_that_commit(repo, tmp_path):
    """``:/text`` (the youngest commit whose message matches) takes no ``^{commit}`` after it: git
    would read the suffix as part of the text, so it is resolved as it is."""
    done = run_main("history", "add", QUICK, "--store", tmp_path / "history", "--repo", repo, "--commit", ":/step 1")
    assert done.returncode == 0, done.stderr
    assert f"at commit {_git(repo, 'rev-parse', 'HEAD~1')[:12]}" in done.stdout
    missing = run_main("history", "add", QUICK, "--store", tmp_path / "history", "--repo", repo, "--commit", ":/step 9")
    assert missing.returncode == 2 and "':/step 9': no such revision in" in missing.stderr, missing.stderr


@pytest.mark.parametrize("case, words", [
    ("again", "filed already as"),
    ("no repository", "not a git repository"),
    ("unknown commit", "'no-such-branch': no such revision in"),
    ("no results", "no results.jsonl to file"),
    ("no store", "no such history store"),
    ("no verb", "required: VERB"),
])
def test_bad_input_is_one_line_and_exit_2(repo, tmp_path, case, words):
    store = tmp_path / "history"
    args = ["history", "add", QUICK, "--store", store, "--repo", repo]
    if case == "again":
        assert run_main(*args).returncode == 0
    elif case == "no repository":
        args[-1] = tmp_path
    elif case == "unknown commit":
        args += ["--commit", "no-such-branch"]
    elif case == "no results":
        args[2] = tmp_path
    elif case == "no store":
        args = ["history", "list", "--store", tmp_path / "nothing"]
    else:
        args = ["history"]
    done = run_main(*args)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and words in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


#: a value a user may type for a commit that is not one, and the reason given (ddpbench.sweep.revisions)
NOT_A_COMMIT = [
    ("--output={victim}", "no such revision"),
    ("--help", "no such revision"),
    ("-p", "no such revision"),
    ("HEAD^{{tree}}", "names a tree, not a commit"),
    ("HEAD:train.py", "names a blob, not a commit"),
    ("HEAD~1..HEAD", "names a range, not a commit"),
    ("HEAD~1...HEAD", "names a range, not a commit"),
    ("^HEAD", "names a range, not a commit"),
    ("HEAD^@", "names a range, not a commit"),
    ("HEAD^!", "names a range, not a commit"),
    ("HEAD\nHEAD~1", "holds a control character"),
    ("HEAD\r", "holds a control character"),
    ("", "empty value refused"),
    ("no-such-branch", "no such revision"),
    ("0" * 40, "no commit with this id in"),  # a full hash git passes through without looking it up
    ("HEAD:", "names a tree, not a commit"),
]


@pytest.mark.parametrize("value, words", NOT_A_COMMIT)
def test_a_commit_that_is_not_one_is_refused_with_its_reason_and_git_reads_no_option(repo, tmp_path, value, words):
    victim = tmp_path / "notes.txt"
    victim.write_text("mine\n")
    value = value.format(victim=victim)
    store = tmp_path / "history"
    done = run_main("history", "add", QUICK, "--store", store, "--repo", repo, f"--commit={value}")
    assert done.returncode == 2, done.stderr
    assert words in done.stderr and "--commit" in done.stderr and len(done.stderr.strip().splitlines()) == 1, \
        done.stderr
    assert victim.read_text() == "mine\n" and not store.exists()
    for flag in ("--good", "--bad"):  # bisect's revisions go through the same check
        other = "--bad" if flag == "--good" else "--good"
        refused = run_main("history", "bisect", "bench.toml", f"{flag}={value}", f"{other}=HEAD", "--repo", repo,
                           "--out", tmp_path / "bisect")
        assert refused.returncode == 2 and words in refused.stderr and flag in refused.stderr, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1 and victim.read_text() == "mine\n"


def test_a_results_file_of_random_bytes_is_one_warning_with_its_count_and_one_error(repo, tmp_path):
    """20 KB of random bytes: one warning counting its lines, not one a line, then why nothing was filed."""
    import random

    folder = tmp_path / "noise"
    folder.mkdir()
    data = random.Random(83).randbytes(20_000)
    (folder / "results.jsonl").write_bytes(data)
    lines = sum(1 for raw in data.split(b"\n") if raw.strip())
    done = run_main("history", "add", folder, "--store", tmp_path / "history", "--repo", repo)
    said = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(said) == 2, said
    assert said[0].startswith(f"warning: {folder / 'results.jsonl'}: {lines} damaged records skipped (lines "), said
    assert said[1].startswith("error: ") and "Traceback" not in done.stderr
