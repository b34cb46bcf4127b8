"""Energy over the timed steps (ddpbench.rank.energy), through its seams: a powercap folder of stand-in
RAPL files that wrap or cannot be read, an NVML stand-in whose counter updates every 100 ms, and a
clock. No counter, an unreadable one or a window too short gives no figure and one line why,
never a zero."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpbench.rank import energy
from ddpbench.rank.energy import (
    MIN_UPDATES,
    NVML_PERIOD_S,
    EnergyWindow,
    Meter,
    NoCounter,
    Zone,
    meter_for,
    nvml_meter,
    rapl_meter,
)
from ddpbench.testing.fuzzing import examples


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _zone(root: Path, name: str, label: str, uj: int, wrap_uj: int = 262_143_328_850) -> Path:
    zone = root / name
    zone.mkdir(parents=True)
    (zone / "name").write_text(label + "\n")
    (zone / "energy_uj").write_text(f"{uj}\n")
    (zone / "max_energy_range_uj").write_text(f"{wrap_uj}\n")
    return zone


@pytest.fixture
def powercap(tmp_path):
    root = tmp_path / "powercap"
    _zone(root, "intel-rapl:0", "package-0", 1_000_000)
    _zone(root / "intel-rapl:0", "intel-rapl:0:0", "core", 500_000)  # inside the package: not counted again
    _zone(root / "intel-rapl:0", "intel-rapl:0:1", "dram", 2_000_000)  # beside it: counted
    return root


def _set(zone: Path, uj: int) -> None:
    (zone / "energy_uj").write_text(f"{uj}\n")


def test_rapl_counts_each_package_and_its_dram_once(powercap):
    meter = rapl_meter(powercap, host="h")
    assert [z.name for z in meter.zones] == ["intel-rapl:0", "intel-rapl:0:1"]
    assert meter.domain == "rapl:h:intel-rapl:0,intel-rapl:0:1" and "package + dram" in meter.method
    clock = Clock()
    window = EnergyWindow(lambda: meter, clock)
    window.start()
    _set(powercap / "intel-rapl:0", 1_000_000 + 40_000_000)  # +40 J
    _set(powercap / "intel-rapl:0" / "intel-rapl:0:1", 2_000_000 + 5_000_000)  # +5 J
    clock.now += 3.0
    figures = window.stop(steps=30, samples=960)
    assert figures["energy_j"] == pytest.approx(45.0)
    assert figures["energy_window_s"] == pytest.approx(3.0) and figures["energy_samples"] == 960
    assert figures["energy_note"] is None and figures["energy_period_s"] == energy.RAPL_PERIOD_S


def test_a_rapl_counter_that_wraps_in_the_window_is_undone(powercap):
    package = powercap / "intel-rapl:0"
    (package / "max_energy_range_uj").write_text("50000000\n")  # wraps at 50 J
    _set(package, 48_000_000)
    clock = Clock()
    window = EnergyWindow(lambda: rapl_meter(powercap, host="h"), clock)
    window.start()
    _set(package, 3_000_000)  # 48 J -> wrapped -> 3 J: 5 J
    clock.now += 2.0
    assert window.stop(steps=10, samples=10)["energy_j"] == pytest.approx(5.0)


@given(start=st.integers(0, 10**12 - 1), delta=st.integers(0, 10**12 - 1))
@settings(max_examples=examples(200), deadline=None)
def test_any_single_wrap_is_undone(start, delta):
    wrap = 10**12
    values = iter([start / 1e6, ((start + delta) % wrap) / 1e6])
    meter = Meter("d", "m", 0.001, [Zone("z", lambda: next(values), wrap / 1e6)])
    assert meter.joules(meter.read(), meter.read()) == pytest.approx(delta / 1e6, abs=1e-6)


def test_no_powercap_is_said_in_one_line(tmp_path):
    window = EnergyWindow(lambda: rapl_meter(tmp_path / "absent"))
    window.start()
    figures = window.stop(steps=10, samples=10)
    assert figures["energy_j"] is None and figures["energy_method"] is None
    note = figures["energy_note"]
    assert note.startswith("not available here:") and "powercap" in note and "TDP" in note and "\n" not in note


def test_an_unreadable_rapl_counter_says_why(powercap):
    def read(path: Path) -> str:
        if path.name == "energy_uj":
            raise PermissionError(13, "Permission denied")
        return path.read_text()

    window = EnergyWindow(lambda: rapl_meter(powercap, read, host="h"))
    window.start()
    figures = window.stop(steps=10, samples=10)
    assert figures["energy_j"] is None and "only root reads RAPL" in figures["energy_note"]


def test_a_counter_that_fails_mid_window_gives_no_figure(powercap):
    state = {"fail": False}

    def read(path: Path) -> str:
        if state["fail"] and path.name == "energy_uj":
            raise OSError(5, "Input/output error")
        return path.read_text()

    clock = Clock()
    window = EnergyWindow(lambda: rapl_meter(powercap, read, host="h"), clock)
    window.start()
    state["fail"] = True
    clock.now += 5
    figures = window.stop(steps=10, samples=10)
    assert figures["energy_j"] is None and "could not be read at the end" in figures["energy_note"]


class FakeNvml:
    """NVML with GPUs drawing ``watts``, whose total-energy counter (mJ) updates every 100 ms of ``clock``."""

    class Error(Exception):
        pass

    def __init__(self, clock, watts=(300.0,), counter=True, starts=True):
        self.clock, self.watts, self.counter, self.starts = clock, watts, counter, starts

    def nvmlInit(self):
        if not self.starts:
            raise self.Error("NVML Shared Library Not Found")

    def nvmlDeviceGetHandleByUUID(self, uuid: bytes):
        return int(uuid.decode().rsplit("-", 1)[1])  # "GPU-0001": the stand-in's second GPU

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        if not self.counter:
            raise self.Error("Not Supported")
        updated = math.floor(self.clock() / NVML_PERIOD_S) * NVML_PERIOD_S  # the last update
        return int(self.watts[handle] * updated * 1e3)


def test_nvml_reads_each_gpu_of_the_rank():
    clock = Clock()
    nvml = FakeNvml(clock, watts=(300.0, 250.0))
    window = EnergyWindow(lambda: nvml_meter(["GPU-0000", "GPU-0001"], nvml), clock)
    window.start()
    clock.now += 10.0
    figures = window.stop(steps=1000, samples=64_000)
    assert figures["energy_j"] == pytest.approx(550.0 * 10.0, rel=2 * NVML_PERIOD_S / 10)
    assert figures["energy_domain"] == "nvml:GPU-0000,GPU-0001" and "NVML" in figures["energy_method"]


@given(window=st.floats(2 * MIN_UPDATES * NVML_PERIOD_S, 60.0), offset=st.floats(0, 1))
@settings(max_examples=examples(100), deadline=None)
def test_a_counter_updating_every_100ms_is_within_its_bound_on_any_long_window(window, offset):
    clock = Clock()
    clock.now += offset
    nvml = FakeNvml(clock)
    measured = EnergyWindow(lambda: nvml_meter(["GPU-0000"], nvml), clock)
    measured.start()
    clock.now += window
    joules = measured.stop(steps=100, samples=100)["energy_j"]
    assert joules == pytest.approx(300.0 * window, rel=2 / MIN_UPDATES)


def test_a_window_under_twenty_updates_is_too_short_and_says_how_many_steps_would_do():
    clock = Clock()
    nvml = FakeNvml(clock)
    window = EnergyWindow(lambda: nvml_meter(["GPU-0000"], nvml), clock)
    window.start()
    clock.now += 0.5  # 20 steps of 25 ms: five updates
    figures = window.stop(steps=20, samples=640)
    assert figures["energy_j"] is None and figures["energy_window_s"] == pytest.approx(0.5)
    note = figures["energy_note"]
    assert note.startswith("too short to measure") and "about 80 steps would do" in note


@pytest.mark.parametrize("nvml, says", [
    (FakeNvml(Clock(), starts=False), "NVML cannot start here"),
    (FakeNvml(Clock(), counter=False), "has no NVML total-energy counter"),
])
def test_nvml_without_a_counter_says_why(nvml, says):
    window = EnergyWindow(lambda: nvml_meter(["GPU-0000"], nvml))
    window.start()
    figures = window.stop(steps=10, samples=10)
    assert figures["energy_j"] is None and says in figures["energy_note"]


def test_without_nvidia_ml_py_it_says_what_to_install(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    with pytest.raises(NoCounter, match="pip install nvidia-ml-py"):
        nvml_meter(["GPU-0000"])


def test_a_cpu_rank_meters_the_host_and_a_gpu_rank_its_gpus(powercap):
    class Device:
        def __init__(self, type, index=None):
            self.type, self.index = type, index

    assert meter_for([], powercap).domain.startswith("rapl:")
    nvml = FakeNvml(Clock(), watts=(1.0, 2.0))
    assert meter_for([Device("cuda", 1)], powercap, nvml, uuid=lambda d: f"GPU-{d.index:04d}").domain == "nvml:GPU-0001"
