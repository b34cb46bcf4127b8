"""One name, one number (ddpbench.audit.names): a named quantity of one job is quoted with one value on a page;
"noise floor 17.5 ms" in the verdict and "noise floor 21.5 ms" in the diagnosis, both of one job, are a problem."""

from __future__ import annotations

import pytest

from ddpbench.audit import Claim, check, derive
from ddpbench.audit.names import check_names, named_jobs, one_job, quotes
from ddpbench.experiment.spec import spec_from_dict
from ddpbench.testing.records import ResultsFolder, job, result_for

VERDICT = "mlp-s ws=2: the time lost at world size 2 is not measurable here (noise floor {a} ms)"
FINDING = ("DDP with mlp-s (batch 32/rank) at world size 2: exposed communication is not measurable here "
           "(noise floor {b} ms)")


def names(*said) -> list:
    return check_names([(Claim(text), job) for text, job in said])


@pytest.mark.parametrize("a, b, right", [
    ("17.5", "21.5", False),
    ("17.5", "17.5", True),
    ("17.5", "17", True),  # 17 stands for anything from 16.5 to 17.5: one value at the precision written
    ("17.5", "18", True),
    ("17.5", "18.1", False),
])
def test_one_name_of_one_job_with_two_values_is_a_problem(a, b, right):
    found = names((VERDICT.format(a=a), "k1"), (FINDING.format(b=b), "k1"))
    assert (found == []) is right, found
    assert all(p.kind == "name" and p.job == "k1" and f"noise floor {b} ms" in p.expected for p in found)


def test_two_jobs_two_names_or_one_sentence_that_tells_them_apart_pass():
    assert names((VERDICT.format(a="17.5"), "k1"), (FINDING.format(b="21.5"), "k2")) == []  # two jobs
    assert names((VERDICT.format(a="17.5"), "k1"), (FINDING.format(b="21.5"), None)) == []  # the job unknown
    # a possessive makes a name of its own: that is how words tell two quantities apart
    assert names((VERDICT.format(a="17.5").replace("(noise", "(the loss's noise"), "k1"),
                 (FINDING.format(b="21.5").replace("(noise", "(the exposed time's noise"), "k1")) == []
    # one sentence quoting the name twice tells its two apart by its own words
    assert quotes(Claim("launch-to-launch spread 4.2 %; the other's launch-to-launch spread 6.1 %"))[0].name == \
        "launch-to-launch spread"
    assert quotes(Claim("launch-to-launch spread 4.2 % here, launch-to-launch spread 6.1 % there")) == []


@pytest.mark.parametrize("name, a, b", [
    ("launch-to-launch spread", "launch-to-launch spread 7.4 %", "launch-to-launch spread 30.8 %"),
    ("parallel efficiency", "69 % parallel efficiency", "64 % parallel efficiency"),
    ("speedup against one rank", "1.38x the throughput of one rank", "1.29x the throughput of one rank"),
    ("throughput", "589 samples/s", "598 samples/s"),
    ("exposed communication", "exposed communication 12.0 ms", "exposed communication 8.4 ms"),
    ("margin of error", "(margin of error 26.1 ms)", "(margin of error 16.9 ms)"),
])
def test_every_named_quantity_is_held_to_one_value(name, a, b):
    """Each name holds one value a job; "its margin of error" is the figure's just named, a name of its own."""
    (found,) = names((f"mlp-s ws=2: {a}", "k1"), (f"mlp-s ws=2: {b}", "k1"))
    assert found.expected.startswith(f"quotes {name} ")
    assert names((f"mlp-s ws=2: {a}", "k1"), (f"mlp-s ws=2: {a}", "k1")) == []


def test_the_checker_holds_a_page_to_one_value_a_name(tmp_path):
    """Through audit.check: a sentence without a job key is of the one job it names (ws=2, its baseline aside);
    one that names every job of several is of none."""
    results = ResultsFolder(tmp_path)
    for world, steps in ((1, (10.0, 10.2, 9.8)), (2, (14.0, 14.6, 13.5))):
        spec = job(world_size=world)
        for repeat, step in enumerate(steps):
            results.launch(spec_from_dict(spec), repeat, result=result_for(spec, step, repeat=repeat))
    fig = derive(tmp_path)
    two = fig.jobs[fig.jobs["world_size"] == 2].index[0]
    said = [{"text": VERDICT.format(a="17.5"), "job": two}, FINDING.format(b="21.5")]
    assert [p.kind for p in check(fig, said) if p.kind == "name"] == ["name"]
    assert [p for p in check(fig, [said[0], FINDING.format(b="17.5")]) if p.kind == "name"] == []
    unnamed = "the time lost is not measurable here (noise floor 21.5 ms)"
    assert [p for p in check(fig, [said[0], unnamed]) if p.kind == "name"] == []


def test_its_margin_of_error_is_the_figure_s_own():
    # faults-cpu/straggler/fixed: the loss's margin 75.6 ms and the exposed time's 40.5 ms, each said as "its"
    assert names(("cnn-s ws=2: the time lost is not measurable here (its margin of error 75.6 ms)", "k1"),
                 ("cnn-s ws=2: exposed communication is not measurable here (its margin of error 40.5 ms)", "k1")) == []


@pytest.mark.parametrize("a, b, right", [
    ("17.5", "17.6", True),  # 17.55 may be written either way
    ("17.5", "17.7", False),  # 17.55 at most against 17.65 at least
    ("17", "18", True),  # 17.5 may be written either way
    ("17", "18.1", False),
])
def test_two_values_are_one_only_where_their_roundings_meet(a, b, right):
    assert (names((VERDICT.format(a=a), "k1"), (FINDING.format(b=b), "k1")) == []) is right
    assert (names((FINDING.format(b=b), "k1"), (VERDICT.format(a=a), "k1")) == []) is right


