"""One rank's record (ddpbench.rank.record): one builder for every kind of rank, from its meters. Every
figure declared per rank is given by a meter or by the rank's kind, a record stores the figures in the
order the three kinds stored them before there was one builder (a stored record of the committed
examples, rebuilt key for key; a meter registered since adds its figures after them), and each meter
gives its figures or their not-measured form."""

from __future__ import annotations

import json
import os

import pytest

from ddpbench.rank import record
from ddpbench.rank.energy import Meter as Counter
from ddpbench.rank.energy import NoCounter, Zone
from ddpbench.rank.record import (
    METERS,
    OWN,
    OWN_FIGURES,
    Affinity,
    Energy,
    GpuMemory,
    HostMemory,
    Meter,
    Meters,
    Side,
    Strategy,
    Switches,
    declared,
    rank_record,
)
from ddpbench.results import figures
from ddpbench.testing import ROOT

#: every per-rank figure results/figures.py declares, with the two that name the rank
PER_RANK = {"rank", "pid", *figures.RANK_FIGURES}


def _full_side() -> Side:
    """A rank that gives its meters everything a rank can (the built-in training's, on CPU)."""
    return Side(gpus=lambda: [], no_energy="no counter in this test", strategy=lambda: {"optimizer_state_mb": 1.0},
                gemm=lambda: {"peak_flops": None, "peak_method": None}, trace_error=lambda: None)


def test_every_figure_declared_per_rank_is_in_a_record_of_every_meter_not_measured():
    """A figure declared per rank in results/figures.py that no meter gives (nor the rank's kind, OWN_FIGURES)
    fails here: the builder would never store it."""
    meters = Meters(_full_side())
    got = rank_record(0, 1, "abc", meters, own=dict.fromkeys(OWN_FIGURES))
    missing = sorted(PER_RANK - set(got))
    assert not missing, f"declared per rank in results/figures.py, given by no meter (rank/record.py): {missing}"
    assert not figures.undeclared(got), "a meter gives a figure results/figures.py does not declare"


def test_the_meters_declare_each_figure_once_and_only_declared_ones():
    names = declared()
    assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]
    assert set(names) == PER_RANK | {"threads"}
    assert OWN in METERS


def test_a_meter_a_rank_cannot_have_stores_nothing_and_one_not_measured_says_so():
    tensorflow = Meters(Side(energy=None, no_energy="TensorFlow's GPUs are not torch's"))
    got = rank_record(1, 2, "c", tensorflow, own={"reduction": "ring"})
    # no GPU memory, no GEMM peak, no trace error, no strategy's figures: absent, not None
    assert not {"gpus", "gemm_peak_flops", "trace_error", "optimizer_state_mb"} & set(got)
    assert got["rank"] == 1 and got["pid"] == os.getpid() and got["threads"] == 2 and got["reduction"] == "ring"
    assert got["peak_rss_mb"] > 0  # memory no rank took is read as the record is built
    # never started: not measured, never a guess
    assert got["affinity"] is None and got["involuntary_switches_per_step"] is None
    assert got["energy_j"] is None and got["energy_note"] == "not measured: TensorFlow's GPUs are not torch's"


def test_meters_start_in_order_and_stop_in_reverse_so_the_energy_window_is_innermost():
    seen = []

    def recorder(name):
        class Recording(Meter):
            figures = (name,)

            def start(self):
                seen.append(("start", name))

            def stop(self, steps, samples):
                seen.append(("stop", name))
                self.found = {name: steps}

            def take(self):
                seen.append(("take", name))
        return Recording

    meters = Meters(Side(), kinds=(recorder("a"), OWN, recorder("b")))
    meters.start()
    meters.stop(3, 12.0)
    meters.take()
    assert seen == [("start", "a"), ("start", "b"), ("stop", "b"), ("stop", "a"), ("take", "a"), ("take", "b")]
    assert list(rank_record(0, 1, "x", meters, {"own": 1})) == ["rank", "pid", "threads", "a", "checksum", "own", "b"]
    # registered: the energy counter's window inside the context switches' and the CPUs'
    order = [kind for kind in METERS if kind in (Affinity, Switches, Energy)]
    assert order == [Affinity, Switches, Energy]


def test_placement_is_read_over_the_measured_steps():
    meters = Meters(Side(), kinds=(Affinity, Switches))
    meters.start()
    meters.stop(4, 0.0)
    found = meters.found()
    assert found["affinity"] == sorted(os.sched_getaffinity(0))
    assert found["involuntary_switches_per_step"] >= 0


def test_memory_is_taken_once_and_not_again_where_only_missing_is_asked():
    meters = Meters(Side(gpus=lambda: []), kinds=(HostMemory, GpuMemory))
    assert meters.found() == {}
    meters.take()
    first = meters.found()
    assert first["peak_rss_mb"] > 0 and first["gpus"] == 0 and first["gpu_peak_allocated_mb"] is None
    host = meters.meters[HostMemory]
    host.found = {**host.found, "peak_rss_mb": -1.0}  # marked: a second take would overwrite it
    meters.take(missing=True)
    assert meters.found()["peak_rss_mb"] == -1.0


