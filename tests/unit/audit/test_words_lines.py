"""Conclusion words (ddpbench.audit.words) at their rules' lines and in sentences of several figures: an end
within its rounding of a line leaves the word unjudged, an end just past it is judged, and each word is held to
its own interval or speedup where a sentence quotes several. The cases of test_words.py, at their edges."""

from __future__ import annotations

import pytest

from ddpbench.audit import parse, words
from ddpbench.audit.problem import Claim


def significance(text: str) -> list:
    return words.check_significance(Claim(text), parse.numbers(text))


# -- significance: each interval's own words, and each word, where a sentence has several -----------------------

def test_an_interval_without_a_word_on_zero_does_not_stop_the_next_one_being_read():
    text = ("1 MB is 3.1 % faster (95 % CI of the gain 0.5 % to 5.1 %: significant); 2 MB is 2 % faster (the 95 % "
            "interval of the gain, 1.7 % to 5.8 %, includes 0: cannot tell)")
    assert [p.expected for p in significance(text)] == ["says its interval (1.7 to 5.8 %) includes 0; it excludes it"]


def test_that_interval_is_the_last_interval_before_the_words():
    # the words are held to 1.030x to 1.30x (excludes 1), not to the 0.970x to 1.04x quoted after them
    text = ("1 MB: 1.05x as fast (95 % CI 1.030x to 1.30x), but that interval includes 1; 2 MB: 1.01x as fast "
            "(95 % CI 0.970x to 1.04x)")
    assert [p.expected for p in significance(text)] == [
        "says its interval (1.030x to 1.30x) includes 1; it excludes it"]


def test_that_interval_with_an_end_on_one_or_no_interval_is_unjudged_and_the_next_still_read():
    # 1.00x may be 0.996x: whether it includes 1 is not known at the precision written
    text = ("1 MB: 1.00x as fast (95 % CI 1.00x to 1.30x), but that interval includes 1; 2 MB: 1.05x as fast "
            "(95 % CI 1.030x to 1.30x), but that interval includes 1")
    assert [p.expected for p in significance(text)] == [
        "says its interval (1.030x to 1.30x) includes 1; it excludes it"]
    assert significance("1 MB: 1.05x as fast as the default, but that interval includes 1") == []


def test_a_word_beside_an_end_on_zero_does_not_stop_the_next_word_being_judged():
    text = ("A is 2.0 % faster (95 % CI of the gain 0.0 % to 4.0 %: significant); B is 3.0 % faster "
            "(95 % CI of the gain 1.0 % to 5.0 %, not significant)")
    assert [p.expected for p in significance(text)] == [
        "says 'not significant' but its 95 % interval (1.0 % to 5.0 %) excludes 0 %"]


def test_the_distance_from_a_word_to_an_interval_is_the_characters_between_them():
    def quoted(start: int, text: str) -> parse.Quoted:
        return parse.Quoted(float(text), "%", parse.digits(text), start, start + len(text), text)

    # "...0.5 % to 5.1 %..." with its low end at 10 and its high end at 19 to 22
    interval = parse.Interval(quoted(10, "0.5"), quoted(10, "0.5"), quoted(19, "5.1"))
    assert words._distance(interval, 25, 36) == 3  # 3 characters after the high end
    assert words._distance(interval, 0, 8) == 2  # 2 before the low end
    assert words._distance(interval, 22, 33) == 0  # touching its high end
    assert words._distance(interval, 15, 26) == 0  # overlapping it: nothing between them


# -- slowdown: which speedup a word is held to, and ends on 1 as written ----------------------------------------

def slowdown(text: str) -> list:
    return [p.expected for p in words.check_slowdown(Claim(text))]


def test_each_scaling_word_is_held_to_the_speedup_after_it():
    text = ("scales poorly: 0.66x in ws=2, 33 % parallel efficiency (95 % CI 30 % to 37 %); scales well: 3.60x in "
            "ws=4, 90 % parallel efficiency (95 % CI 85 % to 95 %)")
    # 30 % and 37 % of 2, each moved towards 1 by its rounding (0.5 % of 2): 0.61x to 0.75x
    assert slowdown(text) == ["says 'scales poorly' but its speedup (0.66x, its 95 % interval 0.61x to 0.75x) is "
                              "below 1: it slows down"]


