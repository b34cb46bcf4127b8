"""One side of an A/B: a sweep's rounds on the word of the A/B, through two pipes."""

from __future__ import annotations

import os

import pytest

from ddpbench.errors import InputError
from ddpbench.sweep import paced
from ddpbench.sweep.paced import PacedRounds, parse_descriptors
from ddpbench.testing.comparing import job_spec


@pytest.fixture
def pipes(monkeypatch):
    monkeypatch.setattr(paced.forked, "needed", lambda specs: False)  # no fork server to wait for here
    ask_read, ask_write = os.pipe()
    answer_read, answer_write = os.pipe()
    yield (ask_read, answer_write), os.fdopen(ask_write, "w"), os.fdopen(answer_read)


def test_rounds_come_on_the_word_numbered_by_the_round_in_their_seed_s_order(pipes, tmp_path):
    descriptors, ask, answers = pipes
    specs = [job_spec(1), job_spec(2), job_spec(4)]
    rounds = PacedRounds(specs, tmp_path, descriptors)
    ask.write(f"round 0 7\nround 1 8 {specs[2].key},{specs[0].key}\nstop\n")
    ask.flush()
    first = rounds.first()
    assert answers.readline() == "ready\n"
    assert {launch.repeat for launch in first} == {0} and sorted(s.key for s in specs) == sorted(
        launch.spec.key for launch in first)
    assert all(launch.work_dir == tmp_path / ".work" / f"{launch.spec.key}-r0" for launch in first)
    second = rounds.next_round()
    assert answers.readline() == "done 0\n" and {launch.repeat for launch in second} == {1}
    assert sorted(launch.spec.key for launch in second) == sorted([specs[0].key, specs[2].key])  # those listed
    assert rounds.next_round() == [] and answers.readline() == "done 1\n"
    orders = {tuple(spec.key for spec in rounds._order(seed)) for seed in range(20)}
    assert len(orders) == 6  # every order of three jobs comes up: the seed shuffles them
    rounds.close()


def test_the_end_of_the_pipe_ends_the_rounds(pipes, tmp_path):
    descriptors, ask, answers = pipes
    rounds = PacedRounds([job_spec(1)], tmp_path, descriptors)
    ask.close()  # the A/B is gone
    assert rounds.first() == []
    rounds.close()


@pytest.mark.parametrize("text", ["", "3", "a,b", "1,2,3", "999,998"])
def test_descriptors_that_are_not_two_open_ones_are_refused_in_one_line(text):
    with pytest.raises(InputError, match="--paced"):
        parse_descriptors(text)
