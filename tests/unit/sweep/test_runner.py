"""The sweep runner with a fake launcher: records, resume, skips and failures without processes."""

import warnings

import pandas as pd
import pytest

import ddpbench
from ddpbench.cli.program import main
from ddpbench.experiment.collectives import parse_collectives
from ddpbench.experiment.load import parse_experiment
from ddpbench.launch.base import LaunchOutcome
from ddpbench.results.schema import sweep_record
from ddpbench.results.store import ResultStore
from ddpbench.results.tables import load_tables
from ddpbench.strategies.ddp import DDPStrategy
from ddpbench.sweep.plan import pending_launches
from ddpbench.sweep.runner import run_collectives, run_sweep
from ddpbench.testing.launchers import ENV, FakeLauncher, fake_result


class ArrayLauncher(FakeLauncher):
    """Takes all its launches at once, as Slurm's job arrays do, and hands them back last first."""

    submits_arrays = True

    def launch_all(self, launches, log_dir, timeout_s, stall_s=None):
        self.batches = getattr(self, "batches", []) + [[(launch.spec.key, launch.repeat) for launch in launches]]
        for launch in reversed(launches):
            yield launch, LaunchOutcome("ok", result=fake_result(launch.spec, launch.repeat), wall_s=1.0)


class FollowerLauncher(FakeLauncher):
    """Node > 0 of a multi-node sweep: runs its launches, stores nothing."""

    stores_results = False


def test_every_launch_recorded_with_oversubscription(experiment, cpu_machine, tmp_path):
    launcher = FakeLauncher()
    summary = run_sweep(experiment, tmp_path, launcher=launcher, machine=cpu_machine, env=ENV)
    assert summary.statuses == {"ok": 6} and len(launcher.calls) == 6
    _, runs, _, sweeps = load_tables(tmp_path)
    assert sorted(zip(runs["world_size"], runs["repeat"])) == [(1, 0), (1, 1), (2, 0), (2, 1), (4, 0), (4, 1)]
    assert dict(zip(runs["world_size"], runs["oversubscribed"])) == {1: False, 2: False, 4: True}
    assert sweeps.iloc[0]["hostname"] == "here"
    jobs = ddpbench.summarize(ddpbench.load(tmp_path))
    # the slowest rank bounds the step: rank r takes 10 * (1 + r/10) ms
    assert jobs.set_index("world_size")["step_ms_median"].to_dict() == pytest.approx({1: 10.0, 2: 11.0, 4: 13.0})
    assert summary.timed_s == pytest.approx(6 * (1 + 3 + 3) * 10.0 / 1e3)


def test_interrupt_keeps_finished_and_resume_runs_only_the_rest(experiment, cpu_machine, tmp_path):
    with pytest.raises(KeyboardInterrupt):
        run_sweep(experiment, tmp_path, launcher=FakeLauncher(interrupt_after=4), machine=cpu_machine, env=ENV)
    assert len(ResultStore(tmp_path).done()) == 4
    again = FakeLauncher()
    run_sweep(experiment, tmp_path, resume=True, launcher=again, machine=cpu_machine, env=ENV)
    assert len(again.calls) == 2
    _, runs, _, sweeps = load_tables(tmp_path)
    assert len(runs) == 6 and not runs.duplicated(["key", "repeat"]).any() and len(sweeps) == 2


def test_failures_are_recorded_and_the_sweep_goes_on(experiment, cpu_machine, tmp_path):
    bad = next(j.key for j in experiment.jobs if j.world_size == 2)
    summary = run_sweep(experiment, tmp_path, launcher=FakeLauncher(fail_keys={bad}), machine=cpu_machine, env=ENV)
    assert summary.statuses == {"ok": 4, "failed": 2}
    jobs = ddpbench.summarize(ddpbench.load(tmp_path)).set_index("world_size")
    assert jobs.loc[2, "status"] == "failed" and "SIGKILL" in jobs.loc[2, "error"]
    assert jobs.loc[4, "status"] == "ok"