def test_a_word_after_every_speedup_is_held_to_the_last():
    text = "at world size 2 it runs 0.66x the throughput of one rank (95 % CI 0.60x to 0.74x): it scales poorly"
    assert slowdown(text) == ["says 'scales poorly' but its speedup (0.66x, its 95 % interval 0.605x to 0.745x) is "
                              "below 1: it slows down"]


def test_each_speedup_takes_the_efficiency_after_it_and_the_world_size_before_it():
    # 0.66x at world size 2: 30 % to 37 % of 2 is 0.60x to 0.74x; 0.56x at 4: 12 % to 16 % of 4 is 0.48x to 0.64x
    text = ("ddp slows down: at world size 2 it runs 0.66x the throughput of one rank, 33 % parallel efficiency "
            "(95 % CI 30 % to 37 %); at world size 4 it runs 0.56x the throughput of one rank, 14 % parallel "
            "efficiency (95 % CI 12 % to 16 %): it slows down further")
    assert slowdown(text) == []


def test_a_world_size_at_the_start_of_the_sentence_is_read():
    # 40 % to 55 % of 2, each moved towards 1 by its rounding: 0.81x to 1.09x, above 1 (0.96x alone is not)
    text = ("at world size 2 it runs 0.96x the throughput of one rank, 48 % parallel efficiency (95 % CI 40 % to "
            "55 %): it slows down")
    assert slowdown(text) == ["says 'slows down' but its speedup (0.96x, its 95 % interval 0.81x to 1.09x) reaches "
                              "above 1"]


def test_a_speedup_with_no_world_size_and_no_interval_is_judged_by_its_point():
    assert slowdown("ddp scales poorly: 0.66x the throughput of one rank") == [
        "says 'scales poorly' but its speedup (0.66x) is below 1: it slows down"]


@pytest.mark.parametrize("text", [
    "ddp slows down: 0.90x the throughput of one rank (95 % CI 0.80x to 1.00x)",  # 1.00x may be 1.004x
    "ddp: cannot tell whether it runs faster than one rank: 0.90x the throughput of one rank (95 % CI 0.80x to 1.00x)",
    "ddp: cannot tell whether it runs faster than one rank: 1.10x the throughput of one rank (95 % CI 1.00x to 1.20x)",
    # 33 % of 3 is 0.99x, but 33 % may be 33.4 %: 1.002x
    "at world size 3 it runs 0.96x the throughput of one rank, 32 % parallel efficiency (95 % CI 30 % to 33 %): it "
    "slows down",
])
def test_a_speedup_end_on_one_as_written_is_on_neither_side(text):
    assert slowdown(text) == []


# -- bands: an end on an edge as written may be on either side of it --------------------------------------------

@pytest.mark.parametrize("said, eff, ci", [
    ("scales moderately", "60 %", "50 % to 70 %"),  # 50 may be 49.6 or 50.4
    ("scales poorly to moderately", "60 %", "50 % to 70 %"),
    ("scales well", "85 %", "80 % to 90 %"),
    ("scales moderately to well", "85 %", "80 % to 90 %"),
])
def test_a_low_end_on_an_edge_lets_the_band_above_it_through(said, eff, ci):
    text = (f"ddp {said}: at world size 2 it runs 1.2x the throughput of one rank, {eff} parallel efficiency "
            f"(95 % CI {ci}).")
    assert words.check_bands(Claim(text)) == []


# -- bound: the step's rounding, tiny steps, and which side each word is judged by ------------------------------

def bound(text: str) -> list:
    return [p.expected for p in words.check_bound(Claim(text))]


def test_an_exposed_end_within_the_step_s_rounding_of_the_line_is_unjudged():
    # 40 ms may be 40.4 ms, whose 25 % is 10.1 ms: 9.9 ms (9.85 to 9.95) may be at or above the line, or below it
    assert bound("is communication-bound: 25 % of each step (10 ms of 40 ms; 95 % CI 9.9 to 11.0 ms)") == []
    # the upper end 4.0 ms on the 10 % line: compute-bound unjudged, whatever the lower end says of 25 %
    assert bound("is compute-bound: 6 % of each step (2.5 ms of 40.0 ms; 95 % CI 1.0 to 4.0 ms)") == []
    # the lower end 9.9 ms on the 25 % line says nothing of compute-bound: 14.0 ms is surely above 10 %
    assert bound("is compute-bound: 30 % of each step (12 ms of 40 ms; 95 % CI 9.9 to 14.0 ms)") == [
        "says compute-bound but its exposed communication (95 % CI 9.9 to 14.0 ms of a 40 ms step) is not wholly "
        "below 10 % of the step"]


