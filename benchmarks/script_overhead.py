"""What measuring a script costs it, and whether the sweep's samples/s agree with the script's own.

    python benchmarks/script_overhead.py overhead  [--pairs 5] [--samples 2048] [--epochs 3]
    python benchmarks/script_overhead.py alternate [--runs 3] [--samples 1024] [--epochs 9]
    python benchmarks/script_overhead.py cost      [--blocks 40] [--block-steps 20]
    python benchmarks/script_overhead.py agreement [--rounds 3] [--samples 4096] [--epochs 5]
    python benchmarks/script_overhead.py tiny      [--blocks 200] [--block-steps 20] [--quick] [--phase-steps]
    python benchmarks/script_overhead.py hooks     [--blocks 200] [--block-steps 20] [--quick]
    python benchmarks/script_overhead.py tiny-sweep [--warmup 100] [--steps 1000]

Both run experiments/scripts/train_cnn.py, which times its own epochs and prints them (the only
place anything is read from a script's output: here, never in ddpbench).

* ``overhead``: the script under ``torchrun --standalone --nproc_per_node=2``, alternately plain
  and with ddpbench's hooks installed for the whole run (:class:`ddpbench.rank.script.instrument.Instrument`,
  every step a measured one: the patched DDP, its forward, backward and all-reduce hooks, the
  optimizer's step hook, the timer's marks), in interleaved pairs. The figure is the script's own
  ms/step over its epochs after the first, hooked against plain, per pair; the median of the pairs.
* ``alternate``: the same in one process: ddpbench's hooks installed for the whole run and paused
  every other epoch (:meth:`~ddpbench.rank.script.instrument.Instrument.set_active`, at the epoch's last
  optimizer step), so that hooked and unhooked epochs alternate under the same load. The figure is
  the script's own ms/step of its hooked epochs (1, 3, ... in one run, 2, 4, ... in the next) against
  its unhooked ones, per run; the median of the runs. A paused instrument still has its communication hook (a Python
  hook passing each bucket to DDP's all-reduce) and a step hook that returns at once: what those
  cost is in ``overhead``'s figure only.
* ``cost``: what the hooks cost a step, in microseconds, where a step is short enough to show it: one
  process (a gloo group of one), two identical small DDP models, one built before the instrument was
  installed (plain DDP, DDP's own all-reduce) and one after (hooked, all of it: communication hook
  included), trained in alternating blocks of steps; the figure is the difference of their median
  block's time per step. Set against the example's step (tens of ms) it is the overhead's floor,
  free of the noise that whole runs on a shared machine carry.
* ``tiny``: what a *measured* step costs a script whose step is under a millisecond (one
  ``Linear(10, 10)``, batch 32, the introductory DDP tutorials' shape): one process (a gloo group of
  one), plain DDP built before the instrument was installed and a second model after it, whose steps
  are measured ones (one warm-up step, one with the phase hooks, then ``measure`` steps: the optimizers'
  step hooks alone), trained in alternating blocks with ddpbench's global step hooks off during the plain
  blocks. The figure is the median, over pairs of blocks, of hooked less plain time per step, in
  microseconds and % of the plain step, with its IQR, against the target max(3 %, 20 us).
  ``--quick``: a few blocks, to see that it runs; ``--phase-steps``: the hooked model's steps are phase
  steps instead (every hook on), to see what the phases' measurement costs the steps it is taken on.
* ``tiny-sweep``: that shape as a script (``TINY_SCRIPT``, which prints its own time between optimizer
  steps) through ``python -m ddpbench sweep`` at world sizes 1 and 2: ddpbench's rank 0 step times of
  each phase against the script's own timing of the very same steps.
* ``hooks``: what each kind of hook costs that step alone, to choose which a measured step may carry:
  plain DDP, and models each with one kind of hook (a Python communication hook in place of DDP's C++
  all-reduce, the forward pre- and post-hooks, the output gradient hook with its autograd callbacks,
  the optimizers' global step hooks), in shuffled blocks; the median per step of each.
* ``agreement``: per round, the script alone under torchrun at 1 and 2 processes (the samples/s it
  prints for its epochs after the first), then ``python -m ddpbench sweep`` of the same script and
  arguments at world sizes 1 and 2; the medians over the rounds, and the sweep's against the
  script's. Runs minutes apart on a shared machine differ by far more than 15 %, so the sweep's
  window is laid on the script's epochs: its warm-up is the script's first epoch, its phase steps the
  second and its measured steps the third (``script_to_end = true``, so the script goes on and prints
  its timing of it). The sweep's samples/s is then set against the script's own timing of the very same steps,
  from the sweep's rank 0 log: two clocks on one stretch of one run.

Every rank runs one torch thread (OMP_NUM_THREADS=1, threads_per_rank = 1). On a shared machine
the figures are noisy: the pairs and rounds interleave so that drift hits both sides alike.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from ddpbench.testing import cli_command

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "experiments" / "scripts" / "train_cnn.py"
EPOCH = re.compile(r"epoch (\d+): (\d+) steps in ([\d.]+) s, ([\d.]+) samples/s, ([\d.]+) ms/step")
BATCH = 32



def block_us(ddp, opt, loss, inputs, target, steps: int) -> float:
    """Microseconds a training step of ``ddp`` takes, over ``steps`` steps in a row."""
    start = time.perf_counter()
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss(ddp(inputs), target).backward()
        opt.step()
    return (time.perf_counter() - start) / steps * 1e6

def script_args(samples: int, epochs: int) -> list[str]:
    return ["--epochs", str(epochs), "--samples", str(samples), "--batch-size", str(BATCH), "--snapshot-every", "0"]


def torchrun(nproc: int, args: list[str], hooked: bool = False, alternate: int = 0,
             odd_hooked: bool = True) -> list[tuple[float, float]]:
    """(samples/s, ms/step) of each epoch after the first, as the script printed them. ``alternate``: the
    script's steps per epoch, to pause the hooks every other epoch (the odd epochs hooked, or the even)."""
    target = [__file__, "--as-rank", "--", str(SCRIPT)] if hooked else [str(SCRIPT)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), "ALTERNATE_EVERY": str(alternate),
           "ALTERNATE_ODD": str(int(odd_hooked))}
    with tempfile.TemporaryDirectory() as cwd:
        proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                               f"--nproc_per_node={nproc}", *target, *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        sys.exit(f"torchrun failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    epochs = [(float(m[4]), float(m[5])) for m in EPOCH.finditer(proc.stdout) if int(m[1]) > 0]
    if not epochs:
        sys.exit(f"the script printed no epoch after the first:\n{proc.stdout[-2000:]}")
    return epochs


def as_rank(argv: list[str]) -> None:
    """One rank of the hooked run: ddpbench's instrument around the script, every step measured."""
    import runpy

    import torch.distributed as dist

    from ddpbench.experiment.spec import JobSpec
    from ddpbench.rank.script.instrument import Instrument
    from ddpbench.rank.script.shapes import Shapes
    from ddpbench.rank.timing import HostClock

    world = int(os.environ["WORLD_SIZE"])
    spec = JobSpec(script=argv[0], batch_size=BATCH, world_size=world, backend="gloo", device="cpu",
                   warmup_steps=0, steps=1_000_000, threads_per_rank=1)
    instrument = Instrument(spec, int(os.environ["RANK"]), HostClock())
    instrument.install()
    every = int(os.environ.get("ALTERNATE_EVERY", "0"))
    if every:  # epoch 0 hooked (warm-up), then the odd epochs hooked (or the even): a hook after the instrument's
        from torch.optim.optimizer import register_optimizer_step_post_hook

        steps = [0]

        def toggle(optimizer, args, kwargs):
            steps[0] += 1
            if steps[0] % every == 0:
                instrument.set_active((steps[0] // every) % 2 == int(os.environ["ALTERNATE_ODD"]))

        register_optimizer_step_post_hook(toggle)
    sys.argv = argv
    shapes = Shapes()  # the script's destroy_process_group deferred, as in a rank
    shapes.install()
    try:
        runpy.run_path(argv[0], run_name="__main__")
    finally:
        instrument.uninstall()
        shapes.uninstall()
    if len(instrument.rows) < 10 or instrument.unseen:
        sys.exit(f"the hooks saw {len(instrument.rows)} steps, unseen: {instrument.unseen}")
    instrument.ddp = instrument.optimizer = None
    dist.barrier()
    dist.destroy_process_group()


def overhead(args) -> None:
    run_args = script_args(args.samples, args.epochs)
    ratios = []
    for pair in range(args.pairs):
        order = (False, True) if pair % 2 == 0 else (True, False)
        ms = {}
        for hooked in order:
            ms[hooked] = statistics.fmean(step for _, step in torchrun(2, run_args, hooked))
        ratios.append(ms[True] / ms[False])
        print(f"pair {pair}: plain {ms[False]:.2f} ms/step, hooked {ms[True]:.2f} ms/step, "
              f"overhead {100 * (ratios[-1] - 1):+.2f} %", flush=True)
    print(f"instrumentation overhead on the script's step time (median of {len(ratios)} pairs): "
          f"{100 * (statistics.median(ratios) - 1):+.2f} % (pairs from {100 * (min(ratios) - 1):+.2f} to "
          f"{100 * (max(ratios) - 1):+.2f} %)")


def alternate(args) -> None:
    run_args = script_args(args.samples, args.epochs)
    every = args.samples // (BATCH * 2)
    ratios = []
    for run in range(args.runs):
        odd = run % 2 == 0  # which epochs are hooked alternates too: a drift over a run favours neither
        epochs = torchrun(2, run_args, hooked=True, alternate=every, odd_hooked=odd)  # epochs 1, 2, ...
        hooked = statistics.fmean(step for _, step in epochs[0 if odd else 1::2])
        plain = statistics.fmean(step for _, step in epochs[1 if odd else 0::2])
        ratios.append(hooked / plain)
        print(f"run {run}: unhooked epochs {plain:.2f} ms/step, hooked epochs {hooked:.2f} ms/step, "
              f"overhead {100 * (ratios[-1] - 1):+.2f} %", flush=True)
    print(f"instrumentation overhead on the script's step time, hooked against paused epochs in one process "
          f"(median of {len(ratios)} runs): {100 * (statistics.median(ratios) - 1):+.2f} % (runs from "
          f"{100 * (min(ratios) - 1):+.2f} to {100 * (max(ratios) - 1):+.2f} %)")


def cost(args) -> None:

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from ddpbench.experiment.spec import JobSpec
    from ddpbench.rank.script.instrument import Instrument
    from ddpbench.rank.timing import HostClock

    torch.set_num_threads(1)
    store = dist.HashStore()
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)

    def model():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))

    plain = DistributedDataParallel(model())
    instrument = Instrument(JobSpec(script="x.py", batch_size=16, world_size=1, backend="gloo", device="cpu",
                                    warmup_steps=0, steps=10**9, threads_per_rank=1), 0, HostClock())
    instrument.install()
    hooked = DistributedDataParallel(model())
    optimizers = {id(m): torch.optim.SGD(m.parameters(), lr=0.01) for m in (plain, hooked)}
    inputs, target = torch.randn(16, 64), torch.randint(0, 10, (16,))

    def block(ddp) -> float:
        return block_us(ddp, optimizers[id(ddp)], torch.nn.functional.cross_entropy, inputs, target, args.block_steps)

    times = {"plain": [], "hooked": []}
    for index in range(args.blocks + 1):
        pair = (("plain", plain), ("hooked", hooked))
        for name, ddp in pair if index % 2 else pair[::-1]:
            us = block(ddp)
            if index:  # the first pair warms up
                times[name].append(us)
    instrument.uninstall()
    a, b = statistics.median(times["plain"]), statistics.median(times["hooked"])
    print(f"a step of plain DDP {a:.1f} us, hooked {b:.1f} us: the hooks cost {b - a:.1f} us per step "
          f"(medians of {args.blocks} blocks of {args.block_steps} steps, alternating); the hooked steps "
          f"timed: {len(instrument.rows)}, unseen: {instrument.unseen or 'none'}")
    del plain, hooked, instrument
    dist.destroy_process_group()


