"""What a rank reads of the machine over its measured steps, from /proc files written here."""

from __future__ import annotations

import os
import time

import pytest

from ddpbench.rank import neighbours


def write_stat(path, busy: int, steal: int, idle: int = 1000) -> None:
    # user nice system idle iowait irq softirq steal guest guest_nice: busy split over user, system, softirq
    path.write_text(f"cpu  {busy - 3} 1 1 {idle} 5 0 1 {steal} 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n")


def test_busy_and_steal_cores_over_the_window_from_proc_stat(tmp_path, monkeypatch):
    stat, info = tmp_path / "stat", tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\ncpu MHz\t\t: 2000.0\nprocessor\t: 1\ncpu MHz\t\t: 3000.0\n")
    write_stat(stat, busy=100, steal=10)
    clock = iter([50.0, 52.0])  # a 2 s window
    monkeypatch.setattr(neighbours.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(neighbours, "own_cpu_s", iter([10.0, 11.5]).__next__)
    window = neighbours.Window(str(stat), str(info))
    window.start()
    ticks = os.sysconf("SC_CLK_TCK")
    write_stat(stat, busy=100 + 3 * ticks, steal=10 + ticks // 2)  # 3 busy seconds, half a second stolen
    found = window.stop()
    assert found == {"cpu_cores": pytest.approx(0.75), "machine_busy_cores": pytest.approx(1.5),
                     "machine_steal_cores": pytest.approx(0.25, abs=1 / ticks), "cpu_mhz": 2500.0}


@pytest.mark.parametrize("text", ["", "intr 1 2 3\n", "cpu  a b c d e f g h\n", "cpu  1 2 3\n"])
def test_an_unreadable_proc_stat_leaves_the_machine_figures_missing_not_the_rank_s(tmp_path, text):
    stat = tmp_path / "stat"
    stat.write_text(text)
    window = neighbours.Window(str(stat), str(tmp_path / "no-cpuinfo"))
    window.start()
    time.sleep(0.01)
    found = window.stop()
    assert found["machine_busy_cores"] is None and found["machine_steal_cores"] is None and found["cpu_mhz"] is None
    assert found["cpu_cores"] >= 0


def test_a_window_never_started_has_no_figures():
    assert neighbours.Window().stop() == dict.fromkeys(neighbours.FIGURES)


def test_the_rank_s_own_cores_count_its_busy_threads():
    """A thread busy all the window: the rank's cores are its CPU time over the window, however loaded the
    machine (on a busy machine the thread gets less than a core, and the figure says so)."""
    wall, cpu = time.monotonic(), time.process_time()
    window = neighbours.Window()
    window.start()
    end = time.monotonic() + 0.2
    while time.monotonic() < end:
        pass
    found = window.stop()
    wall, cpu = time.monotonic() - wall, time.process_time() - cpu
    assert found["cpu_cores"] == pytest.approx(cpu / wall, abs=0.15)
    assert 0 < found["cpu_cores"] <= 1.1
    if os.path.exists(neighbours.STAT):
        assert found["machine_busy_cores"] >= found["cpu_cores"] - 0.2  # the machine saw this rank's work
