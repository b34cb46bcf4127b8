"""The corpus of real public training scripts: ddpbench's samples/s against each script's own.

    python benchmarks/script_corpus.py [--rounds 1] [--only NAME] [--repeats N] [--epochs E] [--out FILE]

experiments/corpus/ holds training scripts taken from public repositories (README.md there lists
each one's repository, path, commit, license and every change made for CPU and gloo), and one
experiment file per script (experiments/corpus/NAME.toml: its arguments, batch, steps, world
sizes 1 and 2). Per round, for each script and world size:

* the script alone, as its authors start it (``torchrun --standalone --nproc_per_node W``, or
  ``python script.py`` for one that starts its own ranks with ``mp.spawn``), and its own timing:
  what it prints per iteration where it prints one (nanoGPT's ``time X ms``, from its sixth
  iteration); else, where it prints a line as each epoch starts (the tutorials, Fabric's example),
  the time each of those lines was written (its output unbuffered, each line stamped with the clock
  as the script's process writes it: :data:`STAMP`), from the second epoch's to the last's, so
  that start-up and the first epoch are left out. Not the time a line arrives here: on a loaded
  machine this process is not always running when a line is written, and read late, several epochs'
  lines arrive together; else (zero_join prints only at its end) the
  wall-time difference of two run lengths (N1 and N2 inputs, each run three times, the quickest
  kept), so that start-up, imports and rendezvous cancel: samples/s = (samples of N2 - of N1) /
  (T2 - T1);
* then ``python -m ddpbench sweep`` of the script's experiment file (world sizes 1 and 2), and
  its summary: samples/s with its interval over launches, and the exposed communication.

The table prints the medians over the rounds, the ratio of ddpbench's samples/s to the script's,
and, where a job failed, its error line. Runs minutes apart on a shared machine differ by more than
the agreement sought, so where it can the table also sets the sweep's samples/s against the script's
own timing of the very steps the sweep measured, read from rank 0's log of the same launches: two
clocks on one stretch of one run. For nanoGPT, which prints each iteration's time, always; for a
script timed by its epoch lines, where the sweep's measured steps are whole epochs (the tutorials
under ``--epochs``: its stamped lines are in the log too). Every rank runs one torch
thread. nanoGPT's and minGPT-ddp's sweeps and runs start in their folders (they read
``configurator.py``, ``data/`` from there; minGPT-ddp's snapshot left there is removed before each),
the others in a fresh scratch folder each (their snapshots would otherwise be loaded by the next
run). Fabric's example runs with the environment ``fabric run --accelerator cpu
--strategy ddp --devices W`` sets (:data:`FABRIC_ENV`), alone and in the sweep.

``--epochs E`` lengthens both clocks' windows for the tutorials (whose first argument is their epoch
count), where an epoch is a few tens of milliseconds and one preemption on a shared machine moves a
window by more than the agreement sought: the script runs E epochs alone (its own samples/s over its
epochs 1 to E - 1) and in the sweep, which warms up over its first two epochs and measures
(E - 3) // 3 whole epochs, each of its phases (phase steps, measured, no-sync) that many.
"""

from __future__ import annotations

import argparse
import atexit
import datetime
import functools
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

from ddpbench.testing import cli_command

sys.path.insert(0, str(Path(__file__).resolve().parent))
from written import check_out, write_out  # noqa: E402  (a sibling module)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "experiments" / "corpus"
#: what ``fabric run --accelerator cpu --strategy ddp --devices W`` sets before it starts torchrun (W
#: filled by the run alone, and by a sweep's script ranks with their job's world size)
FABRIC_ENV = {"LT_CLI_USED": "1", "LT_ACCELERATOR": "cpu", "LT_STRATEGY": "ddp", "LT_DEVICES": "{world_size}"}
#: runs of each length for the wall-time difference
LENGTH_PAIRS = 3
NANOGPT_ITER = re.compile(r"^iter (\d+): loss [\d.naninf-]+, time ([\d.]+)ms", re.M)


