"""One results folder, one sweep (:mod:`ddpbench.files.folders`): the lock, the folder rules, no
writes through links, and work and log paths of one sweep that no other sweep shares."""

import itertools
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddpbench.cli.program import main
from ddpbench.errors import InputError
from ddpbench.files import writing
from ddpbench.files.folders import (
    DIR_ENTRIES,
    FILE_ENTRIES,
    LOCK,
    MARKER,
    OWNER,
    SWEEP_ENTRIES,
    WRITE_PROBE,
    foreign_entries,
)
from ddpbench.files.writing import claimed
from ddpbench.results.history import MACHINE_FILE, store_claim
from ddpbench.results.store import ResultStore
from ddpbench.sweep.runner import run_sweep
from ddpbench.testing import TINY, write_experiment
from ddpbench.testing.fuzzing import examples
from ddpbench.testing.launchers import ENV, FakeLauncher

# ---------------------------------------------------------------------------------------------
# the lock
# ---------------------------------------------------------------------------------------------


def test_a_second_claim_is_refused_with_the_folder_and_the_running_pid(tmp_path):
    out = tmp_path / "out"
    with claimed(out):
        assert json.loads((out / OWNER).read_text())["pid"] == os.getpid()
        with pytest.raises(InputError) as refused:
            with claimed(out):
                pass
    text = str(refused.value)
    assert str(out) in text and f"pid {os.getpid()}" in text and "--wait" in text and "\n" not in text
    assert not (out / OWNER).exists() and (out / MARKER).is_file()
    with claimed(out):  # released: the next sweep gets it
        pass


# ---------------------------------------------------------------------------------------------
# whose folder, and links: generated folder states
# ---------------------------------------------------------------------------------------------

#: what may sit at a name in a folder before a sweep claims it
KINDS = ("file", "dir", "link-out", "missing")
NAMES = (*SWEEP_ENTRIES, "notes.txt", "index.html", "data")


def make_entry(folder, name, kind, outside):
    path = folder / name
    if kind == "file":
        path.write_text("{}\n" if name == "results.jsonl" else "mine\n")
    elif kind == "dir":
        path.mkdir()
    elif kind == "link-out":
        path.symlink_to(outside)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(state=st.dictionaries(st.sampled_from(NAMES), st.sampled_from(KINDS), max_size=5), force=st.booleans(),
       marked=st.sampled_from([None, "results", "compare", "store"]))
def test_a_folder_is_claimed_only_when_it_is_new_empty_ours_or_forced_and_never_through_a_link(
        tmp_path_factory, state, force, marked):
    """A marker names its folder's kind: only a results folder's (or an unnamed marker beside a sweep's
    own names alone) makes the folder a sweep's without --force; another kind's is refused even with it."""
    root = tmp_path_factory.mktemp("state")
    outside = root / "outside.txt"
    outside.write_text("the user's own file\n")
    folder = root / "out"
    folder.mkdir()
    for name, kind in state.items():
        make_entry(folder, name, kind, outside)
    if marked is not None and state.get(MARKER) in (None, "missing"):
        (folder / MARKER).write_text(json.dumps({"written_by": "ddpbench", "kind": marked}))
        state = {**state, MARKER: "file"}
    else:
        marked = None
    present = {name: kind for name, kind in state.items() if kind != "missing"}
    linked = [name for name, kind in present.items() if kind == "link-out" and name in SWEEP_ENTRIES]
    misplaced = [name for name, kind in present.items()
                 if (name in FILE_ENTRIES and kind == "dir") or (name in DIR_ENTRIES and kind == "file")]
    others = [name for name in present if name not in (LOCK, OWNER, MARKER)]
    ours = marked == "results" or "results.jsonl" in present or (
        marked is None and present.get(MARKER) == "file" and all(name in SWEEP_ENTRIES for name in others))
    another_kind = marked in ("compare", "store")  # the marker is what the folder is, whatever it holds
    allowed = not linked and not misplaced and not another_kind and (force or ours or not others)
    try:
        with claimed(folder, force=force):
            ResultStore(folder).append({"kind": "sweep", "sweep_id": "x"})
        claimed_it = True
    except InputError as err:
        claimed_it = False
        assert "\n" not in str(err) and str(folder) in str(err)
        assert not another_kind or linked or misplaced or f"is a {marked}" in str(err).replace("history store", "store")
    assert claimed_it == allowed, (present, force, marked)
    assert outside.read_text() == "the user's own file\n"  # nothing written outside the folder
    if claimed_it:
        assert (folder / MARKER).is_file() and not (folder / MARKER).is_symlink()
        assert json.loads((folder / MARKER).read_text())["kind"] == "results"