def test_retry_failed_runs_failed_launches_again_and_their_new_record_counts(experiment, cpu_machine, tmp_path):
    bad = experiment.jobs[1].key
    run_sweep(experiment, tmp_path, launcher=FakeLauncher(fail_keys={bad}), machine=cpu_machine, env=ENV)
    # a plain resume keeps the failure: it is a result
    again = FakeLauncher()
    run_sweep(experiment, tmp_path, resume=True, launcher=again, machine=cpu_machine, env=ENV)
    assert again.calls == []
    retry = FakeLauncher()
    summary = run_sweep(experiment, tmp_path, resume=True, retry_failed=True, launcher=retry, machine=cpu_machine,
                        env=ENV)
    repeats = experiment.jobs[1].repeats
    assert retry.calls == [(bad, r) for r in range(repeats)] and summary.planned == repeats
    _, runs, _, _ = load_tables(tmp_path)
    # the latest record of each launch: one per (job, repeat)
    assert len(runs) == sum(j.repeats for j in experiment.jobs) and set(runs["status"]) == {"ok"}
    table = ddpbench.summarize(ddpbench.load(tmp_path))
    assert set(table["status"]) == {"ok"}


def test_retry_failed_without_resume_is_refused(capsys):
    assert main(["sweep", "--retry-failed", "--dry-run"]) == 2
    assert "--retry-failed: runs failed launches of stored results again: give --resume" in capsys.readouterr().err


def test_strategy_skip_is_recorded_without_launching(experiment, cpu_machine, tmp_path, monkeypatch):
    monkeypatch.setattr(DDPStrategy, "skip_reason",
                        classmethod(lambda cls, spec, machine: "needs 4 GPUs" if spec.world_size == 4 else None))
    launcher = FakeLauncher()
    summary = run_sweep(experiment, tmp_path, launcher=launcher, machine=cpu_machine, env=ENV)
    assert summary.statuses == {"ok": 4, "skipped": 2} and len(launcher.calls) == 4
    jobs = ddpbench.summarize(ddpbench.load(tmp_path)).set_index("world_size")
    assert jobs.loc[4, "status"] == "skipped" and "needs 4 GPUs" in jobs.loc[4, "error"]


def test_damaged_line_is_reported_and_the_rest_loads(experiment, cpu_machine, tmp_path):
    run_sweep(experiment, tmp_path, launcher=FakeLauncher(), machine=cpu_machine, env=ENV)
    store = ResultStore(tmp_path)
    with open(store.path, "ab") as fh:
        fh.write(b'{"kind": "run", "key": "cut-mid-wri')  # a crash mid-write
    with pytest.warns(UserWarning, match=r"results.jsonl:8: damaged record"):
        _, runs, _, _ = load_tables(tmp_path)
    assert len(runs) == 6
    # the next append starts on a fresh line, so the damage stays confined to one record
    store.append(sweep_record("x", {}, {}))
    with pytest.warns(UserWarning):
        assert len(list(store.records())) == 8


def test_repeats_are_interleaved(experiment, tmp_path):
    order = [(spec.world_size, repeat) for spec, repeat, _ in pending_launches(experiment.jobs, set(), tmp_path)]
    assert order == [(1, 0), (2, 0), (4, 0), (1, 1), (2, 1), (4, 1)]
    done = {(experiment.jobs[0].key, 0)}
    first = pending_launches(experiment.jobs, done, tmp_path)[0]
    assert (first.spec.world_size, first.repeat) == (2, 0)
    assert first.work_dir == tmp_path / ".work" / f"{first.spec.key}-r0"


def test_earlier_results_are_never_overwritten(experiment, cpu_machine, tmp_path):
    for _ in range(3):  # three sweeps within the same second
        run_sweep(experiment, tmp_path, launcher=FakeLauncher(), machine=cpu_machine, env=ENV)
    kept = sorted(tmp_path.glob("results.*.jsonl"))
    assert len(kept) == 2
    assert all(len(p.read_text().splitlines()) == 7 for p in kept)


