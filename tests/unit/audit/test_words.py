"""Conclusion words held to the interval beside them (ddpbench.audit.words): "significant" where the
quoted 95 % interval excludes no change, "not significant" where it includes it."""

from __future__ import annotations

import pytest

from ddpbench.audit import parse
from ddpbench.audit.problem import Claim
from ddpbench.audit.words import check_bands, check_bound, check_significance


def problems(text: str) -> list:
    return check_significance(Claim(text), parse.numbers(text))


@pytest.mark.parametrize("text", [
    "1 MB, 5.3 % faster per step than 25 MB (95 % CI of the gain 1.4 % to 9.0 %: significant).",
    "25 MB, 8.2 % faster per step than 5 MB, but that is not significant: the 95 % interval of the gain, "
    "-17.3 % to 28.1 %, includes both 0 and a difference of 10 %.",
    "is not significantly slower or faster than raw DDP on the same work: -2.8 % (95 % interval -6.4 to +0.9 %, "
    "not significant)",
    "slower than raw DDP: +121.9 % (95 % interval +111.5 to +132.8 %, significant) on the mean step",
    "a ratio of 1.08x (95 % CI 1.02x to 1.15x, significant)",
])
def test_words_that_agree_with_their_interval_pass(text):
    assert problems(text) == []


@pytest.mark.parametrize("text, said, verb", [
    ("1 MB, 5.3 % faster per step than 25 MB (95 % CI of the gain 1.4 % to 9.0 %: not significant).",
     "not significant", "excludes 0"),
    ("25 MB, 8.2 % faster per step than 5 MB, but that is significant: the 95 % interval of the gain, "
     "-17.3 % to 28.1 %, includes both 0 and a difference of 10 %.", "significant", "includes 0"),
    ("a ratio of 1.08x (95 % CI 0.98x to 1.15x, significant)", "significant", "includes 1"),
])
def test_a_word_its_interval_contradicts_is_a_problem(text, said, verb):
    found = problems(text)
    assert len(found) == 1 and found[0].kind == "significance"
    assert f"says {said!r}" in found[0].expected and verb in found[0].expected


def test_each_word_is_held_to_the_interval_nearest_it():
    """Two comparisons in one sentence: each word to its own interval."""
    text = ("A is 3.1 % faster (95 % CI of the gain 0.5 % to 5.1 %: significant); B is 2.0 % slower "
            "(95 % CI of the change -1.0 % to 5.0 %, not significant)")
    assert problems(text) == []
    swapped = text.replace(": significant", ": not significant").replace(", not significant", ", significant")
    assert len(problems(swapped)) == 2


def test_an_end_at_no_change_or_no_interval_leaves_the_word_unjudged():
    assert problems("a gain of 2.0 % (95 % CI of the gain 0.0 % to 4.0 %: significant)") == []
    assert problems("the difference is significant") == []


def bands(text: str) -> list:
    return check_bands(Claim(text))


LINE = "ddp with mlp-s {words}: at world size 2 it runs 1.38x the throughput of one rank, 69 % parallel efficiency"


@pytest.mark.parametrize("words, ci, right", [
    ("scales moderately", "66 % to 72 %", True),
    ("scales moderately to well", "57 % to 89 %", True),
    ("scales poorly to moderately", "24 % to 51 %", True),
    ("scales well", "66 % to 72 %", False),
    ("scales moderately", "57 % to 89 %", False),
    ("scales moderately to well", "66 % to 72 %", False),
    ("scales poorly", "24 % to 51 %", False),
    ("scales moderately to well", "46 % to 90 %", False),  # across every band: no band word
])
def test_a_band_word_is_the_band_its_whole_interval_lies_in(words, ci, right):
    found = bands(LINE.format(words=words) + f" (95 % CI {ci}).")
    assert (found == []) is right, found
    assert all(p.kind == "band" for p in found)


