"""The garbage collector paused while a process imports what it keeps (ddpbench.gc_pause): paused by
``python -m ddpbench`` and the fork server, resumed as a command starts (a sweep: before its first
launch; a report: never), what was alive then frozen out of the collector's way."""

from __future__ import annotations

import gc

import pytest

from ddpbench import gc_pause
from ddpbench.testing import ROOT, run_main


@pytest.fixture
def restored():
    """The collector as it was before the test, and none of the test's freezing left behind."""
    was, frozen = gc.isenabled(), gc.get_freeze_count()
    yield
    gc_pause._paused = False
    if gc.get_freeze_count() > frozen:
        gc.unfreeze()
    (gc.enable if was else gc.disable)()


def test_pause_then_resume_turns_it_back_on_with_what_lived_frozen(restored):
    gc.enable()
    gc_pause.pause()
    assert not gc.isenabled() and gc_pause.paused()
    kept = [object() for _ in range(1000)]  # noqa: F841 (alive as it resumes)
    before = gc.get_freeze_count()
    gc_pause.resume()
    assert gc.isenabled() and not gc_pause.paused() and gc.get_freeze_count() >= before + 1000
    gc_pause.resume()  # once only
    assert gc.isenabled()


def test_a_collector_someone_else_turned_off_stays_off(restored):
    gc.disable()
    gc_pause.pause()
    assert not gc_pause.paused()
    gc_pause.resume()
    assert not gc.isenabled()


def test_a_command_resumes_it_as_it_starts(restored, tmp_path):
    gc.enable()
    gc_pause.pause()
    # a command that is neither a sweep nor a report, and imports no framework
    done = run_main("export-benchmark", ROOT / "reports" / "examples" / "quick-cpu", "--out", tmp_path / "b.json")
    assert done.returncode == 0, done.stderr
    assert gc.isenabled() and not gc_pause.paused()
