"""Conclusion words held to the interval beside them (ddpbench.audit.words): "significant" where the
quoted 95 % interval excludes no change, "not significant" where it includes it."""

from __future__ import annotations

import pytest

from ddpbench.audit import parse
from ddpbench.audit.problem import Claim
from ddpbench.audit.words import check_significance


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
