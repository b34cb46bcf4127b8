"""What the collector of ``ddpbench watch`` costs, and whether it keeps up: N ranks at R steps a second
each for S seconds, over the real wire, against one collector on one core.

    python benchmarks/watch_collector.py [--ranks 1024] [--rate 10] [--seconds 60] [--batch-s 0.5]
                                         [--senders 2] [--core 0] [--out FILE]

The collector (:class:`ddpbench.watch.collector.Collector`, its loop in its thread as ``watch`` runs it,
its stream written into a temporary folder) runs in a process of its own pinned to core ``--core``
(``os.sched_setaffinity``); the ranks are spread over ``--senders`` processes pinned to the other cores
(to every core on a one-core machine). Each rank connects and says hello with the run's secret
(:func:`ddpbench.rank.script.wire.hello`); once every rank has, each sends every ``--batch-s`` seconds the
``R * batch-s`` steps it made since (:func:`ddpbench.rank.script.wire.pack_steps`: a step's time, every tenth
step's phases), the ranks' sends spread evenly over the interval, the last row's ``end_s`` the moment of
its send; after S seconds, a bye each.

Printed: the rows sent, received by the collector, written to its steps.csv, and lost (sent, never
received); the collector's CPU seconds per second of wall time (psutil, of its process, from the first
batch sent to the last sender's end); its resident memory (RSS) listening, with every rank connected, at
each quarter of the run and at its end (each rank keeps its last
:data:`~ddpbench.watch.collector.WINDOW_ROWS` rows: at 10 steps a second the windows are full after
about 26 s, and memory should be flat from there); the lag from a batch's send to its write (a listener
of the collector, called once the batch is written: its clock less the batch's last ``end_s``, one
machine's clock), median, 99th percentile and largest; and how far behind their schedule the senders
fell at most (their lateness is not the collector's). ``--out FILE`` writes the same, headed by the
command, the machine and its load average before and after, to FILE (a new file, or one this script
wrote). The machine's other load is the load average's to tell: it slows the lag, not the rows.
"""

from __future__ import annotations

import argparse
import array
import json
import math
import os
import selectors
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from scale import machine  # noqa: E402  (a sibling benchmark)
from written import check_out, write_out  # noqa: E402

from ddpbench.owner import die_with_parent  # noqa: E402
from ddpbench.rank.script import wire  # noqa: E402

ROOT = HERE.parent
HEADER = "<!-- written by benchmarks/watch_collector.py -->"
#: how long the processes have to connect every rank, and the collector to start
START_S = 120.0


# ---------------------------------------------------------------------------------------------
# the collector's process
# ---------------------------------------------------------------------------------------------

def collect(folder: str, secret: str, core: int, batches: int, parent: int) -> None:
    """The collector's process: its address on stdout, then it collects until a line on stdin; then one
    JSON line: its counts and the lags of the first ``batches`` batches (seconds, as its listener measured
    them, into an array made whole before the run: the process's memory is the collector's alone)."""
    die_with_parent(parent)
    os.sched_setaffinity(0, {core})
    from ddpbench.watch.collector import Collector

    lags, heard = array.array("d", [0.0]) * batches, [0]

    def listener(rank: int, rows: list[tuple]) -> None:
        if heard[0] < batches:
            lags[heard[0]] = time.time() - rows[-1][1]
        heard[0] += 1

    collector = Collector(Path(folder), secret)
    collector.listeners.append(listener)
    print(collector.address, flush=True)
    collector.start()
    sys.stdin.readline()
    collector.stop()
    snap = collector.snapshot()
    print(json.dumps({"received": snap.received, "written": snap.written, "unwritten": snap.unwritten,
                      "refused": snap.refused, "problems": snap.problems, "ranks": len(snap.ranks),
                      "ended": sum(s.status == "ended" for s in snap.ranks.values()),
                      "lag": summary(lags[:min(heard[0], batches)])}),
          flush=True)


def summary(values: list[float]) -> dict:
    """The median, 99th percentile and largest of ``values`` (nearest rank), and their count."""
    ordered = sorted(values)
    if not ordered:
        return {"n": 0, "median": math.nan, "p99": math.nan, "max": math.nan}

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]

    return {"n": len(ordered), "median": at(0.5), "p99": at(0.99), "max": ordered[-1]}


# ---------------------------------------------------------------------------------------------
# a senders' process
# ---------------------------------------------------------------------------------------------