def test_resume_from_the_stored_experiment_copy(experiment, cpu_machine, tmp_path):
    import dataclasses

    copy = tmp_path / "experiment.toml"
    copy.write_text("[grid]\nworld_size = [1]\n")
    stored = dataclasses.replace(experiment, source=str(copy))
    run_sweep(stored, tmp_path, launcher=FakeLauncher(), machine=cpu_machine, env=ENV)
    run_sweep(stored, tmp_path, resume=True, launcher=FakeLauncher(), machine=cpu_machine, env=ENV)
    assert copy.read_text() == "[grid]\nworld_size = [1]\n"


@pytest.mark.parametrize("line", [
    b'{"kind": "run"}',
    b'{"kind": "sweep", "sweep_id": "x", "schema_version": "2"}',
    b'{"kind": "run", "key": "k", "repeat": 0, "spec": {"world_size": "many"}, "status": "ok", "result": {}}',
    b'{"kind": "run", "key": "k", "repeat": 0, "spec": {}, "status": "ok", "result": {"steps": 3}}',
    b'[1, 2]',
])
def test_malformed_records_are_skipped_not_fatal(experiment, cpu_machine, tmp_path, line):
    run_sweep(experiment, tmp_path, launcher=FakeLauncher(), machine=cpu_machine, env=ENV)
    with open(tmp_path / "results.jsonl", "ab") as fh:
        fh.write(line + b"\n")
    with pytest.warns(UserWarning, match="skipped"):
        jobs = ddpbench.summarize(ddpbench.load(tmp_path))
    assert len(jobs) == 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert len(ResultStore(tmp_path).done()) in (6, 7)  # resume reads the store without crashing


def test_summarize_filtered_and_concatenated_frames(experiment, cpu_machine, tmp_path):
    run_sweep(experiment, tmp_path, launcher=FakeLauncher(), machine=cpu_machine, env=ENV)
    steps = ddpbench.load(tmp_path)
    only_two = ddpbench.summarize(steps[steps["world_size"] == 2])
    assert list(only_two["world_size"]) == [2]
    stripped = steps.copy()
    stripped.attrs = {}  # what pd.concat of two loads gives in pandas 3
    with pytest.raises(ValueError, match="load_tables"):
        ddpbench.summarize(stripped)


def test_pandas_operations_share_the_records_in_attrs(experiment, cpu_machine, tmp_path):
    """pandas deep-copies attrs on every operation; the records ride along shared, so a filter
    or groupby on a folder of hundreds of jobs does not copy them (it took 0.8 s a job to
    summarize 200 jobs before: benchmarks/soak.py)."""
    run_sweep(experiment, tmp_path, launcher=FakeLauncher(), machine=cpu_machine, env=ENV)
    steps = ddpbench.load(tmp_path)
    filtered = steps[steps["world_size"] == 2]
    for name in ("runs", "ranks", "sweeps"):
        assert filtered.attrs[name] is steps.attrs[name]
    assert len(pd.DataFrame(filtered.attrs["runs"])) == 6


def test_collectives_go_through_the_same_loop_into_the_same_store(experiment, cpu_machine, tmp_path):
    run_sweep(experiment, tmp_path, launcher=FakeLauncher(), machine=cpu_machine, env=ENV)
    coll = parse_collectives({"ops": ["all_reduce"], "sizes": "1K:4K", "world_sizes": [1, 2]}, "c.toml")
    launcher = FakeLauncher()
    summary = run_collectives(coll, tmp_path, launcher=launcher, env=ENV)
    assert summary.statuses == {"ok": 2} and launcher.calls == [(spec.key, 0) for spec in coll.specs]
    records = list(ResultStore(tmp_path).records())
    kinds = [r["kind"] for r in records]
    assert kinds == ["sweep"] + ["run"] * 6 + ["sweep", "collective", "collective"]  # the sweep's results stay
    assert records[7]["experiment"]["kind"] == "collectives"
    assert all(r["repeat"] == 0 and r["launcher"] == "fake" and r["sweep_id"] == records[7]["sweep_id"]
               for r in records[8:])
    assert list(tmp_path.glob("results.*.jsonl")) == [] and not (tmp_path / ".work").exists()
    table = ddpbench.load_collectives(tmp_path)
    assert sorted(set(table["world_size"])) == [1, 2] and set(table["size_bytes"]) == {1024, 2048, 4096}
    assert len(run_collectives(coll, tmp_path, resume=True, launcher=launcher, env=ENV).statuses) == 0


