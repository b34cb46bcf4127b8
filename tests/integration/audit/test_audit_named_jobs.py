"""The jobs a sentence without a job key is about (ddpbench.audit.names.named_jobs): the ones it names by
model, batch, strategy and hook, and world size (with their one-rank baselines), every ok job where it
names none. A figure of a job the sentence does not name is no figure of it: ``report --check`` says so."""

from __future__ import annotations

import copy
import warnings

import pytest

from ddpbench.audit import Claim, derive
from ddpbench.audit.checks import check_claim
from ddpbench.audit.names import named_jobs
from ddpbench.testing import ROOT

EXAMPLES = ROOT / "reports" / "examples"


@pytest.fixture(scope="module")
def strategies():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return derive(EXAMPLES / "strategies-cpu")


@pytest.fixture(scope="module")
def quick():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return derive(EXAMPLES / "quick-cpu")


def runs(fig, keys) -> set[tuple[str, str, int]]:
    return {(str(fig.rec(k)["strategy"]), str(fig.rec(k)["comm_hook"]), int(fig.rec(k)["world_size"])) for k in keys}


def test_a_strategy_and_world_size_named_are_those_jobs_and_their_baselines(strategies):
    keys = named_jobs(strategies, "zero with mlp-m at world size 2")
    assert ("zero", "none", 2) in runs(strategies, keys)
    assert {ws for _, _, ws in runs(strategies, keys)} == {1, 2}
    assert {s for s, _, ws in runs(strategies, keys) if ws == 2} == {"zero"}
    both = runs(strategies, named_jobs(strategies, "the speedup for zero with mlp-m at world sizes 2 to 4"))
    assert {(s, ws) for s, _, ws in both if ws > 1} == {("zero", 2), ("zero", 4)}


def test_a_hook_named_picks_the_hooked_runs_and_none_named_the_plain_ones(strategies):
    hooked = runs(strategies, named_jobs(strategies, "ddp (fp16 hook) with mlp-m at world size 4"))
    assert {r for r in hooked if r[2] > 1} == {("ddp", "fp16", 4)}
    plain = runs(strategies, named_jobs(strategies, "of ddp with mlp-m at world size 4"))
    assert {r for r in plain if r[2] > 1} == {("ddp", "none", 4)}


def test_a_sentence_naming_no_job_is_about_every_ok_job(strategies):
    every = set(strategies.ok().index)
    assert set(named_jobs(strategies, "the sweep measured 37 jobs")) == every
    # a strategy no job ran, a world size none ran: names none of them
    assert set(named_jobs(strategies, "horovod with mlp-m at world size 8")) == every
    # a batch no job ran narrows nothing
    assert set(named_jobs(strategies, "mlp-m (batch 64/rank)")) == every


def test_a_figure_of_a_job_the_sentence_does_not_name_is_a_problem(strategies):
    ws2 = next(k for k in strategies.ok().index
               if runs(strategies, [k]) == {("zero", "none", 2)})
    step = f"{strategies.rec(ws2)['step_ms']:.2f} ms"
    assert [p.kind for p in check_claim(strategies, Claim(f"zero with mlp-m at world size 2 steps {step}"))] == []
    found = check_claim(strategies, Claim(f"fsdp with mlp-m at world size 4 steps {step}"))
    assert [p.kind for p in found] == ["figure"]


def test_a_label_within_another_named_is_the_longer_one(quick):
    fig = copy.deepcopy(quick)
    one = fig.jobs.index[fig.jobs["world_size"] == 1][0]
    fig.jobs.loc[fig.jobs["world_size"] > 1, "label"] = "transformer-s-wide"
    fig.jobs.at[one, "label"] = "transformer-s"
    fig.memo.clear()
    wide = set(fig.jobs.index[fig.jobs["world_size"] > 1])
    assert set(named_jobs(fig, "transformer-s-wide at world size 2")) == wide | {one}  # with its baseline
    assert set(named_jobs(fig, "transformer-s-wide, against transformer-s")) == wide
    assert set(named_jobs(fig, "transformer-s on its own")) == {one}


@pytest.mark.parametrize("batch", [4, 8])
def test_a_batch_named_narrows_to_the_jobs_that_ran_it(quick, batch):
    fig = copy.deepcopy(quick)
    two = fig.jobs.index[fig.jobs["world_size"] == 2]
    fig.jobs.loc[two[:1], "per_rank_batch"] = 8
    fig.memo.clear()
    keys = set(named_jobs(fig, f"transformer-s (batch {batch}/rank)"))
    assert keys == ({two[0]} if batch == 8 else set(fig.ok().index) - {two[0]})


def test_a_link_named_picks_its_runs_and_the_one_rank_baseline():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig = derive(EXAMPLES / "network-cpu")
    links = {(str(fig.rec(k)["link"]), str(fig.rec(k)["strategy"])) for k in named_jobs(fig, "mlp-s over 1gbit")}
    assert links == {("1gbit", "ddp"), ("1gbit", "master"), ("none", "ddp")}
    # "10gbit" is not "1gbit" with a digit before it
    assert {str(fig.rec(k)["link"]) for k in named_jobs(fig, "mlp-s over 10gbit")} == {"10gbit", "none"}
    assert {str(fig.rec(k)["link"]) for k in named_jobs(fig, "mlp-s over the lan")} == {
        "none", "10gbit", "1gbit", "100mbit"}