def rows_since(step: int, count: int, rate: float, now: float) -> list[tuple]:
    """``count`` steps from ``step`` + 1 made at ``rate`` a second up to ``now``: a step's time a little
    off 1 / rate, every tenth step's phases and wait for a CPU (the rest NaN, as an unsampled step's)."""
    nan = math.nan
    rows = []
    for i in range(count):
        s = step + 1 + i
        step_ms = 1000.0 / rate * (0.9 + (s * 7919 % 200) / 1000)
        phases = (step_ms * 0.05, step_ms * 0.3, step_ms * 0.55, step_ms * 0.1) if s % 10 == 0 else (nan,) * 4
        sampled = (step_ms * 0.8, step_ms * 0.02) if s % 10 == 0 else (nan, nan)  # ready_ms, queued_ms
        rows.append((s, now - (count - 1 - i) / rate, step_ms, *phases, *sampled))
    return rows


def send(address: str, secret: str, ranks: list[int], world: int, rate: float, seconds: float, batch_s: float,
         cores: list[int], parent: int) -> None:
    """A senders' process: every rank of ``ranks`` connected and said hello, ``ready`` on stdout; on a line
    on stdin, ``seconds`` of batches (module docstring), a bye each; then one JSON line: rows sent and how
    far behind its schedule it fell at most (s)."""
    die_with_parent(parent)
    os.sched_setaffinity(0, set(cores))
    from ddpbench.watch.collector import open_files

    open_files(len(ranks) + 64)
    host, port = address.rsplit(":", 1)
    socks = {}
    for rank in ranks:
        sock = socket.create_connection((host, int(port)), timeout=START_S)
        buffer = bytearray()
        while not (frames := wire.split(buffer)):
            buffer += sock.recv(64)
        sock.sendall(wire.hello(secret, frames[0][1], {"rank": rank, "world_size": world, "local_rank": rank % 8,
                                                        "host": "bench", "pid": os.getpid()}))
        socks[rank] = sock
    print("ready", flush=True)
    sys.stdin.readline()
    per_batch = max(1, round(rate * batch_s))
    start = time.time()
    # each rank's sends, spread over the interval by its rank: (due, rank), in time order
    schedule = sorted((start + batch_s * (k + rank / world), rank) for rank in ranks
                      for k in range(1, int(seconds / batch_s) + 1))
    steps = dict.fromkeys(ranks, 0)
    sent, behind = 0, 0.0
    for due, rank in schedule:
        now = time.time()
        if now < due:
            time.sleep(due - now)
            now = time.time()
        behind = max(behind, now - due)
        socks[rank].sendall(wire.pack_steps(rows_since(steps[rank], per_batch, rate, now)))
        steps[rank] += per_batch
        sent += per_batch
    for sock in socks.values():
        sock.sendall(wire.frame(wire.BYE, b""))
        sock.close()
    print(json.dumps({"sent": sent, "behind_s": behind}), flush=True)


# ---------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------

def started(role: str, *args) -> subprocess.Popen:
    """This script again as ``role``'s process (owned by this one), its stdin and stdout ours."""
    cmd = [sys.executable, str(Path(__file__).resolve()), role, *map(str, args), str(os.getpid())]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def read_line(proc: subprocess.Popen, timeout_s: float = START_S) -> str:
    """``proc``'s next line of output, waited for at most ``timeout_s`` (exit 1 otherwise)."""
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout_s):
            sys.exit(f"a process of the benchmark said nothing for {timeout_s:g} s")
    line = proc.stdout.readline()
    if not line:
        sys.exit(f"a process of the benchmark ended (exit {proc.wait()}) before it said what it had to")
    return line.strip()


def rss_mb(proc: psutil.Process) -> float:
    return proc.memory_info().rss / 2**20


