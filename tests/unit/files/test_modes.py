"""Issue 83: what ddpbench makes follows the user's umask, as ``open`` and ``mkdir`` do: a folder 0777
and a file 0666 less the umask. Under 002 a store a group shares is the group's to read and write (a
store's entry was 0700, ``ab.json`` 0600, a report's files 0644 whatever the umask)."""

from __future__ import annotations

import os
import stat

import pytest

from ddpbench.files import sidefiles
from ddpbench.files.folders import LOCK, MARKER
from ddpbench.files.sidefiles import replace_file
from ddpbench.results.history import MACHINE_FILE, file_results
from ddpbench.sweep.ab import LOG_FILE, Outcome, SidePlan, write_log
from ddpbench.testing.records import ResultsFolder


@pytest.fixture(params=[0o022, 0o002], ids=["umask-022", "umask-002"])
def mask(request):
    before = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(before)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_umask_is_read_without_changing_it(mask):
    assert sidefiles.umask() == mask
    assert os.umask(mask) == mask  # still the one set


def test_a_store_entry_follows_the_umask(tmp_path, mask):
    results = tmp_path / "results"
    ResultsFolder(results)
    entry = file_results(tmp_path / "history", results, commit="1a2b3c4")
    folders = [tmp_path / "history", entry.path.parent, entry.path]
    files = [entry.path.parent / MACHINE_FILE, entry.path / "entry.json", entry.path / "results.jsonl"]
    assert {str(p): oct(mode(p)) for p in folders} == {str(p): oct(0o777 & ~mask) for p in folders}
    assert {str(p): oct(mode(p)) for p in files} == {str(p): oct(0o666 & ~mask) for p in files}


def test_ab_json_and_a_pages_files_follow_the_umask(tmp_path, mask):
    plans = [SidePlan(name, f"{name}.toml", tmp_path, str(tmp_path / f"{name}.toml")) for name in ("A", "B")]
    write_log(tmp_path, plans, Outcome(stopped="test"), seed=1)
    replace_file(tmp_path / "index.html", "<html></html>\n")
    for name in (LOG_FILE, "index.html"):
        assert oct(mode(tmp_path / name)) == oct(0o666 & ~mask), name


def test_a_stores_lock_and_marker_follow_the_umask(tmp_path, mask):
    """A group member filing into a shared store opens its lock to take it: 0644 would refuse them."""
    test_a_store_entry_follows_the_umask(tmp_path, mask)
    for name in (LOCK, MARKER):
        assert oct(mode(tmp_path / "history" / name)) == oct(0o666 & ~mask), name
