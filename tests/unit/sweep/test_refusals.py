"""A refusal of the script's shape stops its job at the first launch (ddpbench.sweep.refusals): the
decision, the rank's error file and the launcher's reading of it, and the runner with a fake launcher."""

import json
import signal

import pytest

import ddpbench
from ddpbench.experiment.load import parse_experiment
from ddpbench.experiment.spec import JobSpec
from ddpbench.launch.base import Launch, LaunchOutcome
from ddpbench.launch.handback import collect_outcome
from ddpbench.rank import protocol
from ddpbench.rank.protocol import Job, Tracked
from ddpbench.rank.script.steps import JOB, WORLD_SIZES, BadScript, refused
from ddpbench.report.build import load_context
from ddpbench.report.sections.overview import header_section
from ddpbench.results.store import ResultStore
from ddpbench.sweep.refusals import Refusal, Refusals, announce, same_but_world_size
from ddpbench.sweep.runner import run_sweep
from ddpbench.testing.launchers import ENV, FakeLauncher


def _script(world_size, **fields):
    return JobSpec(**{"script": "train.py", "batch_size": 8, "world_size": world_size, "device": "cpu",
                      "backend": "gloo", "threads_per_rank": 1, "steps": 3, "warmup_steps": 1, **fields})


def _launch(spec, repeat=0):
    return Launch(spec, repeat, None)


# ---------------------------------------------------------------------------------------------
# the decision
# ---------------------------------------------------------------------------------------------

def test_a_refusal_covers_its_job_and_by_its_scope_the_same_script_at_other_world_sizes():
    one, two, other_cap = _script(1), _script(2), _script(2, bucket_cap_mb=5)
    assert same_but_world_size(one, two) and same_but_world_size(two, one)
    assert not same_but_world_size(one, one)  # the same job: its key covers it
    assert not same_but_world_size(one, other_cap)  # another setting besides the world size
    assert not same_but_world_size(JobSpec(world_size=1), JobSpec(world_size=2))  # a model's job: no script
    # a window laid on the script's epochs, its own at each world size (experiments/corpus/mingpt.toml)
    assert same_but_world_size(_script(1, warmup_steps=64, steps=32), _script(2, warmup_steps=32, steps=16))

    job = Refusal(one, 0, JOB)
    assert job.covers(one) and not job.covers(two)
    sizes = Refusal(one, 0, WORLD_SIZES)
    assert sizes.covers(one) and sizes.covers(two) and not sizes.covers(other_cap)
    assert sizes.reason(one).startswith("not run: repeat 0 of this job was refused")
    assert "the same script at world size 1 was refused" in sizes.reason(two)
    assert sizes.record() == {"scope": WORLD_SIZES, "launch": {"key": one.key, "repeat": 0}}


def test_only_a_failed_launch_with_a_refusal_is_kept():
    refusals = Refusals()
    spec = _script(1)
    # a crash, a timeout, a launch already skipped for a refusal, an unknown scope: no refusal
    for outcome in (LaunchOutcome("failed", error="rank 1 killed by SIGKILL"),
                    LaunchOutcome("timed_out", error="no result within the 30 s timeout", refusal={"scope": JOB}),
                    LaunchOutcome("skipped", error="not run",
                                  refusal={"scope": JOB, "launch": {"key": "k", "repeat": 0}}),
                    LaunchOutcome("failed", error="x", refusal={"scope": "everything"})):
        assert refusals.note(_launch(spec), outcome) is None
    assert not refusals and refusals.skipped(_launch(spec, 1)) is None
    found = refusals.note(_launch(spec), LaunchOutcome("failed", error="BadScript: ...", refusal={"scope": JOB}))
    assert found == Refusal(spec, 0, JOB)
    skipped = refusals.skipped(_launch(spec, 2))
    assert skipped.status == "skipped" and skipped.refusal == {"scope": JOB, "launch": {"key": spec.key, "repeat": 0}}
    assert refusals.skipped(_launch(_script(2))) is None  # JOB: the other world size still runs


def test_the_console_line_says_what_is_skipped_and_why():
    one, two = _script(1), _script(2)
    left = [_launch(two, 0), _launch(one, 1), _launch(two, 1), _launch(one, 2), _launch(two, 2),
            _launch(_script(2, bucket_cap_mb=5), 0)]
    line = announce(Refusal(one, 0, WORLD_SIZES), left)
    assert line == ("refused: a refusal of the script's shape comes again on every launch: its 2 other launches and "
                    "the 3 launches of the same script at world size 2 (this refusal does not depend on the world "
                    "size) are skipped, not run; the sweep goes on with the next job")
    assert "its 2 other launches are skipped" in announce(Refusal(one, 0, JOB), left)
    assert "its other launch is skipped" in announce(Refusal(one, 0, JOB), left[1:2])
    assert "none of its launches was left to run" in announce(Refusal(one, 2, JOB), [])