def run(args, folder: Path) -> dict:
    """The benchmark (module docstring): every figure it prints."""
    cores = sorted(os.sched_getaffinity(0))
    others = [c for c in cores if c != args.core] or cores
    secret = wire.new_secret()
    batches = args.ranks * (int(args.seconds / args.batch_s) + 1)
    collector = started("_collect", folder, secret, args.core, batches)
    senders = []
    try:
        address = read_line(collector)
        watched = psutil.Process(collector.pid)
        memory = {"listening": rss_mb(watched)}
        split = [list(range(args.ranks))[i::args.senders] for i in range(args.senders)]
        for i, ranks in enumerate(r for r in split if r):
            senders.append(started("_send", address, secret, ",".join(map(str, ranks)), args.ranks, args.rate,
                                   args.seconds, args.batch_s, others[i % len(others)]))
        for proc in senders:
            assert read_line(proc) == "ready"
        memory["connected"] = rss_mb(watched)
        cpu0, wall0 = sum(watched.cpu_times()[:2]), time.monotonic()
        for proc in senders:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        for quarter in (1, 2, 3):
            time.sleep(max(0.0, wall0 + args.seconds * quarter / 4 - time.monotonic()))
            memory[f"at {args.seconds * quarter / 4:g} s"] = rss_mb(watched)
        said = [json.loads(read_line(proc, args.seconds + START_S)) for proc in senders]
        cpu = sum(watched.cpu_times()[:2]) - cpu0
        wall = time.monotonic() - wall0
        memory["at the end"] = rss_mb(watched)
        collector.stdin.write("stop\n")
        collector.stdin.flush()
        got = json.loads(read_line(collector))
    finally:
        for proc in [collector, *senders]:
            proc.kill()
            proc.wait()
    with open(folder / "steps.csv") as fh:
        in_file = sum(1 for _ in fh) - 1
    sent = sum(s["sent"] for s in said)
    return {"sent": sent, "received": got["received"], "written": got["written"], "in_file": in_file,
            "lost": sent - got["received"], "refused": got["refused"], "problems": got["problems"],
            "ranks": got["ranks"], "ended": got["ended"], "cpu_per_s": cpu / wall, "cpu_s": cpu, "wall_s": wall,
            "memory": memory, "lag": got["lag"], "behind_s": max(s["behind_s"] for s in said)}


def table(args, found: dict) -> list[str]:
    """The figures as a Markdown table."""
    lag = found["lag"]
    memory = ", ".join(f"{mb:.0f} MB {when}" for when, mb in found["memory"].items())
    refused = ", ".join(f"{n} {why}" for why, n in found["refused"].items()) or "none"
    return [f"{args.ranks:,} ranks at {args.rate:g} steps/s each for {args.seconds:g} s, a batch every "
            f"{args.batch_s:g} s, over {args.senders} sender processes; the collector pinned to core {args.core}", "",
            "| figure | value |", "|---|---|",
            f"| rows sent | {found['sent']:,} |",
            f"| rows received by the collector | {found['received']:,} |",
            f"| rows written to steps.csv | {found['written']:,} ({found['in_file']:,} lines in the file) |",
            f"| rows lost (sent, never received) | {found['lost']:,} |",
            f"| ranks that said hello, and bye | {found['ranks']:,}, {found['ended']:,} |",
            f"| connections refused | {refused} |",
            f"| collector CPU per second of wall time | {found['cpu_per_s']:.3f} s/s ({found['cpu_s']:.1f} s of CPU in "
            f"{found['wall_s']:.1f} s) |",
            f"| collector RSS | {memory} |",
            f"| lag, a batch's send to its write: median, p99, largest | {lag['median'] * 1e3:.2f} ms, "
            f"{lag['p99'] * 1e3:.2f} ms, {lag['max'] * 1e3:.1f} ms ({lag['n']:,} batches) |",
            f"| senders behind their schedule, at most | {found['behind_s'] * 1e3:.1f} ms |",
            *(f"| the collector's problem | {p} |" for p in found["problems"]), ""]


def loads() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_collect":
        return collect(argv[1], argv[2], int(argv[3]), int(argv[4]), int(argv[5]))
    if argv and argv[0] == "_send":
        a = argv[1:]
        return send(a[0], a[1], [int(r) for r in a[2].split(",")], int(a[3]), float(a[4]), float(a[5]),
                    float(a[6]), [int(a[7])], int(a[8]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--rate", type=float, default=10.0, help="steps a second of each rank")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--batch-s", type=float, default=0.5, help="seconds between a rank's batches")
    parser.add_argument("--senders", type=int, default=2, help="processes the ranks are spread over")
    parser.add_argument("--core", type=int, default=0, help="the core the collector is pinned to")
    parser.add_argument("--out", type=Path, help="write the figures to this file too")
    args = parser.parse_args(argv)
    if args.core not in os.sched_getaffinity(0):
        sys.exit(f"--core: {args.core} is not a core this process may run on ({sorted(os.sched_getaffinity(0))})")
    if args.out:
        check_out(args.out, HEADER)
    said = [HEADER, f"`python benchmarks/watch_collector.py {shlex.join(argv)}`, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "", machine(ROOT),
            f"load average before: {loads()}", ""]
    print("\n".join(said[1:]), flush=True)
    with tempfile.TemporaryDirectory(prefix="ddpbench-watch-") as tmp:
        found = run(args, Path(tmp) / "watch")
    said += table(args, found)
    said.append(f"load average after: {loads()}")
    print("\n".join(said[6:]), flush=True)
    if args.out:
        write_out(args.out, "\n".join(said) + "\n", HEADER)


if __name__ == "__main__":
    main()
