"""``python -m ddpbench ab`` on a real git repository: a tiny model whose second commit sleeps 10 ms in
its forward. The A/B of the two commits must call the job slower with the forward phase named, its
sides' launches must never overlap and come in both orders, every worktree must be gone after, and
bad input is one line. Ctrl-C or kill -9 keeps every finished launch and leaves no process behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from ddpbench.results.store import ResultStore
from ddpbench.testing import as_from_a_terminal, cli_command, run_cli, run_main
from ddpbench.testing.bisecting import git, make_repository
from ddpbench.testing.survivors import MARK, marked
from ddpbench.testing.sweeps import wait_for_runs


def launch_windows(folder) -> list[tuple[float, float]]:
    """(start, end) of each stored launch: its rank 0's fork to the end of its gather (epoch seconds)."""
    windows = []
    for record in ResultStore(folder).records():
        if record["kind"] == "run" and record.get("result"):
            timeline = record["result"]["timeline"]
            windows.append((timeline["process_start"], timeline["gather_done"]))
    return windows


def test_ab_of_two_commits_calls_the_planted_sleep_slower_interleaved_and_cleans_up(tmp_path):
    repo = make_repository(tmp_path / "train", commits=2, slow_at=1, sleep_s=0.01, steps=6)
    out = tmp_path / "ab"
    done = run_cli("ab", repo.commits[0], "main", repo.experiment, "--repo", repo.path, "--out", out,
                   "--seed", "5", "--max-rounds", "12", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    log = json.loads((out / "ab.json").read_text())
    assert [side["sha"] for side in log["sides"]] == list(repo.commits)
    (call,) = log["calls"]
    assert call["call"] == "slower" and call["low"] > 1.2 and call["phase"] == "forward_ms", call
    assert log["stopped"] == "every job decided" and 5 <= len(log["rounds"]) <= 12
    assert "slower" in done.stdout and "forward moved +" in done.stdout, done.stdout
    assert {tuple(r["order"]) for r in log["rounds"]} == {("A", "B"), ("B", "A")}  # seed 5 draws both

    a, b = launch_windows(out / "A"), launch_windows(out / "B")
    assert len(a) == len(b) == len(log["rounds"])
    assert not [(x, y) for x in a for y in b if x[0] < y[1] and y[0] < x[1]]  # no launch ran beside the other side's
    assert len(git(repo.path, "worktree", "list", "--porcelain").split("\n\n")) == 1  # the main one alone


def test_bad_sides_and_flags_are_one_line(tmp_path):
    """The first as a user meets it (a new process); the rest through the command's ``main()`` in this
    process, which asks git for the revisions all the same."""
    repo = make_repository(tmp_path / "train", commits=1, slow_at=5)
    for run, args, words in ((run_cli, ("missing.toml", "main"), "missing.toml is not a file"),
                             (run_main, ("main", "no-such-rev"), "no such revision"),
                             (run_main, ("main", "main", "bench/none.toml"), "bench/none.toml is not in BASE"),
                             (run_main, ("main", "main", "--budget", "0"), "--budget"),
                             (run_main, ("main", "main", "--same-within", "100"), "--same-within")):
        refused = run("ab", *args, "--repo", repo.path, "--out", tmp_path / "never", cwd=tmp_path)
        assert refused.returncode == 2 and words in refused.stderr and len(refused.stderr.splitlines()) == 1, \
            refused.stderr
    assert not (tmp_path / "never").exists()


def test_a_side_that_refuses_its_experiment_is_one_line_naming_the_side_and_its_log(tmp_path):
    """The sides read their experiments themselves: a file one side refuses ends the A/B with that side's
    line, exit 2, the other side stopped."""
    good = tmp_path / "good.toml"
    good.write_text('name = "t"\ntimeout_s = 60\n[defaults]\nmodel = "mlp"\nmodel_size = "xs"\nsteps = 2\n'
                    'warmup_steps = 1\nrepeats = 1\nthreads_per_rank = 1\n[[grid]]\nworld_size = [1]\n')
    bad = tmp_path / "bad.toml"
    bad.write_text(good.read_text().replace("world_size = [1]", 'world_size = ["two"]'))
    done = run_cli("ab", "good.toml", "bad.toml", "--out", "ab", cwd=tmp_path, timeout=180)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error")]
    assert done.returncode == 2 and errors == done.stderr.strip().splitlines()[-1:], done.stderr  # one line, last
    assert "side B (bad.toml) exited with code 2" in errors[0] and "world_size" in errors[0], done.stderr
    assert "ab/B.log" in errors[0] and "Traceback" not in done.stderr
    assert json.loads((tmp_path / "ab" / "ab.json").read_text())["rounds"] == []


def _start_ab(tmp_path, mark: str):
    repo = make_repository(tmp_path / "train", commits=2, slow_at=5, steps=30)  # two commits of the same speed
    out = tmp_path / "ab"
    ab = subprocess.Popen(cli_command("ab", repo.commits[0], "main", repo.experiment, "--repo", str(repo.path),
                                      "--out", str(out), "--max-rounds", "50", "--same-within", "0.1"),
                          cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, MARK: mark}, preexec_fn=_own_group)
    for side in ("A", "B"):  # a round of each stored
        wait_for_runs(out / side / "results.jsonl", 1)
    time.sleep(0.5)  # into a later round
    assert ab.poll() is None, ab.communicate()
    return repo, out, ab