#: the target: a measured step may cost the script at most this share of its step, or TARGET_US, whichever is larger
TARGET_PCT, TARGET_US = 3.0, 20.0


def tiny(args) -> None:
    import tempfile

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from ddpbench.experiment.spec import JobSpec
    from ddpbench.rank.protocol import Progress
    from ddpbench.rank.script.instrument import Instrument
    from ddpbench.rank.timing import HostClock

    torch.set_num_threads(1)
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)

    def model():
        torch.manual_seed(0)
        return torch.nn.Linear(args.features, args.features)

    plain = DistributedDataParallel(model())
    spec = JobSpec(script="x.py", batch_size=args.batch, world_size=1, backend="gloo", device="cpu", warmup_steps=1,
                   steps=1, threads_per_rank=1)
    scratch = tempfile.TemporaryDirectory()
    progress = Progress(Path(scratch.name) / "progress")  # where the rank is, written every step as in a job
    # one step warm-up, one with the phase hooks, then every step a measured one: what the script's step costs
    # under ddpbench is what these carry (the optimizers' step hooks and the progress line)
    plan = (("warmup", 1), ("phases", 1), ("measure", 10**9), ("nosync", 0))
    if args.phase_steps:  # every step a phase step instead: what the phase hooks cost
        plan = (("warmup", 1), ("phases", 10**9), ("measure", 0), ("nosync", 0))
    instrument = Instrument(spec, 0, HostClock(), progress.write, plan=plan)
    instrument.install()
    hooked = DistributedDataParallel(model())
    # each model with its optimizer, both let go before the process group
    trained = {name: (ddp, torch.optim.SGD(ddp.parameters(), lr=0.01))
               for name, ddp in (("plain", plain), ("hooked", hooked))}
    inputs, target = torch.randn(args.batch, args.features), torch.randn(args.batch, args.features)
    times = {"plain": [], "hooked": []}
    for index in range(args.blocks + 1):
        for name in ("plain", "hooked") if index % 2 else ("hooked", "plain"):
            if name == "plain":  # no ddpbench at all: its global step hooks off too
                instrument.detach_step_hooks()
            us = block_us(*trained[name], torch.nn.functional.mse_loss, inputs, target, args.block_steps)
            instrument.attach_step_hooks()
            if index:  # the first pair warms up
                times[name].append(us)
    instrument.uninstall()
    kind = "phases" if args.phase_steps else "measure"
    # the measured steps' ends are not yet rows (the steps of their kind have not ended); the phase steps' are
    timed = len(instrument._spans) if kind == "measure" else sum(1 for row in instrument.rows if row[1] == kind)
    if instrument.kind != kind or timed < args.blocks * args.block_steps:
        sys.exit(f"the hooked model's steps were not {kind} steps: {timed} of them")

    def quartiles(values):
        q = statistics.quantiles(values, n=4)
        return q[0], statistics.median(values), q[2]

    diffs = [h - p for h, p in zip(times["hooked"], times["plain"])]
    (p_lo, p_med, p_hi), (h_lo, h_med, h_hi), (d_lo, d_med, d_hi) = map(quartiles,
                                                                        (times["plain"], times["hooked"], diffs))
    budget = max(TARGET_PCT / 100 * p_med, TARGET_US)
    print(f"one Linear({args.features}, {args.features}), batch {args.batch}, gloo, world size 1, {args.blocks} "
          f"interleaved blocks of {args.block_steps} steps each:")
    print(f"  a step of plain DDP: median {p_med:.1f} us (IQR {p_lo:.1f}-{p_hi:.1f})")
    step = "a phase step" if args.phase_steps else "a measured step"
    print(f"  {step} under ddpbench: median {h_med:.1f} us (IQR {h_lo:.1f}-{h_hi:.1f})")
    print(f"  what ddpbench adds to {step}, per pair of blocks: median {d_med:+.1f} us "
          f"({100 * d_med / p_med:+.1f} %), IQR {d_lo:+.1f} to {d_hi:+.1f} us")
    if args.phase_steps:
        print("  (phase steps give the phases, not the step time: the target is for measured steps)")
    else:
        print(f"  target max({TARGET_PCT:g} %, {TARGET_US:g} us) = {budget:.1f} us: "
              f"{'met' if d_med <= budget else 'NOT met'}")
    del plain, hooked, trained, instrument
    dist.destroy_process_group()
    scratch.cleanup()