def test_cannot_tell_and_across_every_band_are_held_to_the_interval_too():
    across = ("cannot tell how it scales with 3 launches; at world size 2 it runs 1.29x the throughput of one rank, "
              "64 % parallel efficiency (95 % CI {ci}), an interval across every band.")
    assert bands(across.format(ci="46 % to 90 %")) == []
    found = bands(across.format(ci="58 % to 70 %"))
    assert len(found) == 2 and "says 'scales moderately'" in found[0].expected


def test_an_end_on_a_band_edge_as_written_is_unjudged():
    """47 % (95 % CI 44 % to 50 %): the upper end may be 49.6 % or 50.4 %, so "poorly" and "poorly to
    moderately" are both possible at the precision quoted."""
    for words in ("scales poorly", "scales poorly to moderately"):
        assert bands(LINE.format(words=words).replace("69 %", "47 %") + " (95 % CI 44 % to 50 %).") == []


def bound(text: str) -> list:
    return check_bound(Claim(text))


EXPOSED_LINE = ("DDP with mlp-s (batch 16/rank) at world size 2 {words}: {share} of each step ({ms} ms of 40.0 ms; "
                "95 % CI {ci} ms) is communication left exposed")


@pytest.mark.parametrize("words, share, ms, ci, right", [
    ("is communication-bound", "50 %", "20.0", "18.0 to 22.0", True),
    ("is compute-bound", "50 %", "20.0", "18.0 to 22.0", False),
    ("is compute-bound", "5 %", "2.0", "1.0 to 3.0", True),
    ("is communication-bound", "5 %", "2.0", "1.0 to 3.0", False),
    ("is communication-bound", "30 %", "12.0", "6.0 to 18.0", False),  # across the 25 % line
    ("is between compute- and communication-bound", "20 %", "8.0", "6.0 to 9.0", True),
    ("is between compute- and communication-bound", "50 %", "20.0", "18.0 to 22.0", False),
    ("so cannot tell whether it is compute- or communication-bound", "30 %", "12.0", "6.0 to 18.0", True),
    ("so cannot tell whether it is compute- or communication-bound", "50 %", "20.0", "18.0 to 22.0", False),
    ("is communication-bound", "25 %", "10.0", "10.0 to 11.0", True),  # 10.0 of 40.0: on the line, unjudged
])
def test_a_bound_word_is_what_the_exposed_interval_says(words, share, ms, ci, right):
    found = bound(EXPOSED_LINE.format(words=words, share=share, ms=ms, ci=ci))
    assert (found == []) is right, found
    assert all(p.kind == "bound" for p in found)


@pytest.mark.parametrize("ends, word, right", [
    ("-4.7 % to 5.8 %", "includes 0", True),
    ("-4.7 % to 5.8 %", "excludes 0", False),
    ("1.2 % to 5.8 %", "excludes 0", True),
    ("1.2 % to 5.8 %", "includes both 0 and a difference of 10 %", False),
    ("0.0 % to 5.8 %", "excludes 0", True),  # an end at 0 as written: unjudged
    ("0.0 % to 5.8 %", "includes 0", True),  # 0.0 may be -0.04 or 0.04: unjudged either way
    ("0.4 % to 5.8 %", "excludes 0", True),
    ("0.4 % to 5.8 %", "includes 0", False),
])
def test_an_interval_s_own_word_on_zero_is_held_to_its_ends(ends, word, right):
    text = (f"mlp-l ws=2 bucket 0.5 MB, 759 samples/s; 0.7 % less time per sample than mlp-l ws=2 bucket 0.1 MB by "
            f"the means, but the 95 % interval of the gain, {ends}, {word}: cannot tell it from mlp-l ws=2 bucket "
            "0.1 MB")
    found = problems(text)
    assert (found == []) is right, found


# -- "cannot tell" and the calls it stands for: differ, trend, cause (sentences as the report writes them) --------

from ddpbench.audit.words import check_cause, check_differ, check_trend  # noqa: E402

DIFFER = ("mlp-l ws=2 bucket 5 MB, 589 samples/s (95 % CI 535 to 648); 0.5 % less time per sample than mlp-l ws=2 "
          "bucket 0.5 MB by the means, but the 95 % interval of the gain, {ends}, includes 0: cannot tell it from "
          "mlp-l ws=2 bucket 0.5 MB with 3 launches")
