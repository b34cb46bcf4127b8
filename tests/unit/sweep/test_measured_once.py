"""The measure-once figures (ddpbench.sweep.measured_once): found when taken under the same conditions, measured
again when not, a damaged entry or a link read as none, never a traceback, never a write through a link."""

import json
import os
from types import SimpleNamespace

import pytest

import ddpbench
from ddpbench.experiment.collectives import parse_collectives
from ddpbench.results.store import ResultStore
from ddpbench.sweep import measured_once
from ddpbench.sweep.measured_once import GEMM_PEAK, MeasuredOnce, cache_dir, gemm_given, gemm_key, learn_gemm
from ddpbench.sweep.runner import run_collectives
from ddpbench.testing.launchers import ENV, FakeLauncher

CONDITIONS = {"hostname": "box", "cpu_model": "CPU X", "cores_usable": 2, "gpus": [], "torch_version": "2.9.0",
              "torch_cuda": None, "ddpbench_version": "0.1"}
KEY = {"device": "cpu", "threads": 1, "cpu_affinity": "", "dtype": "fp32", "ranks_at_once": 2, "local_rank": 0}
FIGURES = {"peak_flops": 5e10, "peak_method": "best of 10 1024x1024 fp32 matmuls on 1 thread", "gemm_threads": 1}
BY = {"sweep_id": "abc", "key": "k", "repeat": 0}
NOW = measured_once.utc_now()


def entry_file(directory):
    (path,) = [p for p in directory.iterdir() if p.suffix == ".json"]
    return path