@dataclass(frozen=True)
class Script:
    name: str               #: experiments/corpus/NAME.toml
    source: str             #: repository and path, short
    shape: str
    launcher: str           #: "torchrun" or "python" (the script starts its own ranks)
    own: str                #: "printed": nanoGPT's per-iteration time; "epochs": its progress lines' arrival;
                            #: "lengths": two run lengths
    lengths: tuple = ()     #: (argument to replace, N1, N2) for "lengths"
    samples_per_unit: int = 0  #: samples per epoch (all ranks), or per input per rank for zero_join
    progress: str = ""      #: for "epochs": the line the script prints as an epoch starts (group 1: the epoch)
    in_folder: bool = False  #: start in the script's folder (it reads relative paths from there)
    env: dict = field(default_factory=dict)
    #: the public files it needs, relative to experiments/corpus/ (not committed: README.md says
    #: where each comes from)
    files: tuple = ()
    #: files it writes where it starts (its snapshot), relative to experiments/corpus/: removed before it
    #: runs alone or through a sweep, so that no run resumes from another's
    leaves: tuple = ()
    #: the index in its script_args of its epoch count, where ``--epochs`` may set it (the tutorials)
    epochs_arg: int | None = None


NANOGPT = ("nanogpt/train.py", "nanogpt/model.py", "nanogpt/configurator.py")
SCRIPTS = [
    Script("tutorial_spawn", "pytorch/examples ddp-tutorial-series/multigpu.py", "mp.spawn, fixed MASTER_PORT",
           "python", "epochs", samples_per_unit=2048, progress=r"^\[GPU0\] Epoch (\d+) \|",
           files=("tutorial_spawn/multigpu.py", "tutorial_spawn/datautils.py"), epochs_arg=0),
    Script("tutorial_torchrun", "pytorch/examples ddp-tutorial-series/multigpu_torchrun.py",
           "torchrun, sub-ms step, snapshots", "torchrun", "epochs", samples_per_unit=2048,
           progress=r"^\[GPU0\] Epoch (\d+) \|",
           files=("tutorial_torchrun/multigpu_torchrun.py", "tutorial_torchrun/datautils.py"), epochs_arg=0),
    Script("nanogpt", "karpathy/nanoGPT train.py", "accumulation by the flag, strong scaling", "torchrun",
           "printed", in_folder=True, files=NANOGPT),
    Script("nanogpt_fp16", "karpathy/nanoGPT train.py", "float16 autocast, GradScaler, flag accumulation",
           "torchrun", "printed", in_folder=True, files=NANOGPT),
    Script("zero_join", "pytorch/tutorials generic_join.rst", "mp.spawn, ZeroRedundancyOptimizer, Join, uneven inputs",
           "python", "lengths", ("400", 500, 8500), 1, files=("zero_join/zero_join.py",)),
    Script("fabric_mnist", "Lightning-AI/pytorch-lightning examples/fabric/image_classifier/train_fabric.py",
           "Lightning Fabric drives DDP", "torchrun", "epochs", samples_per_unit=2048, env=FABRIC_ENV,
           progress=r"^Train Epoch: (\d+) \[0/", files=("fabric_mnist/train_fabric.py",)),
    Script("mingpt", "pytorch/examples minGPT-ddp/mingpt/main.py", "Hydra config, float16 GradScaler, snapshots",
           "torchrun", "epochs", samples_per_unit=1024, progress=r"^\[RANK0\] Epoch (\d+) \| Iter 0 \| Train",
           in_folder=True, leaves=("mingpt/gpt_snapshot.pt",),
           files=tuple(f"mingpt/{name}" for name in ("main.py", "trainer.py", "model.py", "char_dataset.py",
                                                     "gpt2_train_cfg.yaml"))),
]
BY_NAME = {s.name: s for s in SCRIPTS}


def missing(script: Script) -> str | None:
    """Which of the script's public files are not in this checkout (they are not committed), in words."""
    absent = [name for name in script.files if not (CORPUS / name).is_file()]
    if not absent:
        return None
    return (f"{script.name}: not in this checkout: experiments/corpus/{', '.join(absent)} (public code, not "
            "committed: experiments/corpus/README.md names the repository, commit and changes of each)")