def hooks(args) -> None:
    """What each kind of hook costs the tiny step alone: a plain DDP model against one with that hook only."""
    import random

    import torch
    import torch.distributed as dist
    from torch.autograd import Variable
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
    from torch.nn.parallel import DistributedDataParallel
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    torch.set_num_threads(1)
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    engine = Variable._execution_engine

    def backward_started(grad):
        engine.queue_callback(lambda: engine.queue_callback(lambda: None))

    setups = {
        "plain DDP": lambda ddp: None,
        "Python comm hook (DDP's allreduce_hook)": lambda ddp: ddp.register_comm_hook(None, allreduce_hook),
        "forward pre- and post-hooks": lambda ddp: (
            ddp.register_forward_pre_hook(lambda m, a, k: None, with_kwargs=True),
            ddp.register_forward_hook(lambda m, a, o: None)),
        "output gradient hook + autograd callbacks": lambda ddp: ddp.register_forward_hook(
            lambda m, a, out: (out.register_hook(backward_started), None)[1]),
    }
    models = {}
    for name, setup in setups.items():
        torch.manual_seed(0)
        ddp = DistributedDataParallel(torch.nn.Linear(args.features, args.features))
        setup(ddp)
        models[name] = (ddp, torch.optim.SGD(ddp.parameters(), lr=0.01))
    inputs, target = torch.randn(args.batch, args.features), torch.randn(args.batch, args.features)
    step_hooks = "optimizers' global step hooks, doing nothing"

    def block(name) -> float:
        ddp, opt = models["plain DDP" if name == step_hooks else name]
        handles = ([register_optimizer_step_pre_hook(lambda o, a, k: None),
                    register_optimizer_step_post_hook(lambda o, a, k: None)] if name == step_hooks else [])
        us = block_us(ddp, opt, torch.nn.functional.mse_loss, inputs, target, args.block_steps)
        for handle in handles:
            handle.remove()
        return us

    names = [*setups, step_hooks]
    times: dict[str, list[float]] = {name: [] for name in names}
    shuffle = random.Random(0)
    for index in range(args.blocks + 1):
        order = names[:]
        shuffle.shuffle(order)
        for name in order:
            us = block(name)
            if index:
                times[name].append(us)
    base = statistics.median(times["plain DDP"])
    print(f"one Linear({args.features}, {args.features}), batch {args.batch}, gloo, world size 1, {args.blocks} "
          f"rounds of one block of {args.block_steps} steps each, in shuffled order (medians):")
    for name in names:
        q = statistics.quantiles(times[name], n=4)
        med = statistics.median(times[name])
        print(f"  {name}: {med:.1f} us a step (IQR {q[0]:.1f}-{q[2]:.1f}), {med - base:+.1f} us against plain DDP")
    models.clear()
    dist.destroy_process_group()