def test_an_array_launcher_gets_its_launches_at_once_after_the_skipped_ones(experiment, cpu_machine, tmp_path,
                                                                            monkeypatch):
    def skip_four(cls, spec, machine):
        return "four ranks skipped" if spec.world_size == 4 else None

    monkeypatch.setattr(DDPStrategy, "skip_reason", classmethod(skip_four))
    launcher = ArrayLauncher()
    run_sweep(experiment, tmp_path, launcher=launcher, machine=cpu_machine, env=ENV)
    assert launcher.calls == []  # nothing one at a time
    planned = [(spec.key, repeat) for repeat in (0, 1) for spec in experiment.jobs if spec.world_size != 4]
    assert launcher.batches == [planned]
    stored = [(r["key"], r["repeat"], r["status"]) for r in ResultStore(tmp_path).records() if r["kind"] == "run"]
    four = [spec.key for spec in experiment.jobs if spec.world_size == 4]
    assert stored == [(four[0], 0, "skipped"), (four[0], 1, "skipped")] + [(k, r, "ok") for k, r in reversed(planned)]


def test_a_follower_node_runs_its_launches_and_stores_nothing(experiment, cpu_machine, tmp_path):
    (tmp_path / ".work").mkdir()
    launcher = FollowerLauncher()
    summary = run_sweep(experiment, tmp_path, launcher=launcher, machine=cpu_machine, env=ENV)
    assert summary.statuses == {"ok": 6} and len(launcher.calls) == 6
    assert not (tmp_path / "results.jsonl").exists() and (tmp_path / ".work").exists()  # node 0's to clean


def test_a_launch_line_names_a_script_job_by_its_short_name(cpu_machine, tmp_path):
    """A script's command line (minGPT's: nine Hydra overrides) stays out of the launch lines: each names its job by
    the script's file name and the arguments that differ between the sweep's jobs, as the summary does."""
    from rich.console import Console

    (tmp_path / "main.py").write_text("print('a script')\n")
    overrides = ["data_config.path=data/input.txt", "data_config.block_size=32", "gpt_config.n_layer=2",
                 "gpt_config.n_head=2", "gpt_config.n_embd=64", "trainer_config.data_loader_workers=0"]
    six, nine = [*overrides, "trainer_config.max_epochs=6"], [*overrides, "trainer_config.max_epochs=9"]
    data = {"defaults": {"script": str(tmp_path / "main.py"), "batch_size": 8, "repeats": 1, "threads_per_rank": 1},
            "grid": [{"world_size": [1], "warmup_steps": [4], "steps": [2], "script_args": [six]},
                     {"world_size": [2], "warmup_steps": [2], "steps": [1], "script_args": [six, nine]}]}
    experiment = parse_experiment(data, str(tmp_path / "exp.toml"), default_name="exp", machine=cpu_machine)
    console = Console(record=True, width=400, force_terminal=False)
    run_sweep(experiment, tmp_path / "out", launcher=FakeLauncher(), machine=cpu_machine, env=ENV, console=console)
    lines = [line for line in console.export_text().splitlines() if " rep 0" in line]
    assert len(lines) == 3 and not any("data_config" in line for line in lines)
    assert sum("ddp main.py trainer_config.max_epochs=6 ws=" in line for line in lines) == 2
    assert sum("ddp main.py trainer_config.max_epochs=9 ws=2 " in line for line in lines) == 1