def _own_group() -> None:
    as_from_a_terminal()
    os.setpgrp()  # a terminal's Ctrl-C reaches the whole foreground group: the A/B and its sides


@pytest.mark.parametrize("how", ["ctrl-c", "kill -9"])
def test_an_interrupted_ab_keeps_its_rounds_and_leaves_no_process_behind(tmp_path, how):
    mark = f"ab-{how}-{os.getpid()}"
    repo, out, ab = _start_ab(tmp_path, mark)
    try:
        if how == "ctrl-c":
            os.killpg(ab.pid, signal.SIGINT)
        else:
            ab.kill()
        ab.wait(timeout=60)
    finally:
        if ab.poll() is None:
            ab.kill()
    deadline = time.monotonic() + 20
    while marked(mark) and time.monotonic() < deadline:  # the sides and their ranks die with the A/B
        time.sleep(0.1)
    assert not marked(mark), [p.cmdline() for p in marked(mark)]
    assert launch_windows(out / "A") and launch_windows(out / "B")  # every finished launch is kept
    if how == "ctrl-c":
        assert ab.returncode == 130, ab.stderr.read()
        log = json.loads((out / "ab.json").read_text())
        assert log["rounds"] and len(log["sides"]) == 2
        assert len(git(repo.path, "worktree", "list", "--porcelain").split("\n\n")) == 1


def test_two_files_that_differ_in_one_jobs_bucket_compare_that_job_and_show_every_launch(tmp_path):
    """Issue 82: two experiment files alike but for the ws=2 job's bucket (25 MB against 50 MB). Both jobs
    are compared, the changed one labelled by what changed; each launch is shown as it ends, from the first
    round's first; the rounds are counted right; ab.json is strict JSON (null for the open interval)."""
    base = tmp_path / "base.toml"
    base.write_text('name = "t"\ntimeout_s = 60\n[defaults]\nmodel = "mlp"\nmodel_size = "xs"\nsteps = 4\n'
                    'warmup_steps = 1\nrepeats = 1\nthreads_per_rank = 1\n[[grid]]\nworld_size = [1]\n'
                    '[[grid]]\nworld_size = [2]\nbucket_cap_mb = [25]\n')
    (tmp_path / "candidate.toml").write_text(base.read_text().replace("bucket_cap_mb = [25]", "bucket_cap_mb = [50]"))
    done = run_cli("ab", "base.toml", "candidate.toml", "--out", "ab", "--max-rounds", "2", "--seed", "1",
                   cwd=tmp_path, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(": ")[0] for line in lines[1:3]] == ["  mlp-xs ws=1 bucket 25 MB",
                                                            "  mlp-xs ws=2 (bucket 25 MB -> 50 MB)"], done.stdout
    assert lines[0].startswith("A/B of candidate.toml (B) against base.toml (A) over 2 rounds, interleaved"), lines
    assert "over 2 rounds; no interval before the fifth round" in lines[2] and "nan" not in done.stdout.lower()
    log = json.loads((tmp_path / "ab" / "ab.json").read_text(), parse_constant=_refused)
    assert [call["change"] for call in log["calls"]] == ["", "bucket 25 MB -> 50 MB"] and log["unpaired"] == []
    assert log["calls"][1]["high"] is None and log["calls"][1]["rounds"] == 2
    errors = done.stderr.splitlines()
    shown = [n for n, line in enumerate(errors) if line.split()[:1] == ["ok"] and "round 1" in line]
    assert len(shown) == 4 and max(shown) < errors.index("  round 1: 0 of 2 jobs decided"), done.stderr