BEST = ("Best gradient bucket size for DDP with transformer-s (batch 4/rank) at world size 2: 2 MB, 2.9 % faster per "
        "step than the default 25 MB, but that is not significant: the 95 % interval of the gain, {ends}, {tail}.")
EITHER = "includes both 0 and a difference of 10 %; cannot tell whether they differ with 3 launches"
ANY = "includes 0 and rules out a difference of 10 % or more; any of these bucket sizes will do"


@pytest.mark.parametrize("text, wrong", [
    (DIFFER.format(ends="-9.0 % to 9.2 %"), False),
    (DIFFER.format(ends="1.5 % to 9.2 %"), True),  # the interval excludes 0: it can tell them apart
    (BEST.format(ends="-10.4 % to 14.6 %", tail=EITHER), False),
    (BEST.format(ends="-4.4 % to 8.6 %", tail=EITHER), True),  # within 10 % either way: any will do
    (BEST.format(ends="-4.4 % to 8.6 %", tail=ANY), False),
    (BEST.format(ends="-10.4 % to 14.6 %", tail=ANY), True),  # reaches 10 %: it cannot rule that out
    (BEST.format(ends="-9.96 % to 8.6 %", tail=ANY), False),  # -9.96 as written: at most -9.965, within 10 %
])
def test_cannot_tell_them_apart_only_where_the_gain_s_interval_says_so(text, wrong):
    found = check_differ(Claim(text))
    assert bool(found) is wrong and all(p.kind == "differ" for p in found), found


TREND = ("The serial fraction of ddp with mlp-xs (batch 16/rank) {word} {a} (95 % CI {al} to {ah}) to {b} (95 % CI "
         "{bl} to {bh}) over world size 2 to 3{tail}")
UNSURE = ": cannot tell whether it rises, falls or stays with 3 launches."


@pytest.mark.parametrize("word, figures, tail, right", [
    ("goes from", (1.86, 0.97, 3.14, 1.97, 0.73, 4.45), UNSURE, True),
    ("rises from", (1.86, 0.97, 3.14, 1.97, 0.73, 4.45), ": an overhead that grows.", False),  # intervals overlap
    ("rises from", (0.10, 0.08, 0.12, 0.30, 0.27, 0.33), ": an overhead that grows.", True),
    ("goes from", (0.10, 0.08, 0.12, 0.30, 0.27, 0.33), UNSURE, False),  # apart by more than 0.05: it rises
    ("falls from", (0.10, 0.08, 0.12, 0.30, 0.27, 0.33), ": a fixed cost.", False),
    ("falls from", (0.30, 0.27, 0.33, 0.10, 0.08, 0.12), ": a fixed cost.", True),
    ("stays near 0.21 (", (0.20, 0.19, 0.22, 0.21, 0.20, 0.23), "): work that does not parallelise.", True),
    ("stays near 0.21 (", (0.20, 0.10, 0.30, 0.21, 0.12, 0.33), "): work that does not parallelise.", False),
])
def test_a_serial_fraction_s_trend_is_called_only_where_its_intervals_allow(word, figures, tail, right):
    a, al, ah, b, bl, bh = (f"{v:.2f}" for v in figures)
    found = check_trend(Claim(TREND.format(word=word, a=a, al=al, ah=ah, b=b, bl=bl, bh=bh, tail=tail)))
    assert (found == []) is right and all(p.kind == "trend" for p in found), found


def test_no_trend_is_called_without_intervals():
    text = "The serial fraction of ddp with mlp-m (batch 32/rank) {} 0.75 to 0.91 over world size 2 to 4{}"
    unsure = ": cannot tell whether it rises, falls or stays with 1 launch"
    assert check_trend(Claim(text.format("goes from", unsure))) == []
    assert [p.kind for p in check_trend(Claim(text.format("rises from", ": an overhead that grows.")))] == ["trend"]