# ---------------------------------------------------------------------------------------------
# the rank's error file, and the launcher's outcome
# ---------------------------------------------------------------------------------------------

def test_bad_script_says_whether_it_is_a_refusal():
    assert BadScript("the script raised ValueError").refused is None
    assert refused("the script builds DDP with ...").refused == WORLD_SIZES
    err = refused("the script's DDP model took 16 samples ...", JOB)
    assert err.refused == JOB and str(err) == "the script's DDP model took 16 samples ..."
    with pytest.raises(ValueError, match="refused must be one of"):
        BadScript("x", refused="all")


class _Refuses(Tracked):
    def __init__(self, job, out_dir):
        pass

    def execute(self):
        self.at("script", 0)
        raise refused("the script builds DDP with find_unused_parameters=True and the job says False (the default)")


class _Raises(_Refuses):
    def execute(self):
        raise BadScript("the script raised ValueError: bad data (after 1 optimizer steps)")


@pytest.mark.parametrize(("work", "expected"), [(_Refuses, WORLD_SIZES), (_Raises, None)])
def test_the_rank_writes_the_refusal_into_its_error_file(tmp_path, monkeypatch, work, expected):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setattr(protocol, "watch_parent", lambda pid: None)
    job = Job.of(_script(1), 0, 30.0).write(tmp_path / "job.json")
    assert protocol.serve({"run": work}, ["--job", str(job), "--out", str(tmp_path)]) == 1
    error = json.loads((tmp_path / "error.rank0.json").read_text())
    assert error["error"].startswith("BadScript: the script ")
    assert error.get("refused") == expected


def _error(work, rank, when, message, refused=None):
    (work / f"error.rank{rank}.json").write_text(json.dumps(
        {"rank": rank, "phase": "script", "step": -1, "time": when, "error": message,
         **({"refused": refused} if refused else {})}))


def _outcome(work, exits, timed_out=False):
    return collect_outcome(work, Job.of(_script(2), 0, 30.0), exits, 1.0, timed_out, [])


def test_the_outcome_is_a_refusal_only_where_the_first_error_is_one(tmp_path):
    _error(tmp_path, 1, 3.0, "BadScript: the script builds DDP with ...", refused=WORLD_SIZES)
    _error(tmp_path, 0, 4.0, "BadScript: the script raised RuntimeError: Connection closed by peer")
    out = _outcome(tmp_path, {0: 1, 1: 1})
    assert out.status == "failed" and out.refusal == {"scope": WORLD_SIZES}
    assert out.error == "rank 1 in script: BadScript: the script builds DDP with ..."
    # a rank killed from outside, or a timeout, is the cause: no refusal
    assert _outcome(tmp_path, {0: 1, 1: 1, 2: -signal.SIGKILL}).refusal is None
    assert _outcome(tmp_path, {0: None, 1: 1}, timed_out=True).refusal is None
    # a peer's own error came first: not a refusal
    _error(tmp_path, 0, 2.0, "BadScript: the script raised OSError: no space")
    assert _outcome(tmp_path, {0: 1, 1: 1}).refusal is None


# ---------------------------------------------------------------------------------------------
# the runner
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def scripted(tmp_path, cpu_machine):
    """Script jobs at world sizes 1 and 2 by bucket caps 5 and 25 MB, three launches each."""
    (tmp_path / "train.py").write_text("print('a script')\n")
    data = {"defaults": {"script": str(tmp_path / "train.py"), "batch_size": 8, "steps": 3, "warmup_steps": 1,
                         "repeats": 3, "threads_per_rank": 1},
            "grid": {"world_size": [1, 2], "bucket_cap_mb": [5, 25]}}
    experiment = parse_experiment(data, str(tmp_path / "exp.toml"), default_name="exp", machine=cpu_machine)
    jobs = {(j.world_size, j.bucket_cap_mb): j for j in experiment.jobs}
    return experiment, jobs, tmp_path / "out"


def _records(out):
    return [r for r in ResultStore(out).records() if r["kind"] == "run"]


