"""The suite's shared launches (ddpbench.testing.scheduling): a sweep, a cluster or a report that a fixture
starts once for the tests that look at it is started once. tests/conftest.py counts each start in the
fixture's declared scope and fails the test whose setup would start it again (a fixture made
function-scoped by mistake: tests/processes/report/test_browser.py's ``report`` so made failed its
three later tests with :class:`SharedLaunchAgain`)."""

import re

import pytest

from ddpbench.testing import ROOT
from ddpbench.testing.scheduling import SHARED, SharedLaunchAgain, Starts

SHARED_HERE = {("conftest.py", "sweep"): "session", ("tests/test_a.py", "cluster"): "module",
               ("tests/test_a.py", "grid"): "module"}


def test_a_session_s_launch_is_started_once_whatever_file_asks_first():
    starts = Starts(SHARED_HERE)
    assert starts.start("conftest.py", "sweep", "") == 1
    with pytest.raises(SharedLaunchAgain, match=r"sweep \(conftest.py\) started 2 times in this session: it is "
                                                r"started once a session"):
        starts.start("conftest.py", "sweep", "")


def test_a_module_s_launch_is_started_once_a_test_file():
    starts = Starts(SHARED_HERE)
    assert starts.start("tests/test_a.py", "cluster", "tests/test_a.py") == 1
    assert starts.start("tests/test_a.py", "cluster", "tests/test_b.py") == 1  # another file: its own
    with pytest.raises(SharedLaunchAgain, match="started 2 times in the test file tests/test_a.py"):
        starts.start("tests/test_a.py", "cluster", "tests/test_a.py")  # what a function-scoped one does


def test_each_parameter_is_its_own_launch_and_a_fixture_not_shared_is_not_counted():
    starts = Starts(SHARED_HERE)
    assert starts.start("tests/test_a.py", "grid", "tests/test_a.py", 1) == 1
    assert starts.start("tests/test_a.py", "grid", "tests/test_a.py", 2) == 1
    with pytest.raises(SharedLaunchAgain):
        starts.start("tests/test_a.py", "grid", "tests/test_a.py", 1)
    for _ in range(3):
        assert starts.start("tests/test_a.py", "tmp_path", "tests/test_a.py") == 1
        assert starts.start("tests/test_c.py", "cluster", "tests/test_c.py") == 1  # same name, another file's


def test_every_shared_launch_is_a_fixture_of_its_file_with_its_scope():
    """A fixture renamed or moved would be counted no more, silently."""
    for (where, name), scope in SHARED.items():
        source = (ROOT / where).read_text()
        found = re.search(rf"@pytest\.fixture\(([^)]*)\)\ndef {name}\(", source)
        assert found, f"{where} defines no fixture {name}"
        assert f'scope="{scope}"' in found.group(1), f"{where}'s {name} is not {scope}-scoped"