#: the tutorial-shaped script ``tiny-sweep`` runs: it prints its own time between optimizer steps, 100 at a time
TINY_SCRIPT = """
import sys, time, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(torch.nn.Linear(10, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.001)
x, y = torch.randn(32, 10), torch.randn(32, 10)
ends = [time.perf_counter()]
for it in range(int(sys.argv[1])):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    ends.append(time.perf_counter())
    if dist.get_rank() == 0 and it % 100 == 99:
        print("OWN", " ".join(f"{(b - a) * 1e3:.5f}" for a, b in zip(ends[-101:], ends[-100:])), flush=True)
dist.destroy_process_group()
"""


def tiny_sweep(args) -> None:
    """The tutorial-shaped script through the sweep: ddpbench's step times against the script's own timing
    of the very same steps (rank 0), per phase, at world sizes 1 and 2."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "tutorial.py").write_text(TINY_SCRIPT)
        total = args.warmup + 3 * args.steps + 100
        (folder / "tiny.toml").write_text(textwrap.dedent(f"""
            timeout_s = 600
            [defaults]
            script = "tutorial.py"
            script_args = ["{total}"]
            batch_size = 32
            backend = "gloo"
            device = "cpu"
            threads_per_rank = 1
            script_to_end = true
            warmup_steps = {args.warmup}
            steps = {args.steps}
            [grid]
            world_size = [1, 2]
        """))
        out = folder / "out"
        proc = subprocess.run(cli_command("sweep", str(folder / "tiny.toml"), "--out", str(out),
                                          "--no-report"), capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})
        if proc.returncode != 0:
            sys.exit(f"the sweep failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        for line in (out / "results.jsonl").read_text().splitlines():
            record = json.loads(line)
            if record["kind"] != "run":
                continue
            result, ws = record["result"], record["spec"]["world_size"]
            rows = [dict(zip(result["step_columns"], row)) for row in result["steps"]]
            log = Path(record["logs"][0])
            log = log if log.is_absolute() else out / log
            own = [float(v) for text in log.read_text().splitlines() if text.startswith("OWN")
                   for v in text.split()[1:]]
            for phase, first in (("phases", args.warmup), ("measure", args.warmup + args.steps),
                                 ("nosync", args.warmup + 2 * args.steps)):
                mine = [r["step_ms"] for r in rows if r["phase"] == phase and r["rank"] == 0]
                theirs = own[first:first + args.steps]  # own[i]: the script's step i
                # the mean, and the median: the script's own clock also counts ddpbench's work between two of its
                # steps (making rows, reading memory, the no-sync snapshot), which no step of ddpbench's does
                figures = [(how, f(mine), f(theirs)) for how, f in (("mean", statistics.fmean),
                                                                     ("median", statistics.median))]
                print(f"world size {ws}, {phase} steps: " + "; ".join(
                    f"{how} ddpbench {a:.4f} ms, the script's own timing of the same steps {b:.4f} ms "
                    f"({100 * (a / b - 1):+.2f} %)" for how, a, b in figures))


def sweep(run_args: list[str], out: Path, samples: int) -> tuple[dict[int, float], dict[int, float]]:
    """The sweep's samples/s per world size, and the script's own for the epoch the sweep measured
    (its third, after the warm-up and the phase steps: read from rank 0's log of the same launch)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    experiment = out.parent / "script.toml"
    experiment.write_text(textwrap.dedent(f"""
        timeout_s = 600
        [defaults]
        script = "{SCRIPT}"
        script_args = {run_args!r}
        batch_size = {BATCH}
        backend = "gloo"
        device = "cpu"
        threads_per_rank = 1
        script_to_end = true
        [[grid]]
        world_size = [1]
        warmup_steps = [{samples // BATCH}]
        steps = [{samples // BATCH}]
        [[grid]]
        world_size = [2]
        warmup_steps = [{samples // BATCH // 2}]
        steps = [{samples // BATCH // 2}]
    """).replace("'", '"'))
    proc = subprocess.run(cli_command("sweep", str(experiment), "--out", str(out), "--no-report"),
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if proc.returncode != 0:
        sys.exit(f"the sweep failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    from ddpbench.analysis.summary.table import summarize
    from ddpbench.results.tables import load

    table = summarize(load(out))
    swept = {int(r["world_size"]): float(r["samples_per_s"]) for _, r in table.iterrows()}
    later = {}
    for line in (out / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["kind"] != "run":
            continue
        ws = record["spec"]["world_size"]
        rates = [float(m[4]) for m in EPOCH.finditer(Path(record["logs"][0]).read_text()) if int(m[1]) == 2]
        if not rates:
            sys.exit(f"world size {ws}: the script printed no third epoch; give it more epochs")
        later[ws] = rates[0]
    return swept, later


def agreement(args) -> None:
    run_args = script_args(args.samples, args.epochs)
    own: dict[int, list[float]] = {1: [], 2: []}
    swept: dict[int, list[float]] = {1: [], 2: []}
    later: dict[int, list[float]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.rounds):
            for ws in (1, 2):
                own[ws].append(statistics.fmean(rate for rate, _ in torchrun(ws, run_args)))
            rates, same_run = sweep(run_args, Path(scratch) / f"round{round_}" / "out", args.samples)
            for ws in (1, 2):
                swept[ws].append(rates[ws])
                later[ws].append(same_run[ws])
            print(f"round {round_}: " + "; ".join(
                f"ws={ws} script alone {own[ws][-1]:.1f}, sweep {swept[ws][-1]:.1f} "
                f"({100 * (swept[ws][-1] / own[ws][-1] - 1):+.1f} %), its own timing of the same steps "
                f"{later[ws][-1]:.1f} "
                f"({100 * (swept[ws][-1] / later[ws][-1] - 1):+.1f} %)" for ws in (1, 2)) + " samples/s", flush=True)
    for ws in (1, 2):
        a, b = statistics.median(own[ws]), statistics.median(swept[ws])
        pairs = [100 * (s / t - 1) for s, t in zip(swept[ws], later[ws])]
        print(f"world size {ws}: the script alone {a:.1f} samples/s, the sweep {b:.1f} samples/s: "
              f"{100 * (b / a - 1):+.1f} % (medians of {args.rounds} rounds); the sweep against the script's own "
              f"timing of the same steps: median {statistics.median(pairs):+.1f} % "
              f"(rounds {', '.join(f'{p:+.1f}' for p in pairs)} %)")


def main() -> None:
    if "--as-rank" in sys.argv:
        as_rank(sys.argv[sys.argv.index("--") + 1:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("cost")
    p.add_argument("--blocks", type=int, default=40, help="blocks of steps per model (default: 40)")
    p.add_argument("--block-steps", type=int, default=20, help="steps per block (default: 20)")
    p.set_defaults(func=cost)
    p = sub.add_parser("hooks")
    p.add_argument("--blocks", type=int, default=200, help="rounds, one block of each (default: 200)")
    p.add_argument("--block-steps", type=int, default=20, help="steps per block (default: 20)")
    p.add_argument("--features", type=int, default=10, help="the Linear layer's width (default: 10)")
    p.add_argument("--batch", type=int, default=32, help="samples per step (default: 32)")
    p.add_argument("--quick", action="store_true", help="a few blocks: that it runs, not a figure")
    p.set_defaults(func=hooks)
    p = sub.add_parser("tiny-sweep")
    p.add_argument("--warmup", type=int, default=100, help="warmup_steps (default: 100)")
    p.add_argument("--steps", type=int, default=1000, help="steps (default: 1000)")
    p.set_defaults(func=tiny_sweep)
    p = sub.add_parser("tiny")
    p.add_argument("--blocks", type=int, default=200, help="blocks of steps per model (default: 200)")
    p.add_argument("--block-steps", type=int, default=20, help="steps per block (default: 20)")
    p.add_argument("--features", type=int, default=10, help="the Linear layer's width (default: 10)")
    p.add_argument("--batch", type=int, default=32, help="samples per step (default: 32)")
    p.add_argument("--quick", action="store_true", help="a few blocks: that it runs, not a figure")
    p.add_argument("--phase-steps", action="store_true", help="time phase steps (every hook on) instead of "
                   "measured ones (the target is for measured steps)")
    p.set_defaults(func=tiny)
    for name, func in (("overhead", overhead), ("alternate", alternate), ("agreement", agreement)):
        p = sub.add_parser(name)
        samples, epochs = {"alternate": (1024, 9), "overhead": (2048, 3), "agreement": (4096, 5)}[name]
        p.add_argument("--samples", type=int, default=samples, help=f"the script's training set (default: {samples})")
        p.add_argument("--epochs", type=int, default=epochs, help="the script's epochs; the first is not counted "
                       f"(default: {epochs})")
        if name == "overhead":
            p.add_argument("--pairs", type=int, default=5, help="interleaved plain/hooked pairs (default: 5)")
        elif name == "alternate":
            p.add_argument("--runs", type=int, default=3, help="runs, each alternating (default: 3)")
        else:
            p.add_argument("--rounds", type=int, default=3, help="rounds of script alone, then sweep (default: 3)")
        p.set_defaults(func=func)
    args = parser.parse_args()
    if getattr(args, "quick", False):
        args.blocks, args.block_steps = 4, 5
    args.func(args)


if __name__ == "__main__":
    main()