def test_a_refused_job_runs_one_launch_and_its_other_world_sizes_none(scripted, cpu_machine):
    experiment, jobs, out = scripted
    bad, sibling = jobs[(1, 5)], jobs[(2, 5)]
    launcher = FakeLauncher(refuse={bad.key: WORLD_SIZES})
    summary = run_sweep(experiment, out, launcher=launcher, machine=cpu_machine, env=ENV)
    # one launch of the refused job, none of the same script at world size 2; the other cap's jobs all run
    assert [c for c in launcher.calls if c[0] in (bad.key, sibling.key)] == [(bad.key, 0)]
    assert sorted(launcher.calls) == sorted([(bad.key, 0)] + [(jobs[(w, 25)].key, r) for w in (1, 2) for r in range(3)])
    assert summary.statuses == {"failed": 1, "skipped": 5, "ok": 6}
    records = {(r["key"], r["repeat"]): r for r in _records(out)}
    refused_record = records[(bad.key, 0)]
    assert refused_record["refusal"] == {"scope": WORLD_SIZES} and "find_unused" in refused_record["error"]
    for key, repeat in [(bad.key, 1), (bad.key, 2)] + [(sibling.key, r) for r in range(3)]:
        record = records[(key, repeat)]
        assert record["status"] == "skipped" and record["result"] is None
        assert record["refusal"] == {"scope": WORLD_SIZES, "launch": {"key": bad.key, "repeat": 0}}
        assert record["error"].startswith("not run: ")
    assert all("refusal" not in records[(jobs[(w, 25)].key, r)] for w in (1, 2) for r in range(3))
    table = ddpbench.summarize(ddpbench.load(out)).set_index("key")
    assert table.loc[bad.key, "status"] == "failed" and table.loc[sibling.key, "status"] == "skipped"
    assert "world size 1 was refused (repeat 0, its error says why and what to set)" in table.loc[sibling.key, "error"]
    assert (table.loc[[jobs[(1, 25)].key, jobs[(2, 25)].key], "status"] == "ok").all()
    # the report counts the launches that ran, and those that did not apart

    assert "4 jobs (7 launches run, 5 skipped without running, " in str(header_section(load_context(out)).html)


def test_a_refusal_that_may_follow_the_world_size_skips_its_own_job_only(scripted, cpu_machine):
    experiment, jobs, out = scripted
    bad = jobs[(1, 5)]
    launcher = FakeLauncher(refuse={bad.key: JOB})
    run_sweep(experiment, out, launcher=launcher, machine=cpu_machine, env=ENV)
    assert [c for c in launcher.calls if c[0] == bad.key] == [(bad.key, 0)]
    assert sum(1 for c in launcher.calls if c[0] == jobs[(2, 5)].key) == 3


def test_a_crash_is_no_refusal_every_launch_runs(scripted, cpu_machine):
    experiment, jobs, out = scripted
    bad = jobs[(1, 5)]
    launcher = FakeLauncher(fail_keys={bad.key})
    summary = run_sweep(experiment, out, launcher=launcher, machine=cpu_machine, env=ENV)
    assert len(launcher.calls) == 12 and summary.statuses == {"failed": 3, "ok": 9}


def test_the_console_says_what_was_skipped(scripted, cpu_machine):
    from rich.console import Console

    experiment, jobs, out = scripted
    console = Console(record=True, width=400, force_terminal=False)
    run_sweep(experiment, out, launcher=FakeLauncher(refuse={jobs[(1, 5)].key: WORLD_SIZES}), machine=cpu_machine,
              env=ENV, console=console)
    text = console.export_text()
    assert text.count("refused: a refusal of the script's shape") == 1
    assert ("its 2 other launches and the 3 launches of the same script at world size 2 (this refusal does not "
            "depend on the world size) are skipped, not run; the sweep goes on with the next job") in text


def test_a_resumed_sweep_keeps_standing_by_a_refusal_and_retry_failed_runs_it_again(scripted, cpu_machine):
    experiment, jobs, out = scripted
    bad, sibling = jobs[(1, 5)], jobs[(2, 5)]
    # interrupted right after the refusal (the first launch of the sweep)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(experiment, out, launcher=FakeLauncher(refuse={bad.key: WORLD_SIZES}, interrupt_after=1),
                  machine=cpu_machine, env=ENV)
    again = FakeLauncher(refuse={bad.key: WORLD_SIZES})
    run_sweep(experiment, out, resume=True, launcher=again, machine=cpu_machine, env=ENV)
    assert not [c for c in again.calls if c[0] in (bad.key, sibling.key)]
    # the script fixed: --retry-failed runs the refused launch and those skipped for it
    fixed = FakeLauncher()
    run_sweep(experiment, out, resume=True, retry_failed=True, launcher=fixed, machine=cpu_machine, env=ENV)
    assert sorted(fixed.calls) == sorted([(bad.key, r) for r in range(3)] + [(sibling.key, r) for r in range(3)])
    table = ddpbench.summarize(ddpbench.load(out))
    assert (table["status"] == "ok").all()


def test_an_adaptive_job_gets_no_more_launches_once_refused(tmp_path, cpu_machine):
    (tmp_path / "train.py").write_text("print('a script')\n")
    data = {"defaults": {"script": str(tmp_path / "train.py"), "batch_size": 8, "steps": 3, "warmup_steps": 1,
                         "repeats": "auto", "min_repeats": 2, "max_repeats": 6, "threads_per_rank": 1},
            "grid": {"world_size": [1]}}
    experiment = parse_experiment(data, str(tmp_path / "exp.toml"), default_name="exp", machine=cpu_machine)
    (job,) = experiment.jobs
    launcher = FakeLauncher(refuse={job.key: JOB})
    summary = run_sweep(experiment, tmp_path / "out", launcher=launcher, machine=cpu_machine, env=ENV)
    assert launcher.calls == [(job.key, 0)] and summary.statuses == {"failed": 1, "skipped": 1}