def test_the_energy_meter_gives_its_window_s_figures_or_why_not():
    joules = iter([10.0, 11.0])
    counted = Energy(Side(energy=lambda: Counter("test:0", "a test counter", 1e-9, [Zone("z", lambda: next(joules))])))
    counted.start()
    counted.stop(2, 64.0)
    got = counted.read()
    assert got["energy_samples"] == 64.0 and got["energy_domain"] == "test:0" and list(got) == list(Energy.figures)

    def none():
        raise NoCounter("no counter here")

    missing = Energy(Side(energy=none))
    missing.start()
    missing.stop(2, 64.0)
    assert missing.read()["energy_j"] is None and "no counter here" in missing.read()["energy_note"]


def test_a_strategy_s_figures_are_stored_as_it_gives_them():
    meter = Strategy.make(Side(strategy=lambda: {"dp_replicas": 1, "traffic_source": "none"}))
    meter.take()
    assert meter.read() == {"dp_replicas": 1, "traffic_source": "none"}
    assert Strategy.make(Side()) is None


def _stored_training_rank() -> dict:
    """A rank's record the built-in training stored before there was one builder (schema 2, energy and all)."""
    path = ROOT / "reports" / "examples" / "cost-cpu" / "results.jsonl"
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("kind") == "run" and rec.get("result"):
            return rec["result"]["ranks"][0]
    pytest.skip("no stored run in the cost-cpu example")


def _fill(meters: Meters, stored: dict) -> None:
    """Each meter found what the stored record holds of its figures (nothing measured here)."""
    for meter in meters.each():
        if isinstance(meter, Strategy):
            meter.found = {k: stored[k] for k in stored if k in Strategy.figures}
        elif meter.figures[0] in stored:
            meter.found = {k: stored[k] for k in meter.figures}


def test_a_training_rank_s_record_is_byte_for_byte_what_it_stored_before():
    stored = _stored_training_rank()
    meters = Meters(Side(gpus=lambda: [], energy=None, strategy=dict, gemm=lambda: {"peak_flops": stored[
        "gemm_peak_flops"]}, trace_error=lambda: stored["trace_error"]))
    _fill(meters, stored)
    got = list(rank_record(stored["rank"], stored["threads"], stored["checksum"], meters).items())
    assert json.dumps({**dict(got[:len(stored)]), "pid": stored["pid"]}) == json.dumps(stored)
    _only_later_figures_after(got, len(stored))


def _only_later_figures_after(got: list, stored: int) -> None:
    """What a record holds after the figures stored before there was one builder: figures of meters registered
    since (at the end of METERS), each declared per rank."""
    later = [name for name, _ in got[stored:]]
    assert all(name in figures.BY_NAME for name in later), later


#: the keys a script's rank and a TensorFlow rank stored, in order, before there was one builder
#: (ddpbench/rank/script/rank.py and tensorflow.py at f74940e; a script's DDP statistics as ddp_stats gives them)
SCRIPT_KEYS = ["rank", "pid", "threads", "peak_rss_mb", "rank_memory_mb", "uss_mb", "pss_mb", "rss_file_mb", "gpus",
               "gpu_peak_allocated_mb", "gpu_peak_reserved_mb", "checksum", "bucket_bytes", "allreduce_bytes_per_step",
               "bytes_sent_per_step", "bytes_recv_per_step", "traffic_source", "optimizer_state_mb", "bucket_comm_ms",
               "affinity", "involuntary_switches_per_step", *record.ENERGY_FIGURES]
TENSORFLOW_KEYS = ["rank", "pid", "threads", "peak_rss_mb", "rank_memory_mb", "uss_mb", "pss_mb", "rss_file_mb",
                   "checksum", "dp_replicas", "framework_version", "reduction", "affinity",
                   "involuntary_switches_per_step", *record.ENERGY_FIGURES]


def test_a_script_s_and_a_tensorflow_rank_s_records_keep_their_order():
    script = Meters(Side(gpus=lambda: [], no_energy="a script job's energy is not read yet (docs/cost-and-energy.md)"))
    own = {"bucket_bytes": [4], "allreduce_bytes_per_step": 4, "bytes_sent_per_step": 0.0, "bytes_recv_per_step": 0.0,
           "traffic_source": "computed: ring all-reduce", "optimizer_state_mb": 0.0, "bucket_comm_ms": None}
    got = rank_record(0, 1, "c", script, own)
    assert list(got)[:len(SCRIPT_KEYS)] == SCRIPT_KEYS
    _only_later_figures_after(list(got.items()), len(SCRIPT_KEYS))
    assert got["energy_note"] == "not measured: a script job's energy is not read yet (docs/cost-and-energy.md)"
    tensorflow = Meters(Side(no_energy="TensorFlow's GPUs are not mapped to NVML's devices"))
    own = {"dp_replicas": 2, "framework_version": "tensorflow 2.16", "reduction": "ring"}
    got = rank_record(0, 1, "c", tensorflow, own)
    assert list(got)[:len(TENSORFLOW_KEYS)] == TENSORFLOW_KEYS
    _only_later_figures_after(list(got.items()), len(TENSORFLOW_KEYS))