def defaults(script: Script) -> dict:
    return tomllib.loads((CORPUS / f"{script.name}.toml").read_text())["defaults"]


def script_args(script: Script, world_size: int, epochs: int | None = None) -> list[str]:
    """The script's arguments at ``world_size``, with ``epochs`` for its epoch count where given."""
    args = [a.replace("{world_size}", str(world_size)) for a in defaults(script)["script_args"]]
    if epochs is not None:
        args[script.epochs_arg] = str(epochs)
    return args


def lengthened(script: Script, text: str, epochs: int) -> str:
    """The experiment file's ``text`` for ``--epochs``: the script runs ``epochs`` epochs, and each world
    size's grid warms up over two of them and measures (epochs - 3) // 3 (its ``[[grid]]`` tables, at the
    file's end, rewritten)."""
    spec = tomllib.loads(text)
    batch, measured = spec["defaults"]["batch_size"], (epochs - 3) // 3
    if measured < 1:
        raise SystemExit("--epochs: at least 6 (two to warm up, one for each phase, one to stop in)")
    args = spec["defaults"]["script_args"]
    args[script.epochs_arg] = str(epochs)
    text = re.sub(r"^script_args = .*$", lambda _: "script_args = [" + ", ".join(f'"{a}"' for a in args) + "]",
                  text, count=1, flags=re.M)
    grids = ""
    for grid in spec["grid"]:
        for ws in grid["world_size"]:
            per_epoch = script.samples_per_unit // (batch * ws)
            grids += (f"\n[[grid]]\nworld_size = [{ws}]\nwarmup_steps = [{2 * per_epoch}]\n"
                      f"steps = [{measured * per_epoch}]\n")
    return text[:text.index("[[grid]]")].rstrip() + "\n" + grids


def prepare() -> None:
    """The data the corpus needs, generated (nanoGPT's token files, minGPT-ddp's text)."""
    for made, generator in (("nanogpt/data/corpus/train.bin", "nanogpt/prepare.py"),
                            ("mingpt/data/input.txt", "mingpt/prepare.py")):
        if not (CORPUS / made).exists():
            subprocess.run([sys.executable, str(CORPUS / generator)], check=True, capture_output=True)


def _clean(script: Script) -> None:
    """Remove what an earlier run of the script left where it starts (its snapshot)."""
    for name in script.leaves:
        (CORPUS / name).unlink(missing_ok=True)


def _env(script: Script, world_size: int | None = None) -> dict:
    """The environment of a run: the script's own (``{world_size}`` in it left to a sweep's ranks to
    fill, or filled here for a run of the script alone at ``world_size``)."""
    own = {k: v.replace("{world_size}", str(world_size)) if world_size else v for k, v in script.env.items()}
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), **own}


#: a ``sitecustomize`` module for the scripts timed by their epoch lines, alone and in the sweep: a line the
#: script prints that matches the regex in ``CORPUS_STAMP`` (its progress line) is prefixed with
#: ``@<time.monotonic()> `` as it is printed (one clock read an epoch), so that its time is when the
#: script wrote it. ``print`` is wrapped rather than ``sys.stdout``, which a sweep's rank replaces by
#: its log; nothing else changes (but that an environment's own ``sitecustomize``, should it have one, is
#: shadowed for the run: this venv has none)
STAMP = '''
import builtins, os, re, time

_stamped = re.compile(os.environ.get("CORPUS_STAMP", "(?!)"))
_print = builtins.print


def print(*args, **kwargs):
    if args and isinstance(args[0], str) and _stamped.match(args[0]):
        args = (f"@{time.monotonic():.6f} {args[0]}", *args[1:])
    return _print(*args, **kwargs)


builtins.print = print
'''
STAMPED = re.compile(r"^@(\d+\.\d+) (.*)$")


