"""The hypothesis tests' example counts (ddpbench.testing.fuzzing): the full count under hypothesis's
default profile (the whole suite), a fifth under the inner loop's, never below ten unless asked for fewer."""

import pytest
from hypothesis import settings

from ddpbench.testing.fuzzing import FULL_SCALE, INNER_PROFILE, examples


@pytest.fixture
def profile():
    """Loads a profile by name for one test, then the one loaded before."""
    before = settings.default
    yield settings.load_profile
    settings.register_profile("_before", before)
    settings.load_profile("_before")


def test_the_default_profile_draws_the_full_count(profile):
    profile("default")
    assert settings.default.max_examples == FULL_SCALE
    assert [examples(n) for n in (5, 15, 60, 1500)] == [5, 15, 60, 1500]


def test_the_inner_loop_draws_a_fifth_and_at_least_ten(profile):
    profile(INNER_PROFILE)
    assert [examples(n) for n in (5, 15, 60, 1500)] == [5, 10, 12, 300]


def test_a_profile_of_more_examples_draws_more(profile):
    settings.register_profile("_thorough", max_examples=1000)
    profile("_thorough")
    assert examples(1500) == 15000
