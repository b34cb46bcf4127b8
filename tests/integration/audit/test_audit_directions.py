"""Direction words against the re-derived figures (ddpbench.audit.directions), as ``report --check`` says
them: "N % faster/slower than" by bucket cap or beside "A ms against B ms", "faster/slower: Nx the
throughput", "slower than ...: +N %", a rank "N % slower than the other ranks", "rises/falls from A to B"."""

from __future__ import annotations

import copy
import warnings

import pytest

from ddpbench.audit import Claim, derive
from ddpbench.audit.directions import check_directions
from ddpbench.testing import ROOT

#: quick-cpu's world-size-2 jobs' mean steps: 81.3 ms at 1 MB, 88.5 ms at 2 MB, 82.7 ms at 25 MB (39.1 ms at ws=1)
AT_2MB = "cfc7d897e984"


@pytest.fixture(scope="module")
def quick():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return derive(ROOT / "reports" / "examples" / "quick-cpu")


def directions(fig, text, keys=None) -> list[tuple[str, str]]:
    keys = list(fig.jobs.index) if keys is None else keys
    return [(p.kind, p.expected) for p in check_directions(fig, Claim(text), keys)]


@pytest.mark.parametrize("text", [
    "1 MB, 1.6 % faster per step than the default 25 MB",
    "bucket 25 MB, 6.6 % faster than 2 MB",
    "best of 2 MB: 1 MB, 1.6 % faster than 25 MB",  # the subject is what follows the last colon
    "2 MB, 8.9 % slower than 1 MB",
    "1 and 25 MB, 7 % faster than 2 MB",  # both faster than 2 MB
    "the sweep measured 81.3 ms against this job's 82.7 ms, 1.7 % faster",
    "82.7 ms vs 81.3 ms, 1.7 % slower",
    "81.3 ms against 81.3 ms, 0.0 % faster",  # no difference quoted: no side to take
    "faster: 1.02x the throughput",
    "slower: 0.98x the throughput",
    "faster or slower: 0.5x the throughput",
    "faster: 1.00x the throughput",  # no change: no side to take
    "slower than raw DDP: +121.9 % on the mean step",
    "faster than raw DDP: -2.8 % on the mean step",
    "slower than raw DDP: +0.0 % on the mean step",
    "is not significantly slower than raw DDP: -2.8 %",
    "rank 1 computes 12 % slower than the other ranks",
    "rank 1 computes -3 % faster than the other ranks",
    "the serial fraction rises from 0.10 to 0.20",
    "the serial fraction falls from 0.20 to 0.10",
    "the serial fraction rises from 0.10 to 0.10",
])
def test_a_direction_the_figures_bear_out_passes(quick, text):
    assert directions(quick, text) == []


@pytest.mark.parametrize("text, expected", [
    ("1 MB, 1.6 % slower per step than the default 25 MB", "says slower, but its mean step is 81.3 ms against 82.7 ms"),
    ("bucket 25 MB, 6.6 % slower than 2 MB", "says slower, but its mean step is 82.7 ms against 88.5 ms"),
    ("2 MB, 8.9 % faster than 1 MB", "says faster, but its mean step is 88.5 ms against 81.3 ms"),
    ("1 and 25 MB, 7 % slower than 2 MB", "says slower, but its mean step is 82.0 ms against 88.5 ms"),
    ("the sweep measured 82.7 ms against this job's 81.3 ms, 1.7 % faster",
     "says faster, but quotes 82.7 ms against 81.3 ms"),
    ("81.3 ms vs 82.7 ms, 1.7 % slower", "says slower, but quotes 81.3 ms against 82.7 ms"),
    ("faster: 0.98x the throughput", "says faster with 0.98x the throughput"),
    ("slower: 1.02x the throughput", "says slower with 1.02x the throughput"),
    ("slower than raw DDP: -2.8 % on the mean step", "says slower with a step change of -2.8 %"),
    ("faster than raw DDP: +121.9 % on the mean step", "says faster with a step change of +121.9 %"),
    ("rank 1 computes 12 % faster than the other ranks",
     "a rank that computes longer than the others is slower, not faster"),
    ("rank 1 computes -3 % slower than the other ranks",
     "a rank that computes longer than the others is slower, not slower"),
    ("the serial fraction falls from 0.10 to 0.20", "says falls from 0.1 to 0.2"),
    ("the serial fraction rises from 0.20 to 0.10", "says rises from 0.2 to 0.1"),
])
def test_a_direction_the_figures_contradict_is_a_problem(quick, text, expected):
    assert directions(quick, text) == [("direction", expected)]