@functools.cache
def _stamp_site() -> str:
    """A folder holding :data:`STAMP` as ``sitecustomize.py``, for the run's PYTHONPATH."""
    folder = tempfile.mkdtemp(prefix="corpus-stamp-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    Path(folder, "sitecustomize.py").write_text(STAMP)
    return folder


def _stamping(script: Script, env: dict) -> dict:
    """``env`` with the script's progress lines stamped as they are printed (:data:`STAMP`)."""
    return {**env, "CORPUS_STAMP": script.progress,
            "PYTHONPATH": os.pathsep.join([_stamp_site(), env.get("PYTHONPATH", "")])}


def epoch_starts(script: Script, lines) -> dict[int, float]:
    """Epoch -> when its progress line was printed (seconds), from ``lines`` of (arrival, text): the stamp
    where the line carries one, else its arrival; the first rank's line of each epoch."""
    starts: dict[int, float] = {}
    for at, line in lines:
        stamp = STAMPED.match(line)
        m = re.match(script.progress, stamp[2] if stamp else line)
        if m:
            starts.setdefault(int(m[1]), float(stamp[1]) if stamp else at)
    return starts


#: what libstdc++ prints where a process exits with a gloo thread still running: the tutorials'
#: ``destroy_process_group()`` at their very end, under gloo, now and then (its rank aborts, torchrun exits 1)
ABORT_AT_EXIT = "terminate called without an active exception"


def alone(script: Script, world_size: int, args: list[str], timeout: float = 600,
          abort_at_exit_ok: bool = False, stamped: bool = False) -> tuple[float, list]:
    """Run the script alone as its authors start it (its output unbuffered, which changes nothing else):
    (wall seconds, its output's lines, each as (seconds since the start when it arrived, line)).
    ``abort_at_exit_ok``: a run whose only fault is :data:`ABORT_AT_EXIT` (after its last line) counts, said
    on stdout; its lines are all there, its wall is not used. ``stamped``: each line's time is when the
    script's process wrote it (:data:`STAMP`), not when it arrived."""
    path = CORPUS / defaults(script)["script"]
    if script.launcher == "torchrun":
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={world_size}",
                   str(path), *args]
    else:
        command = [sys.executable, str(path), *args]
    _clean(script)
    with tempfile.TemporaryDirectory() as scratch, tempfile.TemporaryFile("w+") as err:
        cwd = path.parent if script.in_folder else scratch
        env = {**_env(script, world_size), "PYTHONUNBUFFERED": "1"}
        start = time.monotonic()
        proc = subprocess.Popen(command, cwd=cwd, env=_stamping(script, env) if stamped else env,
                                stdout=subprocess.PIPE, stderr=err, text=True)
        lines = []
        for line in proc.stdout:  # each line with the time it arrived (a stamped one's stamp made relative)
            arrived = time.monotonic() - start
            stamp = STAMPED.match(line)
            lines.append((arrived, f"@{float(stamp[1]) - start:.6f} {stamp[2]}" if stamp else line.rstrip("\n")))
            if arrived > timeout:
                proc.kill()
        code = proc.wait()
        wall = time.monotonic() - start
        err.seek(0)
        errors = err.read()
        if code != 0 and abort_at_exit_ok and ABORT_AT_EXIT in errors:
            print(f"{script.name} alone at {world_size}: a rank aborted at exit ({ABORT_AT_EXIT!r}); its "
                  "timing lines are kept", flush=True)
        elif code != 0:
            raise RuntimeError(f"{script.name} alone at {world_size}: exit {code}: "
                               f"{(errors.strip().splitlines() or [''])[-1]}")
    return wall, lines


