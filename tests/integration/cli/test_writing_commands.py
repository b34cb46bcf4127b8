"""Every command that writes a folder keeps to one writer's contract (:mod:`ddpbench.files.writing`):
compare --out, report --out, history page --out and history add --store, each over the same generated
targets. An empty path, a link, a file, a path under a file, a folder of someone else's files (without
--force) and a folder that cannot be written are one line and exit 2, and nothing is written; with
--force only the command's own files are replaced; a folder the command wrote takes it again. A folder
of another kind (a sweep's results, a compare folder, a store) is refused, --force or not, and one
--force blesses a folder for its own command and run only."""

from __future__ import annotations

import errno
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ddpbench.errors import InputError
from ddpbench.files.folders import CONTROL, MARKER, WRITE_PROBE
from ddpbench.files.writing import COMPARE, Claim, holding
from ddpbench.results.history import file_results, fingerprint, machine_id, store_claim
from ddpbench.testing import TINY, run_main, write_experiment
from ddpbench.testing.cli import snapshot
from ddpbench.testing.histories import synthetic_history
from ddpbench.testing.records import ENV, ok, write_results

COMMANDS = ("compare", "report", "page", "add")
#: a file each command writes, which a user's file of that name is replaced by under --force
OWN = {"compare": "index.html", "report": "index.html", "page": "trend.csv", "add": None}
FLAG = {"compare": "--out", "report": "--out", "page": "--out", "add": "--store"}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("inputs")
    results = write_results(root / "results", [ok(10.0, world_size=1), ok(6.0, world_size=2)])
    store = synthetic_history(root / "history", [10.0] * 3, [10.0] * 3)
    return results, store


@pytest.fixture(autouse=True)
def no_git(monkeypatch):
    """history add's commit without git (a process): its check is tested in tests/processes/cli."""
    monkeypatch.setattr("ddpbench.sweep.revisions.commit", lambda repo, rev, flag: "abcdef1" + "0" * 33)
    monkeypatch.setattr("ddpbench.sweep.revisions.commit_date", lambda repo, sha: None)


def argv(command, inputs, target) -> list:
    results, store = inputs
    return {"compare": ["compare", results, results, "--out", target],
            "report": ["report", results, "--out", target],
            "page": ["history", "page", "--store", store, "--out", target],
            "add": ["history", "add", results, "--store", target, "--commit", "abcdef1"]}[command]




def refused(done, flag, words):
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    assert flag in done.stderr and words in done.stderr, done.stderr


def make_target(case, tmp_path):
    """The ``--out``/``--store`` value of a case, and what it says when refused."""
    if case == "empty":
        return "", "empty value refused"
    if case == "link":
        (tmp_path / "elsewhere").mkdir()
        (tmp_path / "out").symlink_to(tmp_path / "elsewhere")
        return tmp_path / "out", "is a symbolic link"
    if case in ("file", "under a file"):
        (tmp_path / "out").write_text("mine\n")
        return (tmp_path / "out", "is a file") if case == "file" else (tmp_path / "out" / "sub", "lies under")
    if case == "foreign":
        (tmp_path / "out").mkdir()
        (tmp_path / "out" / "index.html").write_text("mine\n")
        (tmp_path / "out" / "notes.csv").write_text("mine\n")
        return tmp_path / "out", "holds files ddpbench did not write"
    raise AssertionError(case)


@pytest.mark.parametrize("case", ["empty", "link", "file", "under a file", "foreign"])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_target_that_is_not_a_folder_of_ddpbench_s_is_refused_and_left_as_it_was(inputs, tmp_path, command, case):
    (tmp_path / "cwd").mkdir()
    target, words = make_target(case, tmp_path)
    before = snapshot(tmp_path)
    refused(run_main(*argv(command, inputs, target), cwd=tmp_path / "cwd"), FLAG[command], words)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("error, words", [(errno.EROFS, "Read-only file system"), (errno.EACCES, "Permission denied")])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_folder_that_cannot_be_written_is_one_line(inputs, tmp_path, monkeypatch, command, error, words):
    real_open = os.open

    def no_writes(path, flags, *args, **kw):  # as a read-only or unwritable folder answers (root ignores modes)
        if os.path.basename(path).startswith(WRITE_PROBE):
            raise OSError(error, os.strerror(error), path)
        return real_open(path, flags, *args, **kw)

    monkeypatch.setattr(os, "open", no_writes)
    refused(run_main(*argv(command, inputs, tmp_path / "out")), FLAG[command], words)
    assert sorted(os.listdir(tmp_path / "out")) == []


@pytest.mark.parametrize("command", COMMANDS)
def test_force_writes_into_someone_else_s_folder_replacing_only_the_command_s_own_files(inputs, tmp_path, command):
    make_target("foreign", tmp_path)
    out = tmp_path / "out"
    if OWN[command] and OWN[command] != "index.html":
        (out / OWN[command]).write_text("mine\n")
    done = run_main(*argv(command, inputs, out), "--force")
    assert done.returncode == 0, done.stderr
    assert (out / "notes.csv").read_text() == "mine\n" and (out / MARKER).is_file()
    if OWN[command]:
        assert (out / OWN[command]).read_text() != "mine\n"
    else:
        assert (out / "index.html").read_text() == "mine\n"
    if command != "add":  # a folder it wrote takes it again without --force
        assert run_main(*argv(command, inputs, out)).returncode == 0