def test_the_cache_folder_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("DDPBENCH_CACHE_DIR", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    for off in ("off", "0", "", " OFF "):
        monkeypatch.setenv("DDPBENCH_CACHE_DIR", off)
        assert cache_dir() is None
    monkeypatch.delenv("DDPBENCH_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "ddpbench" / "measured-once"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "ddpbench" / "measured-once"


def test_measured_once_then_reused_from_the_sweep_then_from_the_cache(tmp_path):
    sweep = MeasuredOnce(CONDITIONS, tmp_path)
    assert sweep.find(GEMM_PEAK, KEY) is None
    sweep.keep(GEMM_PEAK, KEY, FIGURES, BY, taken_utc=NOW)
    own = sweep.find(GEMM_PEAK, KEY)
    assert own.source == "sweep" and own.figures == FIGURES and "earlier launch of this sweep" in own.words()
    later = MeasuredOnce(dict(CONDITIONS), tmp_path).find(GEMM_PEAK, KEY)
    assert later.source == "cache" and later.figures == FIGURES and later.measured_by == BY
    assert later.taken_utc == NOW
    assert later.words() == f"reused from the measure-once cache, taken {NOW[:10]} {NOW[11:19]} UTC"
    assert later.given()["figures"] == FIGURES and later.given()["source"] == "cache"
    assert entry_file(tmp_path).stat().st_mode & 0o777 == 0o600


def test_an_old_entry_is_measured_again(tmp_path, monkeypatch):
    MeasuredOnce(CONDITIONS, tmp_path).keep(GEMM_PEAK, KEY, FIGURES, BY, taken_utc="2026-01-01T00:00:00+00:00")
    assert MeasuredOnce(CONDITIONS, tmp_path).find(GEMM_PEAK, KEY) is None
    monkeypatch.setenv("DDPBENCH_CACHE_MAX_AGE_DAYS", "100000")
    assert MeasuredOnce(CONDITIONS, tmp_path).find(GEMM_PEAK, KEY).source == "cache"
    MeasuredOnce(CONDITIONS, tmp_path).keep(GEMM_PEAK, KEY, FIGURES, BY, taken_utc="3026-01-01T00:00:00+00:00")
    assert MeasuredOnce(CONDITIONS, tmp_path).find(GEMM_PEAK, KEY) is None  # from the future: not trusted


@pytest.mark.parametrize("field, value", [("torch_version", "2.10.0"), ("cpu_model", "CPU Y"), ("gpus", ["H100"]),
                                          ("ddpbench_version", "0.2"), ("cores_usable", 4)])
def test_other_conditions_measure_again(tmp_path, field, value):
    MeasuredOnce(CONDITIONS, tmp_path).keep(GEMM_PEAK, KEY, FIGURES, BY)
    assert MeasuredOnce({**CONDITIONS, field: value}, tmp_path).find(GEMM_PEAK, KEY) is None


def test_another_key_or_host_measures_again(tmp_path):
    MeasuredOnce(CONDITIONS, tmp_path).keep(GEMM_PEAK, KEY, FIGURES, BY)
    cache = MeasuredOnce(CONDITIONS, tmp_path)
    for other in ({**KEY, "threads": 2}, {**KEY, "ranks_at_once": 1}, {**KEY, "local_rank": 1}):
        assert cache.find(GEMM_PEAK, other) is None
    assert cache.find(measured_once.COLLECTIVES, KEY) is None
    assert MeasuredOnce({**CONDITIONS, "hostname": "other"}, tmp_path).find(GEMM_PEAK, KEY) is None


@pytest.mark.parametrize("damage", [b"", b"{\"version\": 1, \"kind\": \"gemm_", b"not json", b"[1, 2]", b"\xff\xfe",
                                    b'{"version": 1}', "version", "figures", "taken_utc"])
def test_a_damaged_entry_is_measured_again_without_a_traceback(tmp_path, damage):
    MeasuredOnce(CONDITIONS, tmp_path).keep(GEMM_PEAK, KEY, FIGURES, BY)
    path = entry_file(tmp_path)
    if isinstance(damage, bytes):
        path.write_bytes(damage)
    else:  # a field of the wrong shape
        entry = json.loads(path.read_text())
        entry[damage] = 7 if damage != "version" else 99
        path.write_text(json.dumps(entry))
    cache = MeasuredOnce(CONDITIONS, tmp_path)
    assert cache.find(GEMM_PEAK, KEY) is None
    cache.keep(GEMM_PEAK, KEY, {**FIGURES, "peak_flops": 6e10}, BY)  # measured again: the entry replaced
    assert MeasuredOnce(CONDITIONS, tmp_path).find(GEMM_PEAK, KEY).figures["peak_flops"] == 6e10


def test_never_read_or_written_through_a_link(tmp_path):
    cache, outside = tmp_path / "cache", tmp_path / "outside.json"
    MeasuredOnce(CONDITIONS, cache).keep(GEMM_PEAK, KEY, FIGURES, BY)
    path = entry_file(cache)
    outside.write_text(path.read_text())  # a valid entry, reached through a link only
    path.unlink()
    path.symlink_to(outside)
    before = outside.read_text()
    sweep = MeasuredOnce(CONDITIONS, cache)
    assert sweep.find(GEMM_PEAK, KEY) is None
    sweep.keep(GEMM_PEAK, KEY, {**FIGURES, "peak_flops": 1.0}, BY)
    assert outside.read_text() == before and path.is_symlink()
    assert sweep.notes and "symbolic link" in sweep.notes[0]
    assert sweep.find(GEMM_PEAK, KEY).source == "sweep"  # this sweep still measured it once
    assert not [p for p in cache.iterdir() if p.name.endswith(".tmp")]


def test_a_cache_that_cannot_be_written_is_left_alone(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")
    sweep = MeasuredOnce(CONDITIONS, blocked / "cache")  # its parent is a file: mkdir fails
    sweep.keep(GEMM_PEAK, KEY, FIGURES, BY)
    assert sweep.notes and sweep.find(GEMM_PEAK, KEY).source == "sweep"


def test_without_a_cache_each_sweep_measures_once(tmp_path, monkeypatch):
    monkeypatch.setenv("DDPBENCH_CACHE_DIR", "off")
    monkeypatch.chdir(tmp_path)
    sweep = MeasuredOnce(CONDITIONS)
    assert sweep.directory is None
    sweep.keep(GEMM_PEAK, KEY, FIGURES, BY)
    assert sweep.find(GEMM_PEAK, KEY).source == "sweep"
    assert MeasuredOnce(CONDITIONS).find(GEMM_PEAK, KEY) is None
    assert os.listdir(tmp_path) == []


SPEC = SimpleNamespace(kind="run", device="cpu", threads_per_rank=1, cpu_affinity="", processes=2, script="",
                       check_every_repeat=False, key="k1")
SPAWN = SimpleNamespace(name="spawn")


def result(source="measured", peaks=(4e10, 5e10)):
    return {"compute": {"peak_source": source, "peak_method": "best of 10 1024x1024 fp32 matmuls on 1 thread"},
            "ranks": [{"rank": r, "gemm_peak_flops": p} for r, p in enumerate(peaks)]}


def test_a_launch_is_handed_each_ranks_peak_once_measured(tmp_path):
    sweep = MeasuredOnce(CONDITIONS, tmp_path)
    assert gemm_given(sweep, SPEC, 0, SPAWN) is None  # nothing yet: it measures
    learn_gemm(sweep, SPEC, 0, SPAWN, result(), BY)
    given = gemm_given(sweep, SPEC, 0, SPAWN)
    assert [given[r]["figures"]["peak_flops"] for r in ("0", "1")] == [4e10, 5e10]
    assert given["0"]["source"] == "sweep" and given["0"]["figures"]["gemm_threads"] == 1
    assert sweep.find(GEMM_PEAK, gemm_key(SPEC, 1, 2)).figures["peak_flops"] == 5e10
    assert gemm_given(sweep, SPEC, 1, SPAWN) is None  # a later repeat measures no peak at all
    assert gemm_given(sweep, SPEC, 0, SimpleNamespace(name="slurm")) is None  # ranks elsewhere: their own
    one = SimpleNamespace(**{**vars(SPEC), "processes": 1})
    assert gemm_given(sweep, one, 0, SPAWN) is None  # one rank alone is not two at once
    every = SimpleNamespace(**{**vars(SPEC), "check_every_repeat": True})
    assert gemm_given(sweep, every, 0, SPAWN) is None  # asked for in every launch: measured in every one


def test_only_a_measured_peak_is_kept(tmp_path):
    sweep = MeasuredOnce(CONDITIONS, tmp_path)
    for handed in (result("cache"), result("sweep"), result(peaks=(4e10,)), result(peaks=(4e10, None)), None):
        learn_gemm(sweep, SPEC, 0, SPAWN, handed, BY)
    assert not list(tmp_path.iterdir()) and gemm_given(sweep, SPEC, 0, SPAWN) is None


def test_a_collectives_curve_is_measured_once_then_reused_and_said_so(tmp_path):
    class Local(FakeLauncher):
        name = "spawn"

    coll = parse_collectives({"ops": ["all_reduce"], "sizes": "1K:4K", "world_sizes": [2]}, "c.toml")
    cache, launcher = tmp_path / "cache", Local()
    run_collectives(coll, tmp_path / "a", launcher=launcher, env=ENV, once=MeasuredOnce(CONDITIONS, cache))
    assert len(launcher.calls) == 1
    summary = run_collectives(coll, tmp_path / "b", launcher=launcher, env=ENV, once=MeasuredOnce(CONDITIONS, cache))
    assert len(launcher.calls) == 1 and summary.statuses == {"ok": 1}  # not run again
    (record,) = [r for r in ResultStore(tmp_path / "b").records() if r["kind"] == "collective"]
    assert record["launcher"] == "measured once" and record["wall_s"] == 0
    assert record["reused"]["source"] == "cache" and record["reused"]["measured_by"]["folder"] == str(tmp_path / "a")
    table = ddpbench.load_collectives(tmp_path / "b")
    assert set(table["reused"]) == {record["reused"]["words"]} and len(table) == 3
    assert ddpbench.load_collectives(tmp_path / "a")["reused"].isna().all()
    other = MeasuredOnce({**CONDITIONS, "torch_version": "3.0"}, cache)
    run_collectives(coll, tmp_path / "c", launcher=launcher, env=ENV, once=other)
    assert len(launcher.calls) == 2  # other conditions: measured again
    run_collectives(coll, tmp_path / "d", launcher=launcher, env=ENV, once=MeasuredOnce(CONDITIONS, cache),
                    reuse=False)
    assert len(launcher.calls) == 3  # the collectives command measures what it is asked to


def outrun(source="measured", peaks=(2e10, 5e10), step_ms=(20.0, 30.0), flops=1e9):
    """A finished launch whose ranks recorded ``peaks`` and took ``step_ms`` a measured step each (with a
    faster warm-up step that counts for nothing), computing ``flops`` a step: rank r's rate is
    flops / step_ms[r], 5e10 and 3.3e10 FLOP/s by default (rank 0 at 2.5 times its peak)."""
    steps = [[r, "warmup", 0, 1.0] for r in (0, 1)]
    steps += [[r, "measure", s, ms] for r, ms in enumerate(step_ms) for s in range(3)]
    return {**result(source, peaks), "step_columns": ["rank", "phase", "step", "step_ms"], "steps": steps,
            "compute": {**result(source, peaks)["compute"], "flops_per_step": flops}}


def test_outrun_is_more_than_its_margin_by_any_rank_of_an_fp32_cpu_launch():
    """A rank computing more than OUTRUN times its peak a second outran it; at 1.25 times (a 1024x1024
    product's under-reading on many threads) it did not; rank 1 alone counts as well; a GPU launch or
    another precision is not judged, nor a result whose figures are not numbers."""
    assert measured_once.OUTRUN == 1.5
    assert measured_once.outran(SPEC, outrun())
    assert measured_once.outran(SPEC, outrun(peaks=(6e10, 6e10), step_ms=(30.0, 10.0)))
    assert not measured_once.outran(SPEC, outrun(peaks=(4e10, 4e10)))  # 1.25 times
    assert not measured_once.outran(SPEC, outrun(peaks=(6e10, 6e10)))
    for other in ({"device": "cuda"}, {"precision": "bf16"}):
        assert not measured_once.outran(SimpleNamespace(**{**vars(SPEC), **other}), outrun())
    for damaged in (outrun(flops=None), outrun(flops="many"), {**outrun(), "steps": [[0, "measure", 0, None]]},
                    {**outrun(), "steps": [[[0], "measure", 0, 1.0]]}, {**outrun(), "steps": [[0, "measure"]]},
                    {**outrun(), "compute": []}, {**outrun(), "step_columns": None}):
        assert not measured_once.outran(SPEC, damaged)


def test_a_peak_its_ranks_outran_is_not_kept_and_a_handed_one_is_forgotten(tmp_path):
    """A peak taken while the machine was busy is one its ranks compute far faster than: not kept from the
    launch that measured it; and one handed out, from this sweep or the cache, is dropped from both, so
    that the next launch that needs it measures it again. One console note names every such job."""
    sweep = MeasuredOnce(CONDITIONS, tmp_path)
    learn_gemm(sweep, SPEC, 0, SPAWN, outrun(), BY)
    assert gemm_given(sweep, SPEC, 0, SPAWN) is None and not list(tmp_path.iterdir())
    learn_gemm(sweep, SPEC, 0, SPAWN, outrun(peaks=(6e10, 6e10)), BY)  # none outran: kept
    assert gemm_given(sweep, SPEC, 0, SPAWN)["0"]["figures"]["peak_flops"] == 6e10
    for source in ("sweep", "cache"):
        learn_gemm(sweep, SPEC, 0, SPAWN, outrun(peaks=(6e10, 6e10)), BY)
        learn_gemm(sweep, SPEC, 0, SPAWN, outrun(source, peaks=(6e10, 6e10), step_ms=(10.0, 30.0)), BY)
        assert gemm_given(sweep, SPEC, 0, SPAWN) is None  # this sweep's own, gone
        assert MeasuredOnce(CONDITIONS, tmp_path).find(GEMM_PEAK, gemm_key(SPEC, 0, 2)) is None  # the cache's
        assert not list(tmp_path.iterdir())
    other = SimpleNamespace(**{**vars(SPEC), "key": "k2"})
    learn_gemm(sweep, other, 0, SPAWN, outrun(), BY)
    (note,) = sweep.notes
    assert note.startswith("the matmul peak of 2 job(s) was outrun") and note.endswith(": k1, k2")
    learn_gemm(sweep, SPEC, 0, SPAWN, outrun(peaks=(6e10, 6e10)), BY)  # measured again, and kept
    learn_gemm(sweep, SPEC, 0, SPAWN, outrun("cache", peaks=(6e10, 6e10)), BY)  # handed, not outrun: stays
    assert gemm_given(sweep, SPEC, 0, SPAWN)["1"]["figures"]["peak_flops"] == 6e10
    # ranks on other machines (Slurm) measure their own peaks: what they outran is theirs, not this cache's
    learn_gemm(sweep, SPEC, 0, SimpleNamespace(name="slurm"), outrun("sweep", peaks=(6e10, 6e10), step_ms=(5.0, 5.0)),
               BY)
    assert gemm_given(sweep, SPEC, 0, SPAWN)["1"]["figures"]["peak_flops"] == 6e10


def test_forgetting_never_removes_through_a_link(tmp_path):
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    cache = tmp_path / "cache"
    sweep = MeasuredOnce(CONDITIONS, cache)
    sweep.keep(GEMM_PEAK, KEY, FIGURES, BY)
    path = entry_file(cache)
    path.unlink()
    path.symlink_to(target)
    sweep.forget(GEMM_PEAK, KEY)
    assert path.is_symlink() and sweep.find(GEMM_PEAK, KEY) is None