def own_samples_per_s(script: Script, world_size: int, epochs: int | None = None) -> float:
    """The script's own samples/s (all ranks) at this world size (``epochs``: see ``--epochs``)."""
    args = script_args(script, world_size, epochs)
    if script.own == "printed":  # nanoGPT: the time of each iteration, after the first five
        args = [a for a in args if not a.startswith("--max_iters=")] + ["--max_iters=40"]
        _, lines = alone(script, world_size, args)
        times = [float(m[2]) for m in NANOGPT_ITER.finditer("\n".join(line for _, line in lines)) if int(m[1]) >= 5]
        if not times:
            raise RuntimeError(f"{script.name}: no iteration time printed")
        global_batch = defaults(script)["batch_size"]  # strong scaling: the global batch at any world size
        return global_batch / (statistics.fmean(times) / 1e3)
    if script.own == "epochs":  # the arrival of its 'epoch E starts' lines, from the second epoch's to the last's
        _, lines = alone(script, world_size, args, abort_at_exit_ok=True, stamped=True)
        starts = epoch_starts(script, lines)
        epochs = sorted(starts)[1:]
        if len(epochs) < 2:
            raise RuntimeError(f"{script.name}: fewer than three epochs printed")
        return (epochs[-1] - epochs[0]) * script.samples_per_unit / (starts[epochs[-1]] - starts[epochs[0]])
    replace, n1, n2 = script.lengths
    at = args.index(replace)
    walls: dict[int, list[float]] = {n1: [], n2: []}
    for _ in range(LENGTH_PAIRS):  # short, long, short, long: the quickest of each, start-up noise is one-sided
        for n in (n1, n2):
            walls[n].append(alone(script, world_size, args[:at] + [str(n)] + args[at + 1:])[0])
    samples = (n2 - n1) * script.samples_per_unit * (world_size if script.name == "zero_join" else 1)
    return samples / (min(walls[n2]) - min(walls[n1]))


def experiment_copy(script: Script, folder: Path, epochs: int | None = None, **overrides) -> Path:
    """The script's experiment file, with the script's path made absolute and ``overrides`` (warmup_steps,
    steps, repeats) set in its [defaults] (``epochs``: lengthened, see ``--epochs``), written into ``folder``."""
    text = (CORPUS / f"{script.name}.toml").read_text()
    if epochs is not None:
        text = lengthened(script, text, epochs)
    text = re.sub(r'^script = "(.*)"$', lambda m: f'script = "{CORPUS / m[1]}"', text, count=1, flags=re.M)
    for key, value in overrides.items():  # wherever the file sets it: in [defaults], or a list in a [[grid]]
        text, n = re.subn(rf"^{key} = (\[?).*$",
                          lambda m, key=key, value=value: f"{key} = [{value}]" if m[1] else f"{key} = {value}",
                          text, flags=re.M)
        if not n:
            text = text.replace("[defaults]\n", f"[defaults]\n{key} = {value}\n", 1)
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"{script.name}.toml"
    out.write_text(text)
    return out