NAMED = ("communication in mlp-l ws=2 bucket 5 MB; fix: a faster link: estimated (a model, not run) to recover 39.7 "
         "ms of a 108.7 ms step (37 %), at least {low} ms by the lower end of its 95 % interval")
UNNAMED = ("cannot tell: the likeliest is buckets in transformer-s ws=2 bucket 1 MB; fix: bucket_cap_mb = 25: measured "
           "to recover 3.1 ms of a 27.9 ms step (11 %), but the 95 % interval of the gain reaches down to {low} ms, "
           "under 10 % of the step; cannot tell with 3 launches")


@pytest.mark.parametrize("text, problems_found", [
    (NAMED.format(low="28.8"), 0),
    (NAMED.format(low="8.8"), 1),  # 8 % of the step: no cause may be named
    ("top cause: " + NAMED.format(low="28.8"), 0),
    ("cannot tell: the likeliest is " + NAMED.format(low="28.8"), 1),  # 26 %: it can tell
    (UNNAMED.format(low="2.4"), 0),
    (UNNAMED.format(low="2.9"), 2),  # 10.4 %: named, and not under 10 % of the step
    (UNNAMED.format(low="2.79"), 0),  # 10.0 % as written: unjudged
    (UNNAMED.replace("cannot tell: the likeliest is ", "").format(low="2.4"), 1),
])
def test_a_top_cause_is_named_only_where_its_gain_s_lower_end_is_material(text, problems_found):
    found = check_cause(Claim(text))
    assert len(found) == problems_found and all(p.kind == "cause" for p in found), found


def test_no_band_is_called_for_a_job_measured_once():
    text = ("ddp with gpt2-mini (batch 8/rank): {} with 1 launch: one launch has no interval (repeats = 3 or more give "
            "one); at world size 2 it runs 1.82x the throughput of one rank, 91 % parallel efficiency.")
    assert check_bands(Claim(text.format("cannot tell how it scales"))) == []
    assert [p.kind for p in check_bands(Claim(text.format("scales well")))] == ["band"]


def test_an_end_on_an_edge_lets_either_side_s_word_through_and_no_other():
    text = ("ddp with cnn-s (batch 64/rank) {}: at world size 2 it runs 0.94x, 47 % parallel efficiency "
            "(95 % CI 44 % to 50 %).")
    for said in ("scales poorly", "scales poorly to moderately"):  # 50 as written: 49.6 or 50.4
        assert check_bands(Claim(text.format(said))) == [], said
    for said in ("scales well", "scales moderately", "scales moderately to well"):
        assert [p.kind for p in check_bands(Claim(text.format(said)))] == ["band"], said
    assert [p.kind for p in check_bands(Claim(text.format("cannot tell how it scales")))] == ["band"]


# -- a scaling word against the speedup it quotes: a speedup below 1 is a slowdown, never "scales" -----------------

from ddpbench.audit.words import check_slowdown  # noqa: E402

SCALING = "ddp with mlp-s (batch 16/rank) {words}: at world size {p} it runs {x}x the throughput of one rank, {eff}"