def test_a_step_under_a_millisecond_is_judged():
    assert bound("is communication-bound: 50 % of each step (0.40 ms of 0.80 ms; 95 % CI 0.10 to 0.70 ms)") == [
        "says communication-bound but its exposed communication (95 % CI 0.10 to 0.70 ms of a 0.80 ms step) is not "
        "wholly at or above 25 % of the step"]


def test_a_step_quoted_as_zero_gives_no_share_to_judge():
    assert bound("is communication-bound: 50 % of each step (0.1 ms of 0.0 ms; 95 % CI 0.1 to 0.2 ms)") == []
    text = ("cannot tell: the likeliest is comm in mlp-xs ws=2; fix: a faster link: estimated to recover 0.1 ms of a "
            "0.0 ms step (0 %), at least 0.1 ms by the lower end of its 95 % interval")
    assert words.check_cause(Claim(text)) == []


# -- cause: the 10 % line with the step's rounding -----------------------------------------------------------------

CAUSE = ("cannot tell: the likeliest is comm in mlp-xs ws=2; fix: a faster link: estimated to recover {gain} ms of a "
         "{step} ms step ({share} %), at least {low} ms by the lower end of its 95 % interval")


def test_a_cause_s_lower_end_within_both_figures_rounding_of_the_line_is_unjudged():
    # 20 ms may be 20.5 ms (10 %: 2.05 ms) and 2.1 ms may be 2.05 ms: exactly on the line, either side of it
    assert words.check_cause(Claim(CAUSE.format(gain="5.0", step="20", share="25", low="2.1"))) == []
    assert words.check_cause(Claim(CAUSE.format(gain="5.0", step="20", share="25", low="2.04"))) == []
    # 2.2 ms (2.15 at least) is past 10 % of any step 20 ms stands for (2.05 at most)
    assert [p.kind for p in words.check_cause(Claim(CAUSE.format(gain="5.0", step="20", share="25", low="2.2")))] == [
        "cause"]


def test_a_cause_s_step_under_a_millisecond_is_judged():
    found = words.check_cause(Claim(CAUSE.format(gain="0.5", step="0.9", share="56", low="0.40")))
    assert [p.expected for p in found] == [
        "says it cannot tell the cause but its gain's lower end, 0.40 ms of a 0.9 ms step, is 10 % or more"]


# -- differ: the lines 0, -10 % and 10 %, each end with its own rounding ----------------------------------------

BEST = ("Best gradient bucket size for DDP with transformer-s (batch 4/rank) at world size 2: 2 MB, 2.9 % faster per "
        "step than the default 25 MB, but that is not significant: the 95 % interval of the gain, {ends}, includes "
        "both 0 and a difference of 10 %; cannot tell whether they differ with 3 launches")
DIFFER = ("mlp-l ws=2 bucket 5 MB, 589 samples/s; 0.5 % less time per sample than mlp-l ws=2 bucket 0.5 MB by the "
          "means, but the 95 % interval of the gain, {ends}, includes 0: cannot tell it from mlp-l ws=2 bucket 0.5 MB")
SPEEDUP = ("Best gradient bucket size for DDP with mlp-l (batch 32/rank) at world size 2: 1 MB, {x} as fast as the "
           "default 25 MB (95 % CI {ci}), but {words}.")
EITHER = "the interval includes both 1 and a difference of 10 % in the step; cannot tell whether they differ"
ANY = "that interval includes 1 and rules out a difference of 10 % or more; any of these bucket sizes will do"