def sweep(script: Script, folder: Path, timeout: float = 1200, epochs: int | None = None,
          **overrides) -> tuple[subprocess.CompletedProcess, Path]:
    """``python -m ddpbench sweep`` of the script's experiment: (the process, its results folder)."""
    experiment = experiment_copy(script, folder, epochs, **overrides)
    _clean(script)  # the sweep's ranks see the folder it starts in: no snapshot of a run alone to resume from
    out = folder / "out"
    cwd = (CORPUS / defaults(script)["script"]).parent if script.in_folder else folder
    env = _stamping(script, _env(script)) if script.own == "epochs" else _env(script)  # epoch lines stamped
    proc = subprocess.run(cli_command("sweep", str(experiment), "--out", str(out), "--no-report"),
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return proc, out


def summary_rows(out: Path) -> dict[int, dict]:
    """The summary's row per world size (samples/s and its interval, exposed communication, status, error)."""
    from ddpbench.analysis.summary.table import summarize
    from ddpbench.results.tables import load

    table = summarize(load(out))
    return {int(r["world_size"]): dict(r) for _, r in table.iterrows()}


def same_steps(script: Script, out: Path) -> dict[int, float]:
    """The script's own samples/s over the very steps the sweep measured, from rank 0's log of each launch,
    per world size. For a script that prints each iteration's time (nanoGPT): the median over launches;
    its iteration N is optimizer step N + 1, and the measured steps follow the warm-up ones. For one timed
    by its epoch lines (:func:`same_epochs`): where the measured steps are whole epochs."""
    import json

    if script.own == "epochs":
        return same_epochs(script, out)
    if script.own != "printed":
        return {}
    found: dict[int, list[float]] = {}
    for line in (out / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["kind"] != "run" or record["status"] != "ok":
            continue
        spec = record["spec"]
        first, last = spec["warmup_steps"], spec["warmup_steps"] + spec["steps"]
        log = Path(record["logs"][0]).read_text(errors="replace")
        times = [float(m[2]) for m in NANOGPT_ITER.finditer(log) if first <= int(m[1]) < last]
        if len(times) == spec["steps"]:
            found.setdefault(spec["world_size"], []).append(spec["batch_size"] / (statistics.fmean(times) / 1e3))
    return {ws: statistics.median(v) for ws, v in found.items()}


def same_epochs(script: Script, out: Path) -> dict[int, float]:
    """For a script timed by its epoch lines, whose measured steps are whole epochs: its own samples/s over
    them, from the stamped lines (:data:`STAMP`) in rank 0's log of each launch, from the first measured
    epoch's line to the line of the epoch after the last (the first no-sync one), pooled as ddpbench
    pools its launches (all the samples over all the windows), per world size. The sweep's measured window
    runs from the end of the step before the first measured epoch's line to the end of its last step:
    the same stretch, but for the loop's work between an epoch's last step and the next line."""
    import json

    samples: dict[int, float] = {}
    seconds: dict[int, float] = {}
    for line in (out / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["kind"] != "run" or record["status"] != "ok":
            continue
        spec = record["spec"]
        per_epoch = script.samples_per_unit / (spec["batch_size"] * spec["world_size"])
        first, measured = (spec["warmup_steps"] + spec["steps"]) / per_epoch, spec["steps"] / per_epoch
        if first != int(first) or measured != int(measured):
            continue  # the measured steps are not whole epochs
        log = Path(record["logs"][0]).read_text(errors="replace").splitlines()
        starts = epoch_starts(script, [(math.nan, text) for text in log])
        begin, end = starts.get(int(first)), starts.get(int(first + measured))
        if begin is None or end is None or math.isnan(begin) or math.isnan(end):
            continue
        ws = spec["world_size"]
        samples[ws] = samples.get(ws, 0.0) + measured * script.samples_per_unit
        seconds[ws] = seconds.get(ws, 0.0) + (end - begin)
    return {ws: samples[ws] / seconds[ws] for ws in samples}


def _fmt(x: float, digits: int = 1) -> str:
    return "n/a" if x is None or x != x else f"{x:,.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="rounds of (script alone, sweep) per script (default: 1)")
    parser.add_argument("--only", action="append", choices=sorted(BY_NAME), help="this script only (repeatable)")
    parser.add_argument("--repeats", type=int, help="the sweep's repeats (default: the experiment file's)")
    parser.add_argument("--out", type=Path, help="also write the markdown table to this file")
    parser.add_argument("--epochs", type=int, help="the tutorials only: run E epochs alone and in the sweep, "
                        "which measures (E - 3) // 3 of them (default: the experiment file's one epoch)")
    args = parser.parse_args()
    if args.out:
        check_out(args.out)
    prepare()
    chosen = [BY_NAME[n] for n in args.only] if args.only else SCRIPTS
    for script in [s for s in chosen if missing(s)]:
        print(f"skipped {missing(script)}", flush=True)
    chosen = [s for s in chosen if not missing(s)]
    if args.epochs is not None and any(s.epochs_arg is None for s in chosen):
        parser.error("--epochs: for the tutorials only (--only tutorial_torchrun, --only tutorial_spawn)")
    own: dict = {}
    swept: dict = {}
    same: dict = {}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.rounds):
            for script in chosen:
                for ws in (1, 2):
                    try:
                        own.setdefault((script.name, ws), []).append(own_samples_per_s(script, ws, args.epochs))
                    except (RuntimeError, subprocess.TimeoutExpired) as err:
                        own.setdefault((script.name, ws), [])
                        print(f"round {round_}: {err}", flush=True)
                overrides = {"repeats": args.repeats} if args.repeats else {}
                try:
                    proc, out = sweep(script, Path(scratch) / f"r{round_}" / script.name, epochs=args.epochs,
                                      **overrides)
                    rows = summary_rows(out) if (out / "results.jsonl").exists() else {}
                    for ws, rate in (same_steps(script, out) if rows else {}).items():
                        same.setdefault((script.name, ws), []).append(rate)
                except subprocess.TimeoutExpired:
                    proc, rows, out = None, {}, None
                for ws in (1, 2):
                    row = rows.get(ws, {"status": "failed", "error": "no result: " + (
                        (proc.stderr.strip().splitlines() or ["?"])[-1] if proc else "the sweep timed out")})
                    swept.setdefault((script.name, ws), []).append(row)
                twins = same_steps(script, out) if rows else {}
                print(f"round {round_} {script.name}: " + "; ".join(
                    f"ws={ws} own {_fmt(own[(script.name, ws)][-1] if own[(script.name, ws)] else None)}, "
                    + (f"own on the same steps {_fmt(twins[ws])}, " if ws in twins else "")
                    + f"ddpbench {_fmt(swept[(script.name, ws)][-1].get('samples_per_s'))} "
                    f"({swept[(script.name, ws)][-1].get('status')})" for ws in (1, 2)) + " samples/s", flush=True)
    lines = [f"Measured {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
             f"`python benchmarks/script_corpus.py --rounds {args.rounds}"
             + "".join(f" --only {n}" for n in args.only or []) + (f" --repeats {args.repeats}" if args.repeats else "")
             + (f" --epochs {args.epochs}" if args.epochs else "")
             + "`; medians over the rounds (with more than one, ddpbench's 95 % interval is given beside the last "
             "round's own samples/s).", "",
             "| script | source | shape | world size | ddpbench samples/s [95 % interval] | the script's own samples/s "
             "| ddpbench / own | the script's own, same steps | ddpbench / same steps | exposed comm (ms) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for script in chosen:
        for ws in (1, 2):
            rows = swept[(script.name, ws)]
            oks = [r for r in rows if r.get("status") == "ok"]
            mine = own[(script.name, ws)]
            own_median = statistics.median(mine) if mine else float("nan")
            twin = statistics.median(same[(script.name, ws)]) if same.get((script.name, ws)) else float("nan")
            if oks:
                rate = statistics.median(r["samples_per_s"] for r in oks)
                last = oks[-1]
                interval = f"[{_fmt(last.get('samples_per_s_low'))}, {_fmt(last.get('samples_per_s_high'))}]"
                # an interval stands beside the launch mean it is of: the last round's, where rounds differ
                ours = (f"{_fmt(rate)} [{interval[1:-1]}]" if len(oks) == 1 else
                        f"{_fmt(rate)} (last round {_fmt(last['samples_per_s'])} {interval})")
                ratio = f"{rate / own_median:.2f}" if mine else "n/a"
                twin_ratio = f"{rate / twin:.2f}" if twin == twin else "n/a"
                exposed = _fmt(statistics.median(r.get("exposed_comm_ms", float("nan")) for r in oks), 2)
            else:
                error = str(rows[-1].get("error") or rows[-1].get("status")).replace("|", "\\|")
                ours, ratio, twin_ratio, exposed = f"{rows[-1].get('status')}: {error[:300]}", "n/a", "n/a", "n/a"
            lines.append(f"| {script.name} | {script.source} | {script.shape} | {ws} | {ours} | {_fmt(own_median)} "
                         f"| {ratio} | {_fmt(twin)} | {twin_ratio} | {exposed} |")
    table = "\n".join(lines)
    print(table)
    if args.out:
        write_out(args.out, table + "\n")


if __name__ == "__main__":
    main()
