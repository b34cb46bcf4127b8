"""Two of each writing command at once into one folder, store or file, many times (issue 83): ``compare``,
``report --out``, ``history page --out``, ``history add --store`` (two results folders into one fresh store,
and one folder twice), ``export-benchmark --out`` (one new file), ``sweep``, ``run`` and ``tune`` into one
``--out`` (a tiny experiment), ``ab`` into one ``--out``, and two writers of different kinds into one new
folder.

Each pair is two real processes of the command line, both started and past their imports, then let go at
once by a barrier file (:data:`RACE`): what the writer's contract (:mod:`ddpbench.files.writing`) must
hold when two users, or two CI jobs, run the same command at the same moment. Every outcome is either both
done (exit 0) or one done and one clear refusal (exit 2, one line on stderr, no traceback), as each command
is documented to end; nothing is half-written (no temporary file left, every JSON, CSV, page and
``results.jsonl`` line whole), no lock is held after, and no process of the pair is left running. A race
need not make one writer wait for the other, so the wait itself is shown apart: a compare started while
another process holds its folder waits, and writes only after that one lets go."""

from __future__ import annotations

import collections
import csv
import io
import json
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from ddpbench.files.folders import MARKER, OWNER
from ddpbench.testing import MARK, TINY_DEFAULTS, cli_command, marked, run_main, write_experiment
from ddpbench.testing.cli import folder_marker, held
from ddpbench.testing.histories import synthetic_history
from ddpbench.testing.records import PNG_MAGIC, ok, write_results

#: a command line's process that imports the command line, says it is ready, then waits for the barrier file
#: to run ``main`` as ``python -m ddpbench`` does: argv[1] is the barrier, the rest the command's arguments
RACE = """
import os, sys, time
from ddpbench import gc_pause
gc_pause.pause()
from ddpbench.cli.program import main
barrier = sys.argv[1]
open(f"{barrier}.{os.getpid()}.ready", "w").close()
while not os.path.exists(barrier):
    time.sleep(0.001)
raise SystemExit(main(sys.argv[2:], exit_at_once=True))
"""

#: one job of a 1 MB MLP at world size 1, two settings of its bucket (tune races them): a second or two a job
ONE = """
    name = "one"
    timeout_s = 60
""" + TINY_DEFAULTS.replace("    steps = 4", "    steps = 2") + """
    [grid]
    world_size = [1]
    bucket_cap_mb = [0.25, 25]
"""

#: outcomes by command, ("done", "done") or ("done", "refused"): printed by the last test
OUTCOMES: collections.Counter = collections.Counter()






def _git(repo, *args) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Two results folders (A, B) of one machine, a store of three commits, a git repository to file at,
    the tiny experiment and a copy named otherwise (an A/B's two sides)."""
    root = tmp_path_factory.mktemp("inputs")
    a = write_results(root / "A", [ok(10.0, world_size=1), ok(6.0, world_size=2)])
    b = write_results(root / "B", [ok(10.5, world_size=1), ok(6.1, world_size=2)])
    store = synthetic_history(root / "history", [10.0] * 3, [6.0] * 3)
    repo = root / "train"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "train.py").write_text("STEP = 1\n")
    _git(repo, "add", "train.py")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    one = write_experiment(root / "one.toml", ONE)
    other = write_experiment(root / "other.toml", ONE.replace('"one"', '"other"'))
    return {"A": a, "B": b, "store": store, "repo": repo, "one": one, "other": other}


