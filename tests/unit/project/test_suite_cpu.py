"""benchmarks/suite_cpu.py's reading of the kernel's accounting records (ddpbench.testing.accounting):
records packed here by hand (linux/acct.h's ``acct_v3``, its times as ``comp_t``), a process tree
planted under a root, and what the tally must say of each process."""

from __future__ import annotations

import struct

import pytest

from ddpbench.testing.accounting import FORKED, Sampler, comp_t, read_records, tally


def encoded(ticks: int) -> int:
    """``ticks`` as a comp_t, as the kernel's encode_comp_t() writes it: the mantissa shifted right by
    three bits, rounding half up, until it fits 13 bits."""
    exponent = 0
    while ticks > 0x1FFF:
        rounding = ticks & 4
        ticks >>= 3
        if rounding:
            ticks += 1
        exponent += 1
    if ticks > 0x1FFF:
        ticks >>= 3
        exponent += 1
    return (exponent << 13) | ticks


def record(pid: int, ppid: int, user_ticks: int, system_ticks: int, name: bytes = b"python", forked=False,
           version: int = 3) -> bytes:
    head = struct.pack("<BBHIIIIIIf", 1 if forked else 0, version, 0, 0, 0, 0, pid, ppid, 1_700_000_000, 12.5)
    times = struct.pack("<8H", encoded(user_ticks), encoded(system_ticks), 0, 0, 0, 0, 0, 0)
    return head + times + name.ljust(16, b"\0")


@pytest.mark.parametrize("ticks", [0, 1, 8191, 8192, 65_535, 100_000, 1_234_567])
def test_comp_t_reads_back_what_the_kernel_encodes_within_its_rounding(ticks):
    back = comp_t(encoded(ticks))
    assert abs(back - ticks) <= max(1, ticks // 2048)  # 13 bits of mantissa


def test_records_are_read_with_their_cpu_and_other_versions_are_skipped(tmp_path):
    path = tmp_path / "pacct"
    path.write_bytes(record(10, 1, 150, 50) + record(11, 10, 7, 3, b"raylet", forked=True)
                     + record(12, 10, 5, 5, version=2))
    got = read_records(path)
    assert [(r.pid, r.ppid, r.forked, r.cpu_s, r.name) for r in got] == [(10, 1, False, 2.0, "python"),
                                                                      (11, 10, True, 0.1, "raylet")]


def test_the_tally_sorts_the_processes_under_the_root_by_kind_and_by_test(tmp_path):
    folder = "/tmp/pytest-of-root/pytest-3/popen-gw1/test_kill_9_of_a_sweep_with_a_0"
    seen = {
        100: (1, "python -m pytest -q"),
        101: (100, "python -u -c import sys;exec(eval(sys.stdin.readline()))"),
        # a sweep a test started, its fork server, a rank the server forked (its command line the server's)
        102: (101, f"python -m ddpbench sweep {folder}/stuck.toml --out {folder}/out"),
        103: (102, "python -c from multiprocessing.forkserver import main; main(3, 5)"),
        104: (103, "python -c from multiprocessing.forkserver import main; main(3, 5)"),
        # an orphan: reaped by init, its first parent the sweep
        105: (102, "python -m ddpbench.rank"),
        # a worker's own folder names no test
        108: (101, "python -m pytest --basetemp=/tmp/pytest-of-root/pytest-3/popen-gw1/ -q"),
        # not under pytest
        200: (1, "python -m ddpbench report elsewhere"),
    }
    records = [record(104, 103, 300, 0), record(106, 103, 100, 0, forked=True), record(105, 1, 250, 50),
               record(103, 102, 280, 20), record(102, 101, 200, 40), record(107, 101, 1, 0, b"git"),
               record(101, 100, 900, 100), record(108, 101, 50, 0), record(200, 1, 500, 0), record(100, 1, 10, 0)]
    (tmp_path / "pacct").write_bytes(b"".join(records))
    got = tally(read_records(tmp_path / "pacct"), seen, root=100)
    assert dict(got.by_kind) == pytest.approx({FORKED: 4.0, "rank, new interpreter": 3.0, "fork server": 3.0,
                                               "ddpbench command": 2.4, "other: git": 0.01, "pytest worker": 10.0,
                                               "pytest": 0.6})
    assert got.processes[FORKED] == 2 and sum(got.processes.values()) == 9  # the root too, not 200
    test, rest = "test_kill_9_of_a_sweep_with_a_", "(no test named: pytest's own processes and what runs in them)"
    assert dict(got.by_test) == pytest.approx({test: 12.4, rest: 10.61})
    assert got.total_s == pytest.approx(23.01)


def test_the_sampler_notes_each_process_once_with_its_parent_then(tmp_path):
    for pid, ppid, argv in ((7, 1, b"python\0-m\0pytest\0"), (8, 7, b"ray::Train\0")):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "cmdline").write_bytes(argv)
        (tmp_path / str(pid) / "stat").write_text(f"{pid} (py thon) S {ppid} {pid} 0 0")
    (tmp_path / "self").mkdir()
    (tmp_path / "9").mkdir()  # gone before it was read
    sampler = Sampler(proc=tmp_path)
    sampler.look()
    (tmp_path / "8" / "stat").write_text("8 (ray) S 1 8 0 0")  # reparented later: the first parent stays
    sampler.look()
    assert sampler.seen == {7: (1, "python -m pytest"), 8: (7, "ray::Train")}
