"""A count with its noun (ddpbench.analysis.core.values.counted): "1 job", never "1 job(s)"."""

import pytest

from ddpbench.analysis.core.values import counted


@pytest.mark.parametrize("n, noun, said", [
    (1, "job", "1 job"), (2, "job", "2 jobs"), (0, "job", "0 jobs"), (1, "launch", "1 launch"),
    (3, "launch", "3 launches"), (2, "series", "2 series"), (1, "series", "1 series"), (2, "entry", "2 entries"),
    (2, "change point", "2 change points"), (2, "day", "2 days"), (5, "commit", "5 commits"),
])
def test_a_count_takes_its_nouns_number(n, noun, said):
    assert counted(n, noun) == said


def test_an_irregular_plural_is_given():
    assert counted(2, "child", "children") == "2 children" and counted(1, "child", "children") == "1 child"