@pytest.mark.parametrize("command", ["compare", "report", "page"])
def test_a_link_at_a_name_the_command_writes_is_refused(inputs, tmp_path, command):
    out = tmp_path / "out"
    out.mkdir()
    (out / MARKER).write_text("{}\n")
    (tmp_path / "canary").write_text("mine\n")
    (out / OWN[command]).symlink_to(tmp_path / "canary")
    refused(run_main(*argv(command, inputs, out)), "--out", "is a symbolic link")
    assert (tmp_path / "canary").read_text() == "mine\n" and (out / OWN[command]).is_symlink()


def test_a_store_whose_machine_folder_is_a_link_files_nothing_outside_it(inputs, tmp_path):
    results, _ = inputs
    store, outside = tmp_path / "store", tmp_path / "outside"
    outside.mkdir()
    with holding(store, store_claim()):  # a store, marked as one
        pass
    (store / machine_id(fingerprint(ENV))).symlink_to(outside)
    with pytest.raises(InputError, match="is a symbolic link"):
        file_results(store, results, commit="abcdef1")
    refused(run_main(*argv("add", inputs, store)), "--store", "is a symbolic link")
    assert os.listdir(outside) == []


#: what may sit in a folder before a command claims it
NAMES = st.sampled_from(["index.html", "compare.csv", "trend.csv", "trend-1.png", "notes.txt", MARKER, "sub"])
CLAIM = Claim(COMPARE, "compare", run="A vs B", writes=("index.html", "compare.csv", "trend-*.png"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.sets(NAMES, max_size=4), force=st.booleans())
def test_a_folder_is_claimed_only_when_empty_new_or_ddpbench_s_or_forced(tmp_path_factory, names, force):
    """A marker without a kind (written before markers named one) makes the folder the command's only
    where everything else in it is the command's own files."""
    out = tmp_path_factory.mktemp("claim") / "out"
    out.mkdir()
    for name in names:
        (out / name).mkdir() if name == "sub" else (out / name).write_text("mine\n")
    before = snapshot(out)
    mine = names - {MARKER}
    own = {"index.html", "compare.csv", "trend-1.png"}
    allowed = force or not mine or (MARKER in names and mine <= own)
    try:
        with holding(out, CLAIM, force=force):
            pass
    except InputError as err:
        assert not allowed and "did not write" in str(err)
        assert snapshot(out) == before
        return
    assert allowed
    after = snapshot(out)  # the marker and the lock are ddpbench's own: nothing else changed
    assert {k: v for k, v in after.items() if k not in CONTROL} == {k: v for k, v in before.items() if k != MARKER}


# ---------------------------------------------------------------------------------------------
# kinds of folder, and what one --force blesses (issue 83)
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def sides(tmp_path):
    """Two results folders of the same experiment (A and B), and a user's folder u1 that `compare A B
    --out u1 --force` wrote into."""
    a = write_results(tmp_path / "A", [ok(10.0, world_size=1), ok(6.0, world_size=2)])
    b = write_results(tmp_path / "B", [ok(10.5, world_size=1), ok(6.1, world_size=2)])
    u1 = tmp_path / "u1"
    u1.mkdir()
    (u1 / "notes.txt").write_text("mine\n")
    (u1 / "index.html").write_text("my page\n")
    done = run_main("compare", a, b, "--out", u1, "--force")
    assert done.returncode == 0, done.stderr
    return a, b, u1


def tune_argv(tmp_path, out) -> list:
    return ["tune", write_experiment(tmp_path / "tiny.toml", TINY), "--out", out]


@pytest.mark.parametrize("command", ["tune", "sweep", "add", "report", "page"])
def test_one_force_does_not_bless_the_folder_for_later_commands(inputs, sides, tmp_path, command):
    a, b, u1 = sides
    before = snapshot(u1)
    # tune's race is checked before the folder (launch.can_run): a budget it can race, so the folder is what is refused
    argv_ = {"tune": [*tune_argv(tmp_path, u1), "--budget", "8"], "sweep": tune_argv(tmp_path, u1),
             "add": ["history", "add", b, "--store", u1, "--commit", "abcdef1"],
             "report": ["report", a, "--out", u1],
             "page": ["history", "page", "--store", inputs[1], "--out", u1]}[command]
    if command == "sweep":
        argv_[0] = "sweep"
    refused(run_main(*argv_), FLAG.get(command, "--out"), "is a compare folder")
    assert snapshot(u1) == before
    # the command and run that --force let in take it again; another run's output needs --force anew
    assert run_main("compare", a, b, "--out", u1).returncode == 0
    refused(run_main("compare", b, a, "--out", u1), "--out", "holds compare's output of")


def test_a_command_never_replaces_a_folder_of_another_kind_even_with_force(sides, tmp_path):
    a, b, _ = sides
    run_main("report", a)
    run_main("report", b)
    before = snapshot(tmp_path)
    for argv_ in (["compare", a, b, "--out", a], ["report", a, "--out", b], ["history", "add", b, "--store", a],
                  ["history", "add", b, "--store", b]):
        for force in ([], ["--force"]):
            commit = ["--commit", "abcdef1"] if argv_[0] == "history" else []
            done = run_main(*argv_, *force, *commit)
            refused(done, "--store" if argv_[0] == "history" else "--out", "is a results folder")
    assert snapshot(tmp_path) == before


def test_report_into_its_own_results_folder_and_a_report_folder_of_its_own(sides, tmp_path):
    a, b, _ = sides
    assert run_main("report", a).returncode == 0 and (a / "index.html").is_file()
    assert run_main("report", a, "--out", a).returncode == 0
    out = tmp_path / "reports-of-a"
    assert run_main("report", a, "--out", out).returncode == 0
    assert run_main("report", a, "--out", out).returncode == 0  # its own run again
    refused(run_main("report", b, "--out", out), "--out", "holds report's output of")
    assert run_main("report", b, "--out", out, "--force").returncode == 0
