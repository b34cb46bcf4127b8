"""ddpbench.audit.directions on sentences of one bucket sweep at world size 2: bucket 1 MB steps about 12.0 ms
against 25 MB's 14.0 (so 1 MB is the faster), each direction word held to that by hand; and the signed step
change and the rank's "N % slower than the other ranks" held to their sign."""

from __future__ import annotations

import pytest

from ddpbench.audit import Claim, derive
from ddpbench.audit.directions import check_directions
from ddpbench.experiment.spec import spec_from_dict
from ddpbench.testing.records import ResultsFolder, job, result_for


def _sweep(path, steps: dict):
    results = ResultsFolder(path)
    for cap, launches in steps.items():
        spec = job(world_size=2, bucket_cap_mb=cap)
        for repeat, step in enumerate(launches):
            results.launch(spec_from_dict(spec), repeat, result=result_for(spec, step, repeat=repeat))
    return derive(path)


@pytest.fixture(scope="module")
def fig(tmp_path_factory):
    return _sweep(tmp_path_factory.mktemp("directions"), {25.0: (14.0, 14.6, 13.5), 1.0: (12.0, 12.3, 11.6)})


def kinds(fig, text: str) -> list[str]:
    return [p.kind for p in check_directions(fig, Claim(text), list(fig.ok().index))]


def test_the_subject_is_what_the_last_colon_before_the_figure_leaves(fig):
    """The setting a "N % faster than" sets against the other is the text after the last colon before the
    figure: a colon after the figure, or an earlier one before other caps, changes nothing."""
    assert kinds(fig, "ws=2 bucket 1 MB 16.3 % faster than ws=2 bucket 25 MB: as expected") == []
    assert kinds(fig, "ws=2 bucket 1 MB 16.3 % slower than ws=2 bucket 25 MB: the wrong way round") == ["direction"]
    assert kinds(fig, "sweep: 25 MB is the default: ws=2 bucket 1 MB 16.3 % slower than ws=2 bucket 25 MB") == [
        "direction"]


def test_every_comparison_of_a_sentence_is_checked(fig):
    """A first comparison that names a cap no job ran, or that holds, does not end the check: a wrong
    direction after it is caught too."""
    assert kinds(fig, "ws=2 bucket 1 MB 5 % faster than bucket 50 MB; and: ws=2 bucket 1 MB 16.3 % slower than "
                      "ws=2 bucket 25 MB") == ["job", "direction"]
    assert kinds(fig, "ws=2 bucket 1 MB 16.3 % faster than ws=2 bucket 25 MB; so: ws=2 bucket 25 MB 14 % faster "
                      "than ws=2 bucket 1 MB") == ["direction"]


def test_faster_on_an_exact_tie_is_a_wrong_direction(tmp_path):
    """Two caps whose launches took the very same steps: neither is faster, so "faster" is wrong."""
    tie = _sweep(tmp_path, {25.0: (12.0, 12.3, 11.6), 1.0: (12.0, 12.3, 11.6)})
    one, two = tie.ok().index
    assert tie.launch_ms[one] == tie.launch_ms[two]
    assert kinds(tie, "ws=2 bucket 1 MB 0.0 % faster than ws=2 bucket 25 MB") == ["direction"]


def test_a_signed_change_and_a_slow_rank_below_one_percent_keep_their_sign(fig):
    """+0.5 % is a longer step, slower, however small; a rank computing 0.5 % longer is slower."""
    assert kinds(fig, "ws=2 bucket 25 MB is slower than ws=2 bucket 1 MB: +0.5 %") == []
    assert kinds(fig, "ws=2 bucket 25 MB is faster than ws=2 bucket 1 MB: +0.5 %") == ["direction"]
    assert kinds(fig, "rank 1 of ws=2 computes 0.5 % slower than the other ranks") == []
    assert kinds(fig, "rank 1 of ws=2 computes 0.5 % faster than the other ranks") == ["direction"]


def test_a_rank_0_percent_off_the_others_says_no_direction(fig):
    """0 % is neither slower nor faster: either word says nothing wrong, as 1x the throughput or a change
    of +0 % says nothing (before, "0 % slower" was flagged as "slower, not slower")."""
    assert kinds(fig, "rank 1 of ws=2 computes 0 % slower than the other ranks") == []
    assert kinds(fig, "rank 1 of ws=2 computes 0 % faster than the other ranks") == []