def test_the_store_never_appends_through_a_link(tmp_path):
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text("")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "results.jsonl").symlink_to(outside)
    with pytest.raises(OSError):
        ResultStore(tmp_path / "out").append({"kind": "sweep"})
    assert outside.read_text() == ""


@pytest.mark.parametrize("link", ["results.jsonl", "logs"])
def test_resume_through_a_link_is_one_line(tmp_path, link, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exp = write_experiment(tmp_path / "tiny.toml", TINY)
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.jsonl").write_text("")
    (out / MARKER).write_text("")
    target = tmp_path / ("elsewhere.jsonl" if link == "results.jsonl" else "elsewhere")
    if link == "logs":
        target.mkdir()
    else:
        (out / "results.jsonl").unlink()
        target.write_text("")
    (out / link).symlink_to(target)
    assert main(["sweep", str(exp), "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{out / link} is a symbolic link" in err[0]
    assert (target.read_text() == "") if target.is_file() else not list(target.iterdir())


def test_a_folder_ddpbench_did_not_write_is_refused_unless_forced(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exp = write_experiment(tmp_path / "tiny.toml", TINY)
    out = tmp_path / "mine"
    out.mkdir()
    (out / "index.html").write_text("my page")
    (out / ".work").mkdir()
    assert main(["sweep", str(exp), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "did not write" in err[0] and "'index.html'" in err[0] and "--force" in err[0]
    assert (out / "index.html").read_text() == "my page" and (out / ".work").is_dir()
    assert sorted(p.name for p in out.iterdir()) == [".work", "index.html"]


@pytest.mark.parametrize("name", [f"{MARKER}.15521.tmp", f"{OWNER}.7.tmp"])
def test_another_nodes_marker_being_written_is_not_a_file_ddpbench_did_not_write(tmp_path, name):
    """Two nodes of a torchrun sweep claim one shared --out at once: node 0's marker (or owner note) is
    written to NAME.PID.tmp and renamed, and node 1 may list the folder in between (as a CI run saw:
    node 1 refused the folder, node 0 waited out its timeout). A name only like it stays foreign."""
    out = tmp_path / "shared"
    out.mkdir()
    (out / name).write_text("{}")
    assert foreign_entries(out) == []
    with claimed(out):
        assert (out / MARKER).is_file()
    for like in (f"{MARKER}.tmp", f"{MARKER}.x1.tmp", f"{MARKER}.15521", f"notes.{MARKER}.1.tmp",
                 "results.jsonl.1.tmp"):
        other = tmp_path / like
        other.mkdir()
        (other / name).write_text("{}")
        (other / like).write_text("")
        assert foreign_entries(other) == [like], like


def test_another_commands_write_probe_is_not_a_file_ddpbench_did_not_write(tmp_path):
    """Two nodes of a torchrun sweep check one shared --out at once: the empty file one writes and
    removes to find the folder writable is there for an instant, and must not make the other refuse
    the folder (as a CI run saw)."""
    out = tmp_path / "shared"
    out.mkdir()
    (out / f"{WRITE_PROBE}12345").write_bytes(b"")  # node 0's probe, caught before it is removed
    with claimed(out):
        assert (out / MARKER).is_file()
    # beside a file of the user's, the probe is still not named, and the folder is still refused
    other = tmp_path / "other"
    other.mkdir()
    (other / f"{WRITE_PROBE}1").write_bytes(b"")
    (other / "index.html").write_text("my page")
    assert foreign_entries(other) == ["index.html"]

# ---------------------------------------------------------------------------------------------
# work and log paths of one sweep
# ---------------------------------------------------------------------------------------------


class PathsLauncher(FakeLauncher):
    """Records the work and log folders it is given, and leaves a log in each."""

    def launch(self, spec, repeat, work_dir, log_dir, timeout_s, stall_s=None):
        self.seen = getattr(self, "seen", []) + [(work_dir, log_dir)]
        log_dir.mkdir(parents=True, exist_ok=True)
        (log_dir / f"{spec.key}-r{repeat}.rank0.log").write_text(f"{work_dir}\n")
        outcome = super().launch(spec, repeat, work_dir, log_dir, timeout_s)
        outcome.logs = [str(log_dir / f"{spec.key}-r{repeat}.rank0.log")]
        return outcome


def test_each_sweep_has_its_own_work_and_log_folders_and_a_rerun_keeps_the_logs_kept_results_name(
        experiment, cpu_machine, tmp_path):
    (tmp_path / ".work" / "0123456789ab").mkdir(parents=True)  # left by a sweep killed earlier
    first, second = PathsLauncher(), PathsLauncher()
    one = run_sweep(experiment, tmp_path, launcher=first, machine=cpu_machine, env=ENV)
    two = run_sweep(experiment, tmp_path, launcher=second, machine=cpu_machine, env=ENV)
    assert one.sweep_id != two.sweep_id
    for launcher, sweep in ((first, one), (second, two)):
        assert {work.parent for work, _ in launcher.seen} == {tmp_path / ".work" / sweep.sweep_id}
        assert {log for _, log in launcher.seen} == {tmp_path / "logs" / sweep.sweep_id}
    assert not (tmp_path / ".work").exists()  # its own removed, and the stale one
    kept = next(tmp_path.glob("results.*.jsonl"))
    logs = [path for line in kept.read_text().splitlines() for path in json.loads(line).get("logs") or []]
    assert len(logs) == 6 and all(str(one.sweep_id) in path and os.path.exists(path) for path in logs)


def _filer_steps(store):
    """What another ``history add`` writes into a new store while it holds it, in its order: the
    marker, then its machine folder, then the machine's fingerprint in it."""
    home = store / "cpu-2-cores-torch-2.13.0"
    return [lambda: (store / MARKER).write_text(json.dumps({"written_by": "ddpbench", "kind": "store"}) + "\n"),
            lambda: home.mkdir(),
            lambda: (home / MACHINE_FILE).write_text("{}\n")]


@pytest.mark.parametrize("schedule", list(itertools.combinations_with_replacement(range(7), 3)))
def test_a_store_another_filer_is_writing_is_never_taken_for_someone_elses(tmp_path, monkeypatch, schedule):
    """The claim's checks run without the lock while another filer writes: whatever point of its
    writes each of the checks' looks falls between (every order, ``schedule[i]``: the look that
    step ``i`` comes before), the store is a history store, never "files ddpbench did not write"."""
    store = tmp_path / "store"
    store.mkdir()
    (store / LOCK).write_text("")
    steps, looks = _filer_steps(store), [0]

    def look(read):
        def observed(*args, **kwargs):
            for step, at in zip(steps, schedule, strict=True):
                if at == looks[0]:
                    step()
            looks[0] += 1
            return read(*args, **kwargs)
        return observed

    monkeypatch.setattr(os, "listdir", look(os.listdir))
    monkeypatch.setattr(writing, "marker", look(writing.marker))
    assert writing.refusal(store, store_claim(), force=False) == ""