def _refused(constant: str):
    raise ValueError(f"{constant}: not JSON")


def _tiny_sides(tmp_path, steps: int = 2) -> None:
    """base.toml and candidate.toml: one ws=1 job of a tiny model each, a second or so a launch."""
    (tmp_path / "base.toml").write_text(
        f'name = "t"\ntimeout_s = 60\n[defaults]\nmodel = "mlp"\nmodel_size = "xs"\nsteps = {steps}\n'
        'warmup_steps = 1\nrepeats = 1\nthreads_per_rank = 1\n[[grid]]\nworld_size = [1]\n')
    (tmp_path / "candidate.toml").write_text((tmp_path / "base.toml").read_text())


def test_a_second_ab_into_one_out_is_refused_at_once_naming_the_first_which_completes(tmp_path):
    """Issue 83: the A/B holds its --out from before its sides start until ab.json is written, so a
    second A/B into it is refused at once in one line naming the first's pid, and the first is not
    disturbed (before, each side of each took the other's lock and both failed after 25 s)."""
    _tiny_sides(tmp_path, steps=30)
    argv = ("ab", "base.toml", "candidate.toml", "--out", "ab", "--max-rounds", "2", "--seed", "1")
    first = subprocess.Popen(cli_command(*argv), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        wait_for_runs(tmp_path / "ab" / "A" / "results.jsonl", 1)  # the first's rounds are under way
        started = time.monotonic()
        second = run_cli(*argv, cwd=tmp_path, timeout=120)
        took = time.monotonic() - started
        out, err = first.communicate(timeout=240)
    finally:
        if first.poll() is None:
            first.kill()
    assert second.returncode == 2 and len(second.stderr.splitlines()) == 1, second.stderr
    assert f"pid {first.pid}" in second.stderr and "in use by another writer (ab, " in second.stderr, second.stderr
    assert took < 20, took  # at once: no side of the second started
    assert first.returncode == 0, err
    log = json.loads((tmp_path / "ab" / "ab.json").read_text())
    assert len(log["rounds"]) == 2 and [side["given"] for side in log["sides"]] == ["base.toml", "candidate.toml"]


def test_a_users_file_in_a_sides_folder_is_refused_up_front_and_force_reaches_the_sides(tmp_path):
    """Issue 83: OUT/A holding a file of the user's is refused before anything starts, in one line
    naming it and --force (before: after the sides' start, in the side's words); with --force the
    sides are handed it, and the A/B runs (before: the side refused all the same)."""
    _tiny_sides(tmp_path)
    (tmp_path / "u2" / "A").mkdir(parents=True)
    (tmp_path / "u2" / "A" / "mine.txt").write_text("the user's\n")
    argv = ("ab", "base.toml", "candidate.toml", "--out", "u2", "--max-rounds", "1", "--seed", "1")
    refused = run_cli(*argv, cwd=tmp_path, timeout=120)
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert "--out" in refused.stderr and "'mine.txt'" in refused.stderr and "--force" in refused.stderr
    assert not (tmp_path / "u2" / "B").exists() and not (tmp_path / "u2" / "A.log").exists()  # nothing started
    forced = run_cli(*argv, "--force", cwd=tmp_path, timeout=240)
    assert forced.returncode == 0, forced.stderr
    assert len(json.loads((tmp_path / "u2" / "ab.json").read_text())["rounds"]) == 1
    assert (tmp_path / "u2" / "A" / "mine.txt").read_text() == "the user's\n"


@pytest.mark.parametrize("side, what", [("/dev/zero", "is a character device"), ("folder", "is a folder")])
def test_a_side_that_is_neither_an_experiment_file_nor_a_revision_says_what_it_is(tmp_path, side, what):
    """Issue 83: ``ab /dev/zero E2`` said "no such revision"; a path there that is no regular file and no
    revision is named for what it is, with what a side may be."""
    repo = make_repository(tmp_path / "train", commits=1, slow_at=5)
    (tmp_path / "folder").mkdir()
    refused = run_main("ab", side, "main", "--repo", repo.path, "--out", tmp_path / "never", cwd=tmp_path)
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert f"BASE: {side} {what}, not an experiment file nor a git revision" in refused.stderr, refused.stderr
    assert not (tmp_path / "never").exists()