@pytest.mark.parametrize("text, wrong", [
    # -9.96 % (-9.965 to -9.955) is surely within 10 %, 8.6 % too: it can tell they differ by less
    (BEST.format(ends="-9.96 % to 8.6 %"), True),
    (BEST.format(ends="-10.0 % to 8.6 %"), False),  # -10.0 % may be -10.04 %: on the line, unjudged
    (DIFFER.format(ends="1.0 % to 9.2 %"), True),  # surely above 0: it can tell them apart
    (DIFFER.format(ends="0.5 % to 9.2 %"), True),
    (DIFFER.format(ends="0.0 % to 9.2 %"), False),  # 0.0 % may be -0.04 %: unjudged
    (DIFFER.format(ends="-9.0 % to 0.5 %"), False),
    # 0.910x (0.9095x to 0.9105x) is a gain of -9.95 % to -9.83 %, 1.05x 4.5 % to 5.0 %: within 10 % either way
    (SPEEDUP.format(x="1.00x", ci="0.910x to 1.05x", words=EITHER), True),
    # 0.90x (0.895x to 0.905x) is a gain of -11.7 % to -10.5 %: surely a difference of 10 % or more
    (SPEEDUP.format(x="0.95x", ci="0.90x to 1.04x", words=ANY), True),
    # 3.6x to 4.4x: a gain of 72 % to 77 %, 0.3x to 0.4x one of -233 % to -150 %: far from every line
    (SPEEDUP.format(x="4.0x", ci="3.6x to 4.4x", words="cannot tell it from the default"), True),
    (SPEEDUP.format(x="0.35x", ci="0.3x to 0.4x", words="cannot tell it from the default"), True),
])
def test_a_gain_s_end_is_judged_against_each_line_by_its_own_rounding(text, wrong):
    found = words.check_differ(Claim(text))
    assert bool(found) is wrong and all(p.kind == "differ" for p in found), found


# -- trend: a rise or fall needs both the intervals apart and the figures 0.05 apart ----------------------------

TREND = "The serial fraction of ddp with mlp-xs (batch 16/rank) {word} {figures} over world size 2 to 4{tail}"
UNSURE = ": cannot tell whether it rises, falls or stays with 3 launches."


def trend(word: str, figures: tuple, tail: str = ".") -> list:
    a, al, ah, b, bl, bh = figures
    said = f"{a} (95 % CI {al} to {ah}) to {b} (95 % CI {bl} to {bh})"
    return [p.expected for p in words.check_trend(Claim(TREND.format(word=word, figures=said, tail=tail)))]


@pytest.mark.parametrize("word, figures, right", [
    # intervals apart, but the figures only 0.03 apart: neither a rise nor a fall
    ("rises from", ("0.10", "0.08", "0.10", "0.13", "0.12", "0.15"), "cannot tell"),
    ("falls from", ("0.13", "0.12", "0.15", "0.10", "0.08", "0.10"), "cannot tell"),
    # figures 0.20 apart, but the intervals overlap
    ("falls from", ("0.30", "0.10", "0.50", "0.10", "0.05", "0.35"), "cannot tell"),
])
def test_a_trend_word_needs_both_its_intervals_and_its_figures_apart(word, figures, right):
    assert [said.rsplit("the intervals say ", 1)[1] for said in trend(word, figures)] == [repr(right)]


@pytest.mark.parametrize("word, figures, tail", [
    # 0.12 and 0.12 as written: whether the second interval lies above the first depends on digits not shown
    ("goes from", ("0.10", "0.08", "0.12", "0.30", "0.12", "0.48"), UNSURE),
    # 0.01 and 0.02 as written may both be 0.015: the same, at the figures' rounding
    ("goes from", ("0.01", "0.00", "0.01", "0.10", "0.02", "0.18"), UNSURE),
    ("falls from", ("0.10", "0.01", "0.20", "0.02", "0.00", "0.02"), "."),
    # a line that calls no trend ("goes from" without "cannot tell") is not judged
    ("goes from", ("0.10", "0.08", "0.12", "0.30", "0.28", "0.32"), "."),
])
def test_a_trend_within_the_figures_rounding_of_a_rule_or_not_called_is_unjudged(word, figures, tail):
    assert trend(word, figures, tail) == []


def test_stays_is_right_where_neither_interval_reaches_past_the_other_by_the_margin():
    figures = ("0.20", "0.19", "0.21", "0.21", "0.20", "0.22")  # 0.03 apart at most
    assert trend("stays near 0.20 (", figures, ").") == []
    assert trend("goes from", figures, UNSURE) == [
        "says 'cannot tell' of a serial fraction going from 0.20 (95 % CI 0.19 to 0.21) to 0.21 (95 % CI 0.20 to "
        "0.22); the intervals say 'stays'"]
