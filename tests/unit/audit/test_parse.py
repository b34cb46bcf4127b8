"""Sentences taken apart (ddpbench.audit.parse): the figures a sentence quotes with their units and places, the
job labels blanked before numbers are read, the intervals and the figure each belongs to, and when a figure
written at its precision is a number computed from the launches."""

from __future__ import annotations

import math

import pytest

from ddpbench.audit import parse


def read(text: str, labels=()) -> list[tuple[str, str]]:
    return [(q.text, q.unit) for q in parse.numbers(text, labels)]


# -- Quoted.matches: half a last digit either way ---------------------------------------------------------------

def quoted(text: str) -> parse.Quoted:
    return parse.Quoted(float(text), "ms", parse.digits(text), 0, len(text), text)


def test_a_figure_half_a_digit_from_the_number_as_written_matches_it_and_no_further():
    assert quoted("0.15").matches(0.145) and quoted("0.15").matches(0.155)  # either may be written 0.15
    assert not quoted("0.15").matches(0.1449) and not quoted("0.15").matches(0.1551)
    assert quoted("40").matches(40.5) and not quoted("40").matches(40.51)


@pytest.mark.parametrize("text", ["12", "12.5", "0.42", "0.125", "1.0625", "0.000001", "1.000000001"])
def test_a_number_matches_its_own_value_at_any_precision(text):
    assert quoted(text).matches(float(text))


def test_nan_matches_no_number():
    assert not quoted("0.15").matches(math.nan)
    assert not quoted("0.15").matches(math.nan, slack=1.0)


# -- numbers: labels blanked, lists, serial fractions, bare intervals --------------------------------------------

@pytest.mark.parametrize("labels", [["mlp-l", "2x mlp-l"], ["2x mlp-l", "mlp-l"]])
def test_a_label_inside_a_longer_one_leaves_none_of_the_longer_one_read(labels):
    # "2x mlp-l" is a model's name: its "2x" is no speedup; blanking "mlp-l" first would leave it to be read
    assert read("2x mlp-l, batch 16/rank: 89.7 ms a step, 1.38x the throughput of one rank", labels) == [
        ("89.7", "ms"), ("1.38", "x")]


def test_a_list_of_bucket_sizes_is_read_each_once_in_its_place_beside_the_count_before_it():
    text = ("Bucket caps 1 MB and 2 MB gave DDP with mlp-s the same 12 bucket(s) ([1.0, 2.0, 3.0, 4.0] MB): one "
            "setting, measured 6 times.")
    found = parse.numbers(text)
    assert [(q.text, q.unit) for q in found] == [("1", "MB"), ("2", "MB"), ("12", "buckets"), ("1.0", "MB"),
                                                 ("2.0", "MB"), ("3.0", "MB"), ("4.0", "MB"), ("6", "times")]
    assert all(text[q.start:q.end] == q.text for q in found)
    assert [q.start for q in found[3:7]] == [text.index(s, text.index("[")) for s in ("1.0", "2.0", "3.0", "4.0")]


def test_a_serial_fraction_s_figures_are_read_as_e():
    text = ("The serial fraction of ddp with mlp-m (batch 32/rank) goes from 0.94 to 1.31 over world size 2 to 4: "
            "cannot tell whether it rises, falls or stays with 1 launch. An e of 1 or more (here 1.31) means no "
            "speedup over one rank at all.")
    assert read(text) == [("0.94", "e"), ("1.31", "e"), ("2", "ws"), ("4", "ws"), ("1", "launches"), ("1.31", "e")]
    text = ("The serial fraction of ddp with mlp-xs (batch 16/rank) rises from 0.10 (95 % CI 0.08 to 0.12) to 0.30 "
            "(95 % CI 0.28 to 0.32) over world size 2 to 4")
    assert read(text) == [("0.10", "e"), ("0.08", "e"), ("0.12", "e"), ("0.30", "e"), ("0.28", "e"), ("0.32", "e"),
                          ("2", "ws"), ("4", "ws")]


def test_a_bare_interval_takes_the_unit_of_the_figure_before_it_or_x():
    assert read("at world size 2: 0.16x (95 % CI 0.14 to 0.17)") == [("2", "ws"), ("0.16", "x"), ("0.14", "x"),
                                                                      ("0.17", "x")]
    assert read("a step of 12.0 ms (95 % CI 11.5 to 12.5)") == [("12.0", "ms"), ("11.5", "ms"), ("12.5", "ms")]
    assert read("the ratio (95 % CI 0.14 to 0.17)") == [("0.14", "x"), ("0.17", "x")]


# -- intervals: the figure each belongs to ---------------------------------------------------------------------

def intervals(text: str) -> list[tuple]:
    return [(i.point.text, i.low.text, i.high.text, tuple(q.text for q in i.held))
            for i in parse.intervals(text, parse.numbers(text))]


def test_an_interval_belongs_to_the_figure_it_holds_an_end_included():
    # the exposed 12.0 ms is the low end as written, 13.0 ms the high end: each is the point, not the step
    assert intervals("(12.0 ms of 40.0 ms; 95 % CI 12.0 to 13.0 ms)") == [("12.0", "12.0", "13.0", ("12.0",))]
    assert intervals("(13.0 ms of 40.0 ms; 95 % CI 12.0 to 13.0 ms)") == [("13.0", "12.0", "13.0", ("13.0",))]


def test_an_interval_of_a_change_holds_its_figure_by_either_sign():
    assert intervals("mlp-s is 31.1 % faster (95 % CI of the change -47.4 % to -13.7 %)") == [
        ("31.1", "-47.4", "-13.7", ("31.1",))]


def test_an_interval_that_holds_no_figure_belongs_to_the_nearest_before_it():
    assert intervals("5.0 ms of 40.0 ms (95 % CI 6.0 to 9.0 ms)") == [("40.0", "6.0", "9.0", ())]


def test_an_earlier_interval_s_ends_are_never_a_later_one_s_figures():
    text = "A 5.0 ms (95 % CI 4.0 to 6.0 ms); B 4.2 ms (95 % CI 3.5 to 4.5 ms)"
    assert intervals(text) == [("5.0", "4.0", "6.0", ("5.0",)), ("4.2", "3.5", "4.5", ("4.2",))]


def test_an_interval_phrase_whose_ends_are_not_both_figures_is_no_interval():
    assert intervals("89.7 ms a step, measured between 2 and 4 nodes") == []  # counts, not figures
    assert intervals("a step of 5.0 ms, between 4.0 ms and 2 nodes") == []