def race(tmp_path: Path, *argvs, timeout_s: float = 240) -> list[subprocess.CompletedProcess]:
    """Run the command lines ``argvs`` as processes let go at once (:data:`RACE`) in ``tmp_path``; their
    outcomes. No process of theirs (marked, :data:`ddpbench.testing.MARK`) is left running after."""
    barrier = tmp_path / f"go-{uuid.uuid4().hex[:8]}"
    mark = barrier.name
    env = {**os.environ, MARK: mark, "COLUMNS": "160"}
    procs = []
    for argv in argvs:
        command = cli_command(*argv)
        command[1:3] = ["-c", RACE, str(barrier)]  # python -c RACE BARRIER ARGS, in place of python -m ddpbench ARGS
        procs.append(subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    try:
        deadline = time.monotonic() + 120
        while len(list(tmp_path.glob(f"{barrier.name}.*.ready"))) < len(procs):
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "a writer never got ready"
            time.sleep(0.01)
        barrier.touch()
        outs = [p.communicate(timeout=timeout_s) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    deadline = time.monotonic() + 10  # a sweep's fork server and ranks end with it
    while marked(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = marked(mark)
    for proc in left:
        proc.kill()
    assert not left, f"processes left running: {[p.pid for p in left]}"
    return [subprocess.CompletedProcess(p.args, p.returncode, out, err) for p, (out, err) in zip(procs, outs)]


def outcome(done: subprocess.CompletedProcess, words: str = "") -> str:
    """"done" (exit 0) or "refused" (exit 2, one line on stderr holding ``words``, no traceback)."""
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    if done.returncode == 0:
        return "done"
    assert done.returncode == 2, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], done.stderr
    return "refused"


def outcomes(pair, allowed, words: str = "", what: str = "") -> tuple[str, ...]:
    """The pair's outcomes, sorted ("done" first), one of ``allowed``; counted under ``what``."""
    found = tuple(sorted(outcome(done, words) for done in pair))
    assert found in allowed, (found, [done.stderr[-1500:] for done in pair])
    OUTCOMES[(what, found)] += 1
    return found


def whole(root: Path) -> None:
    """Nothing under ``root`` half-written, nothing left of a writer: no temporary file, no owner note,
    no lock held; every JSON, CSV, PNG, page and results.jsonl line whole."""
    assert not held(root), f"{root} is still held"
    for here, _, files in os.walk(root):
        for name in files:
            path = Path(here) / name
            assert not name.endswith(".tmp") and name != OWNER, f"left behind: {path}"
            data = path.read_bytes()
            if name.endswith(".json") or name == MARKER:
                json.loads(data)
            elif name.endswith(".jsonl"):
                lines = data.decode().splitlines()
                assert lines and data.endswith(b"\n"), path
                for line in lines:
                    json.loads(line)
            elif name.endswith(".csv"):
                rows = list(csv.reader(io.StringIO(data.decode())))
                assert rows and len({len(row) for row in rows}) == 1, path
            elif name.endswith(".png"):
                assert data.startswith(PNG_MAGIC) and data.endswith(b"IEND\xaeB`\x82"), path
            elif name.endswith(".html"):
                assert data.rstrip().endswith(b"</html>"), path


def entries(store: Path) -> int:
    """How many entries ``history list`` shows in ``store``."""
    listed = run_main("history", "list", "--store", store)
    assert listed.returncode == 0, listed.stderr
    found = re.search(r"(\d+) entr(?:y|ies) in ", listed.stdout)
    assert found, listed.stdout
    return int(found.group(1))


BOTH = {("done", "done")}
ONE_REFUSED = {("done", "refused")}
EITHER = BOTH | ONE_REFUSED


@pytest.mark.parametrize("repeat", range(4))
@pytest.mark.parametrize("command", ["compare", "report", "page"])
def test_two_short_writers_into_one_folder_both_finish_whole(inputs, tmp_path, command, repeat):
    """compare, report --out and history page --out at once: both finish, whole, the one the other waited
    for or not (that a short writer waits while another holds the folder is
    :func:`test_a_short_writer_waits_while_another_holds_the_folder_and_writes_after_it`)."""
    out = tmp_path / "out"
    argv = {"compare": ["compare", inputs["A"], inputs["B"], "--out", out],
            "report": ["report", inputs["A"], "--out", out],
            "page": ["history", "page", "--store", inputs["store"], "--out", out]}[command]
    outcomes(race(tmp_path, argv, argv), BOTH, what=command)
    whole(out)
    assert folder_marker(out).get("kind") == {"compare": "compare", "report": "report", "page": "page"}[command]
    assert (out / "index.html").is_file()


#: a short writer that holds a folder (``compare``'s claim on argv[1], its run argv[3]) until argv[2] exists,
#: then notes the time beside it, just before it lets go
HOLDER = """
import pathlib, sys, time
from ddpbench.files.writing import COMPARE, Claim, holding
out, release = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
with holding(out, Claim(COMPARE, "compare", run=sys.argv[3], writes=("compare.csv", "ratios.png", "index.html"))):
    (out.parent / "held").touch()
    while not release.exists():
        time.sleep(0.01)
    (out.parent / "released").write_text(repr(time.time()))
"""


def test_a_short_writer_waits_while_another_holds_the_folder_and_writes_after_it(inputs, tmp_path):
    """compare into a folder another compare holds: it says whom it waits for, is still waiting when the
    holder lets go, and writes its files after that, not beside the holder."""
    out, release = tmp_path / "out", tmp_path / "release"
    run = f"{inputs['A'].resolve()} vs {inputs['B'].resolve()}"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out), str(release), run], cwd=tmp_path,
                              stderr=subprocess.PIPE, text=True)
    log = tmp_path / "waiting.err"
    writer = None
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "held").exists():
            assert holder.poll() is None and time.monotonic() < deadline, holder.stderr.read()
            time.sleep(0.01)
        with open(log, "w") as err:
            writer = subprocess.Popen(cli_command("compare", inputs["A"], inputs["B"], "--out", out), cwd=tmp_path,
                                      stdout=subprocess.DEVNULL, stderr=err, env={**os.environ, "COLUMNS": "400"})
        deadline = time.monotonic() + 120
        while "waiting for" not in log.read_text() and writer.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # still waiting a moment later: not a line said on its way past
        assert writer.poll() is None, f"compare ended while another writer held its folder: {log.read_text()}"
        said = " ".join(log.read_text().split())
        assert said.startswith(f"waiting for {out}: another writer (compare, pid {holder.pid} on ") \
            and said.endswith(") holds it"), said
        assert not (out / "index.html").exists()
        release.touch()
        assert holder.wait(timeout=30) == 0
        assert writer.wait(timeout=120) == 0, log.read_text()
    finally:
        for proc in (holder, writer):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    released = float((tmp_path / "released").read_text())
    assert min((out / name).stat().st_mtime for name in ("compare.csv", "ratios.png", "index.html")) >= released
    whole(out)


