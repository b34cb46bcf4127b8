"""A forked rank's garbage collector: the server's objects frozen (ddpbench.rank.forked), so that
the teardown's collection walks only the rank's own, still frees its DDP model and optimizer before
the group ends, and no older-generation collection runs inside a timed step."""

import functools
import gc
import json
import sys
import time
import weakref
from pathlib import Path

import pytest

from ddpbench.experiment.machine import Machine, resolve
from ddpbench.experiment.spec import JobSpec
from ddpbench.launch import forked
from ddpbench.launch.spawn import SpawnLauncher
from ddpbench.rank.forked import run_rank

#: the default sweep's job (experiments/quick.toml), a few steps shorter
SPEC = dict(world_size=2, model="transformer", model_size="s", batch_size=4, threads_per_rank=1, warmup_steps=3,
            steps=10, device="cpu", backend="gloo")


def watched_rank(argv, env, log_path):
    """A forked child running the real rank (``run_rank``), watched: collections that start inside a
    timed step, and the teardown's collection with what it frees; written to ``teardown.rank<R>.json``
    in the launch's work folder."""
    import torch.distributed as dist

    from ddpbench.rank import train

    out = Path(argv[argv.index("--out") + 1])
    # the rank's meters' module came with the fork (the server preloads it), not imported by each rank
    seen = {"in_step": False, "steps": 0, "older_in_step": [], "collections": [], "destroyed": 0,
            "psutil_at_fork": "psutil" in sys.modules}

    def destroy(*args, _destroy=dist.destroy_process_group, **kwargs):
        seen["destroyed"] += 1
        return _destroy(*args, **kwargs)

    def on_collection(phase, info):
        if phase == "start":
            seen["collections"].append(info["generation"])
            if seen["in_step"] and info["generation"] > 0:
                seen["older_in_step"].append(info["generation"])

    def timed_step(*args, _step=train.train_step, **kwargs):
        seen["in_step"] = True
        seen["steps"] += 1
        try:
            return _step(*args, **kwargs)
        finally:
            seen["in_step"] = False

    def teardown(self, _teardown=train.TrainingRank.teardown, _collect=gc.collect):
        replica = self.replica
        refs = {"ddp": weakref.ref(replica.model), "module": weakref.ref(replica.module),
                "optimizer": weakref.ref(replica.optimizer)}
        del replica
        found = {"frozen": gc.get_freeze_count(), "tracked": len(gc.get_objects())}

        def collect(*args):
            found["alive_before_collect"] = sorted(name for name, ref in refs.items() if ref() is not None)
            start = time.perf_counter()
            try:
                return _collect(*args)
            finally:
                found["collect_s"] = time.perf_counter() - start
                found["alive_after_collect"] = sorted(name for name, ref in refs.items() if ref() is not None)

        gc.collect = collect
        try:
            _teardown(self)
        finally:
            gc.collect = _collect
        found["initialized_after"] = dist.is_initialized()
        (out / f"teardown.rank{self.rank}.json").write_text(json.dumps({**found, **seen}))

    gc.callbacks.append(on_collection)
    dist.destroy_process_group = destroy
    train.train_step = timed_step
    train.TrainingRank.teardown = teardown
    run_rank(argv, env, log_path)


@pytest.mark.parametrize("repeat", [0, 1])  # a job's first launch also checks equivalence and counts FLOPs
def test_a_forked_rank_frees_ddp_walking_only_its_own_objects(tmp_path, monkeypatch, repeat):
    monkeypatch.setattr(forked, "ForkedRank", functools.partial(forked.ForkedRank, target=watched_rank))
    spec = resolve(JobSpec(**SPEC), Machine.here())
    work = tmp_path / "work"
    outcome = SpawnLauncher(fork=True).launch(spec, repeat, work, tmp_path / "logs", timeout_s=120)
    assert outcome.status == "ok", outcome.error
    for rank in (0, 1):
        seen = json.loads((work / f"teardown.rank{rank}.json").read_text())
        # the server's imports are frozen; what the teardown's collection walks is the rank's own
        assert seen["frozen"] > 100_000 and seen["tracked"] < seen["frozen"] / 5, seen
        # DDP and its optimizer are freed by that collection (or before it), before the group ends
        assert seen["alive_after_collect"] == [], seen
        assert seen["collect_s"] < 0.25, seen  # unfrozen: 0.3-1.2 s
        # no older generation is collected inside a timed step (warmup, measure, nosync: 23 a rank)
        assert seen["steps"] >= 23 and seen["older_in_step"] == [], seen
        assert 2 in seen["collections"], seen  # the watch sees collections: the teardown's at least
        # a forked rank ends by os._exit: its gloo group is left at the barrier, not destroyed (about
        # 20 ms a launch), and the rank still ends ok, its log free of gloo's abort
        assert seen["destroyed"] == 0 and seen["initialized_after"], seen
        assert seen["psutil_at_fork"], seen


def test_forked_launches_in_a_row_end_ok_with_their_groups_left(tmp_path):
    """Eight 2-rank launches of one job in a row, each forked: every one ends ok (each rank exits 0
    by itself) and leaves both rank logs empty: no gloo abort, no warning of a group not destroyed."""
    spec = resolve(JobSpec(**{**SPEC, "steps": 2, "warmup_steps": 1}), Machine.here())
    launcher = SpawnLauncher(fork=True)
    for repeat in range(8):
        logs = tmp_path / f"logs{repeat}"
        outcome = launcher.launch(spec, repeat, tmp_path / f"work{repeat}", logs, timeout_s=120)
        assert outcome.status == "ok", (repeat, outcome.error)
        written = {p.name: p.read_text() for p in logs.iterdir() if p.is_file()}
        assert written and all(text == "" for text in written.values()), (repeat, written)