@pytest.mark.parametrize("words, p, x, eff, right", [
    # the efficiency's interval times the world size: 0.60x to 0.74x, wholly below 1
    ("scales poorly", 2, "0.66", "33 % parallel efficiency (95 % CI 30 % to 37 %)", False),
    ("slows down", 2, "0.66", "33 % parallel efficiency (95 % CI 30 % to 37 %)", True),
    # 0.80x to 1.10x: across 1, a band word is within the launches, "slows down" surer than they are
    ("scales poorly", 2, "0.90", "45 % parallel efficiency (95 % CI 40 % to 55 %)", True),
    ("slows down", 2, "0.90", "45 % parallel efficiency (95 % CI 40 % to 55 %)", False),
    ("cannot tell whether it runs faster than one rank", 2, "0.90", "45 % parallel efficiency (95 % CI 40 % to 55 %)",
     True),
    ("cannot tell whether it runs faster than one rank", 2, "0.66", "33 % parallel efficiency (95 % CI 30 % to 37 %)",
     False),
    # 1.24x to 1.50x, wholly above 1: scaling, however poor, never a slowdown
    ("scales moderately", 2, "1.38", "69 % parallel efficiency (95 % CI 62 % to 75 %)", True),
    ("slows down", 2, "1.38", "69 % parallel efficiency (95 % CI 62 % to 75 %)", False),
    # at world size 4: 0.72x to 0.88x
    ("scales poorly", 4, "0.80", "20 % parallel efficiency (95 % CI 18 % to 22 %)", False),
    # one launch, no interval: the point decides
    ("scales poorly", 2, "0.80", "40 % parallel efficiency", False),
    ("slows down", 2, "1.10", "55 % parallel efficiency", False),
    ("slows down", 2, "0.80", "40 % parallel efficiency", True),
    # an upper end on 1 as written (50 % at world size 2 may be 49.6 %): unjudged
    ("scales poorly", 2, "0.90", "45 % parallel efficiency (95 % CI 40 % to 50 %)", True),
])
def test_a_scaling_word_never_contradicts_its_speedup(words, p, x, eff, right):
    found = check_slowdown(Claim(SCALING.format(words=words, p=p, x=x, eff=eff) + "."))
    assert (found == []) is right, found
    assert all(p.kind == "slowdown" for p in found)


@pytest.mark.parametrize("text, right", [
    ("scaling: scales poorly: 0.66x in ws=2, 33 % parallel efficiency (95 % CI 30 % to 37 %)", False),
    ("scaling: slows down: 0.66x in ws=2, 33 % parallel efficiency (95 % CI 30 % to 37 %)", True),
    ("slows down: 0.28x the throughput of ws=1 (95 % CI 0.25x to 0.31x)", True),
    ("scales poorly: 0.28x the throughput of ws=1 (95 % CI 0.25x to 0.31x)", False),
    ("slows down: 1.20x the throughput of ws=1 (95 % CI 1.10x to 1.30x)", False),
    ("slows down: 1.20x the throughput of ws=1 (95 % CI 0.90x to 1.50x)", False),  # the point beside it is above 1
])
def test_the_answer_row_and_a_speedup_s_own_interval(text, right):
    found = check_slowdown(Claim(text))
    assert (found == []) is right, found


# -- what a comparison says of a speedup's interval: it includes 1 or not, a difference of 10 % in the step -------

SPEEDUP_LINE = ("Best gradient bucket size for DDP with mlp-l (batch 32/rank) at world size 2: 1 MB, {x} as fast as "
                "the default 25 MB (95 % CI {ci}), but {words}.")


@pytest.mark.parametrize("x, ci, words, right", [
    # 0.786x to 1.31x: a gain in the step from -27 % to 24 %: includes 1 (no change) and a 10 % difference
    ("1.02x", "0.786x to 1.31x", "the interval includes both 1 and a difference of 10 % in the step; cannot tell "
     "whether they differ", True),
    ("1.02x", "1.04x to 1.31x", "the interval includes both 1 and a difference of 10 % in the step; cannot tell "
     "whether they differ", False),
    # 0.97x to 1.04x: a gain from -3 % to 4 %: includes 1, rules out a 10 % difference
    ("1.01x", "0.970x to 1.04x", "that interval includes 1 and rules out a difference of 10 % or more; any of these "
     "bucket sizes will do", True),
    ("1.01x", "0.970x to 1.04x", "that interval includes 1: cannot tell whether they differ", False),
    ("1.20x", "1.05x to 1.37x", "that interval includes 1: cannot tell it from the default", False),
    ("1.20x", "1.05x to 1.37x", "that interval excludes 1: significant", True),
])
def test_a_speedup_s_interval_is_held_to_what_the_words_say_of_it(x, ci, words, right):
    claim = Claim(SPEEDUP_LINE.format(x=x, ci=ci, words=words))
    found = check_differ(claim) + check_significance(claim, parse.numbers(claim.text))
    assert (found == []) is right, found