@pytest.mark.parametrize("repeat", range(6))
def test_two_filings_of_different_sweeps_into_one_fresh_store_both_land(inputs, tmp_path, repeat):
    store = tmp_path / "store"
    pair = race(tmp_path, *[["history", "add", inputs[side], "--store", store, "--repo", inputs["repo"]]
                            for side in ("A", "B")])
    outcomes(pair, BOTH, what="history add, two sweeps")
    whole(store)
    assert entries(store) == 2


@pytest.mark.parametrize("repeat", range(4))
def test_one_sweep_filed_twice_at_once_lands_once(inputs, tmp_path, repeat):
    store = tmp_path / "store"
    argv = ["history", "add", inputs["A"], "--store", store, "--repo", inputs["repo"]]
    outcomes(race(tmp_path, argv, argv), ONE_REFUSED, "filed already", what="history add, one sweep twice")
    whole(store)
    assert entries(store) == 1


@pytest.mark.parametrize("repeat", range(5))
def test_two_exports_to_one_new_file_one_wins_and_the_other_says_so(inputs, tmp_path, repeat):
    out = tmp_path / "bench.json"
    argv = ["export-benchmark", inputs["A"], "--out", out]
    outcomes(race(tmp_path, argv, argv), ONE_REFUSED, "--out", what="export-benchmark")
    assert json.loads(out.read_text())["benchmarks"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".bench") or p.suffix == ".tmp"] == []


@pytest.mark.parametrize("repeat", range(2))
@pytest.mark.parametrize("command", ["sweep", "run", "tune"])
def test_two_sweeps_into_one_folder_one_runs_at_a_time(inputs, tmp_path, command, repeat):
    """A sweep holds its folder from its checks to its report: the other is refused at once, or (where the
    first had ended) runs after it into the same results."""
    out = tmp_path / "out"
    argv = {"sweep": ["sweep", inputs["one"], "--out", out, "--no-report"],
            "run": ["run", "--model-size", "xs", "--world-size", "1", "--steps", "2", "--warmup-steps", "1",
                    "--batch-size", "8", "--device", "cpu", "--backend", "gloo", "--threads-per-rank", "1",
                    "--out", out],
            "tune": ["tune", inputs["one"], "--budget", "4", "--out", out, "--no-report"]}[command]
    found = outcomes(race(tmp_path, argv, argv), EITHER, "in use by another writer", what=command)
    whole(out)
    assert folder_marker(out).get("kind") == "results"
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    launches = [r for r in records if r.get("kind") != "sweep"]
    assert launches and all(r.get("status") == "ok" for r in launches)
    if found == ("done", "refused"):
        assert len([r for r in records if r.get("kind") == "sweep"]) == 1


def test_two_abs_into_one_folder_one_runs(inputs, tmp_path):
    """An A/B holds its --out for its whole run, its sides included: the other is refused at once (or, where
    the first had ended, runs after it)."""
    out = tmp_path / "ab"
    argv = ["ab", inputs["one"], inputs["other"], "--max-rounds", "1", "--budget", "5", "--seed", "1", "--out", out]
    outcomes(race(tmp_path, argv, argv, timeout_s=300), EITHER, "--out", what="ab")
    whole(out)
    assert folder_marker(out).get("kind") == "ab" and json.loads((out / "ab.json").read_text())


@pytest.mark.parametrize("repeat", range(3))
def test_two_writers_of_different_kinds_into_one_new_folder_one_takes_it(inputs, tmp_path, repeat):
    """compare and report --out into one new folder at once: the first makes it its kind, the other is
    refused in one line, whichever was first."""
    out = tmp_path / "out"
    pair = race(tmp_path, ["compare", inputs["A"], inputs["B"], "--out", out], ["report", inputs["A"], "--out", out])
    outcomes(pair, ONE_REFUSED, "--out", what="compare and report")
    whole(out)
    winner = "compare" if pair[0].returncode == 0 else "report"
    assert folder_marker(out).get("kind") == winner


def test_zz_the_outcomes_of_every_pair():
    """The pairs' outcomes by command (run last: ``pytest -s`` or ``-rA`` shows them)."""
    lines = [f"{sum(OUTCOMES.values())} pairs of writers at once:"]
    lines += [f"  {what:32} {' + '.join(found):16} {count}" for (what, found), count in sorted(OUTCOMES.items())]
    print("\n".join(lines))