def test_caps_none_of_the_jobs_ran_are_a_job_problem(quick):
    assert directions(quick, "3 MB, 2 % faster than the default 25 MB") == [
        ("job", "compares bucket caps 3 MB that none of its jobs ran")]
    # a cap none ran beside one that did: the comparison is not made (1 MB is faster than 25 MB, not slower)
    assert directions(quick, "1 and 3 MB, 2 % slower than 25 MB") == [
        ("job", "compares bucket caps 3 MB that none of its jobs ran")]
    assert directions(quick, "1 MB, 2 % faster than 3 and 7.5 MB") == [
        ("job", "compares bucket caps 3, 7.5 MB that none of its jobs ran")]
    # the one-rank job's 25 MB counts for no comparison of caps
    two = [k for k in quick.jobs.index if quick.rec(k)["bucket_cap_mb"] != 25.0]
    assert directions(quick, "1 MB, 2 % faster than the default 25 MB", two) == [
        ("job", "compares bucket caps 25 MB that none of its jobs ran")]


def test_a_cap_on_both_sides_or_of_no_job_judges_nothing(quick):
    assert directions(quick, "1 MB, 2 % slower than 1 and 25 MB") == []
    one = [k for k in quick.jobs.index if quick.rec(k)["world_size"] == 1]
    assert directions(quick, "25 MB, 2 % slower than 25 MB", one) == []


def test_caps_are_compared_within_runs_alike_but_for_the_cap(quick):
    """The 2 MB job moved to another strategy at 1 MB: 1 MB against 25 MB is DDP's 81.3 against 82.7 ms, never
    pooled with the other strategy's 88.5 ms."""
    fig = copy.deepcopy(quick)
    fig.jobs.at[AT_2MB, "strategy"], fig.jobs.at[AT_2MB, "bucket_cap_mb"] = "fsdp", 1.0
    fig.memo.clear()
    assert directions(fig, "1 MB, 1.6 % faster than 25 MB") == []
    assert directions(fig, "1 MB, 1.6 % slower than 25 MB") == [
        ("direction", "says slower, but its mean step is 81.3 ms against 82.7 ms")]


def test_one_rank_jobs_are_no_comparison_of_caps(quick):
    """A second one-rank job at 1 MB (88.5 ms against the one-rank 25 MB's 39.1): one rank has no buckets to
    compare, so 1 MB is still faster than 25 MB (the two-rank jobs')."""
    fig = copy.deepcopy(quick)
    fig.jobs.at[AT_2MB, "world_size"], fig.jobs.at[AT_2MB, "bucket_cap_mb"] = 1, 1.0
    fig.memo.clear()
    assert directions(fig, "1 MB, 1.6 % slower than 25 MB") == [
        ("direction", "says slower, but its mean step is 81.3 ms against 82.7 ms")]


def test_caps_no_job_ran_at_one_rank_alone_judge_nothing(quick):
    one = [k for k in quick.jobs.index if quick.rec(k)["world_size"] == 1]
    assert directions(quick, "1 MB, 2 % slower than 3 MB", one) == []


@pytest.mark.parametrize("text, expected", [
    ("1 MB, 1.6 % slower per step than the default 25 MB",
     "direction: J: says slower, but its mean step is 81.3 ms against 82.7 ms"),
    ("82.7 ms against 81.3 ms, 1.7 % faster", "direction: J: says faster, but quotes 82.7 ms against 81.3 ms"),
    ("faster: 0.98x the throughput", "direction: J: says faster with 0.98x the throughput"),
    ("slower than raw DDP: -2.8 % on the mean step", "direction: J: says slower with a step change of -2.8 %"),
    ("rank 1 computes 12 % faster than the other ranks",
     "direction: J: a rank that computes longer than the others is slower, not faster"),
    ("the serial fraction falls from 0.10 to 0.20", "direction: J: says falls from 0.1 to 0.2"),
    ("3 MB, 2 % faster than the default 25 MB", "job: J: compares bucket caps 3 MB that none of its jobs ran"),
])
def test_a_direction_problem_s_line_names_the_job_and_quotes_the_sentence(quick, text, expected):
    job = "8e73d612ef09"
    found = check_directions(quick, Claim(text, job), list(quick.jobs.index))
    assert [p.line() for p in found] == [f"{expected.replace('J', job, 1)}: {text}"]


def test_the_subject_s_caps_are_those_after_the_last_colon_before_the_words(quick):
    # words after the comparison ("...: significant") take nothing from its subject
    assert directions(quick, "1 MB, 1.6 % slower per step than the default 25 MB: significant") == [
        ("direction", "says slower, but its mean step is 81.3 ms against 82.7 ms")]
    # 2 MB, between the first colon and the last, is the best's field, not its subject: 1 MB against 25 MB
    assert directions(quick, "at world size 2: best of 2 MB: 1 MB, 1.6 % slower per step than the default 25 MB") == [
        ("direction", "says slower, but its mean step is 81.3 ms against 82.7 ms")]


def test_caps_none_ran_leave_the_next_comparison_of_the_sentence_judged(quick):
    text = "3 MB, 2 % faster than the default 25 MB; at world size 2: 1 MB, 1.6 % slower per step than 25 MB"
    assert directions(quick, text) == [("job", "compares bucket caps 3 MB that none of its jobs ran"),
                                       ("direction", "says slower, but its mean step is 81.3 ms against 82.7 ms")]
