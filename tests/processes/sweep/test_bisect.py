"""``python -m ddpbench history bisect`` on a real git repository: six commits of a tiny model, the
fourth planting a 10 ms sleep in its forward. Bisect must name that commit from real sweeps, each in
a worktree, keep each commit's results folder and its log, file them into a history store, and
leave no worktree behind; bad revisions are refused in one line."""

from __future__ import annotations

import json

from ddpbench.results.history import entries
from ddpbench.testing import run_main
from ddpbench.testing.bisecting import git, make_repository


def test_bisect_names_the_planted_commit_and_leaves_no_worktree(tmp_path):
    repo = make_repository(tmp_path / "train", commits=6, slow_at=3, sleep_s=0.01)
    out, store = tmp_path / "bisect", tmp_path / "history"
    done = run_main("history", "bisect", repo.experiment, "--good", repo.commits[0], "--bad", "main",
                    "--repo", repo.path, "--out", out, "--store", store)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"first bad commit: {repo.first_slow} sleep in forward (3)" in done.stdout, done.stdout

    log = json.loads((out / "bisect.json").read_text())
    assert (log["status"], log["answer"], log["good"], log["bad"]) == ("found", repo.first_slow, repo.commits[0],
                                                                        repo.commits[-1])
    assert [c["sha"] for c in log["commits"]] == list(repo.commits)
    verdicts = {t["commit"]: t["verdict"] for t in log["tested"]}
    # good and bad, then the middle of 0..5 (2: good), then of 2..5 (3: the planted one)
    assert verdicts == {repo.commits[0]: "good", repo.commits[5]: "bad", repo.commits[2]: "good",
                        repo.commits[3]: "bad"}
    for tested in log["tested"]:
        # a commit measured again (a stalled launch on a busy machine) has a folder for each sweep
        name = f"{tested['index']}-{tested['commit'][:12]}"
        assert tested["folders"] == [name, *(f"{name}-{n}" for n in range(2, tested["sweeps"] + 1))]
        assert len(tested["launches"]) == 5 * tested["sweeps"]
        assert all((out / f / "results.jsonl").is_file() and (out / f"{f}.log").is_file() for f in tested["folders"])
        slow = tested["index"] >= repo.slow_at
        assert (tested["mean_ms"] > 10) == slow, tested  # the sleep is in every step of the slow commits
    assert log["change"]["low"] > 2 and log["key"] and "tinymodel:make" in log["label"]

    filed = entries(store)
    assert sorted(e.commit for e in filed) == sorted(c for t in log["tested"] for c in [t["commit"]] * t["sweeps"])
    assert all(e.commit_date for e in filed)
    assert len(git(repo.path, "worktree", "list", "--porcelain").split("\n\n")) == 1  # the main one alone

    for args, words in (((repo.commits[-1], repo.commits[0]), "is not an ancestor of"),
                        ((repo.commits[0], "no-such-rev"), "no such revision"),
                        ((repo.commits[0], "main"), "holds files already")):
        refused = run_main("history", "bisect", repo.experiment, "--good", args[0], "--bad", args[1],
                           "--repo", repo.path, "--out", out)
        assert refused.returncode == 2 and words in refused.stderr and len(refused.stderr.splitlines()) == 1, \
            refused.stderr
    refused = run_main("history", "bisect", "bench/none.toml", "--good", "HEAD~1", "--bad", "HEAD", "--repo", repo.path)
    assert refused.returncode == 2 and "bench/none.toml is not in the good commit" in refused.stderr, refused.stderr