def test_a_name_said_as_its_own_leaves_the_next_quote_of_it_read():
    text = ("cnn-s ws=2: the loss is within 3.1 ms (its margin of error 75.6 ms); the exposed time's (margin of "
            "error 26.1 ms)")
    (quote,) = quotes(Claim(text))
    assert (quote.name, quote.value.text, quote.value.unit) == ("margin of error", "26.1", "ms")
    assert (quote.value.start, quote.value.end) == (text.index("26.1"), text.index("26.1") + 4)


def test_each_pair_of_values_of_a_name_is_told_once_and_every_other_pair_too():
    floor = "mlp-s ws=2: noise floor {} ms"
    found = names((floor.format("1.0"), None), (floor.format("17.5"), "k1"), (floor.format("21.5"), "k1"),
                  (floor.format("21.5"), "k1"), (floor.format("30.0"), "k1"))
    assert [(p.kind, p.job, p.sentence) for p in found] == [("name", "k1", floor.format("21.5")),
                                                             ("name", "k1", floor.format("30.0"))]
    assert [p.expected.split(";")[0] for p in found] == ["quotes noise floor 21.5 ms", "quotes noise floor 30.0 ms"]


def test_a_name_problem_says_both_values_in_their_units_and_the_first_sentence_cut_at_120():
    first = "mlp-s ws=2: 1.38x the throughput of one rank" + ", and more words about it" * 5
    found = names((first, "k1"), ("mlp-s ws=2: 1.29x the throughput of one rank", "k1"))
    assert [p.expected for p in found] == [
        f"quotes speedup against one rank 1.29x; another sentence of this page quotes 1.38x for the same job: "
        f"\"{first[:120]}\""]
    assert len(first) > 121
    found = names(("mlp-s ws=2: 589 samples/s", "k1"), ("mlp-s ws=2: 598 samples/s", "k1"))
    assert [p.expected for p in found] == [
        "quotes throughput 598 samples/s; another sentence of this page quotes 589 samples/s for the same job: "
        "\"mlp-s ws=2: 589 samples/s\""]


# -- the jobs a sentence names, and the one job it is about -------------------------------------------------------

@pytest.fixture(scope="module")
def four(tmp_path_factory):
    """mlp-s at world size 1 and 2 (batch 32/rank), mlp-s at world size 1 batch 16/rank, cnn-s at world size 1."""
    from ddpbench.testing.records import ok, write_results
    folder = write_results(tmp_path_factory.mktemp("four"), [
        ok(10.0, world_size=1), ok(14.0, world_size=2), ok(9.0, world_size=1, batch_size=16),
        ok(20.0, world_size=1, model="cnn")])
    fig = derive(folder)
    rec = fig.jobs
    key = {(r.label, int(r.per_rank_batch), int(r.world_size)): k for k, r in rec.iterrows()}
    return fig, key


def test_a_batch_or_world_size_no_named_job_ran_leaves_the_named_jobs_and_one_that_ran_narrows_them(four):
    fig, key = four
    mlp = {key["mlp-s", 32, 1], key["mlp-s", 32, 2], key["mlp-s", 16, 1]}
    assert set(named_jobs(fig, "mlp-s (batch 99/rank): 12.0 ms a step")) == mlp
    assert set(named_jobs(fig, "mlp-s at world size 8: 12.0 ms a step")) == mlp
    assert set(named_jobs(fig, "mlp-s ws=8: 12.0 ms a step")) == mlp
    assert set(named_jobs(fig, "mlp-s ws=2: 14.0 ms a step")) == {key["mlp-s", 32, 2], key["mlp-s", 32, 1]}
    # a hook no job ran names none of them: every ok job
    assert set(named_jobs(fig, "DDP (fp16 hook) with mlp-s: 12.0 ms a step")) == set(key.values())


@pytest.mark.parametrize("text, job", [
    ("cnn-s: 20.0 ms a step", ("cnn-s", 32, 1)),  # its label names one job
    ("at world size 2 it runs 14.0 ms a step", ("mlp-s", 32, 2)),  # one job there, its baseline aside
    ("mlp-s ws=2: 14.0 ms a step", ("mlp-s", 32, 2)),  # ws=N as the report's labels write a world size
    ("mlp-s (batch 16/rank): 9.0 ms a step", ("mlp-s", 16, 1)),
    ("mlp-s: 12.0 ms a step", None),  # three jobs, one at world size 1 no baseline of the one above it
    ("12.0 ms a step", None),  # it names none of several
])
def test_one_job_is_the_one_a_sentence_names(four, text, job):
    fig, key = four
    assert one_job(fig, Claim(text)) == (key[job] if job else None)


def test_one_job_is_a_sentence_s_own_key_where_known(four, tmp_path):
    fig, key = four
    assert one_job(fig, Claim("12.0 ms a step", key["cnn-s", 32, 1])) == key["cnn-s", 32, 1]
    assert one_job(fig, Claim("cnn-s: 12.0 ms a step", "000000000000")) is None
    from ddpbench.testing.records import ok, write_results
    lone = derive(write_results(tmp_path, [ok(10.0, world_size=1)]))
    assert one_job(lone, Claim("12.0 ms a step")) == lone.jobs.index[0]  # the only job: naming none names it
