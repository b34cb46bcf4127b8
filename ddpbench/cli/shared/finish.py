"""``whatif``'s time to finish: the flags of the run's work (``--samples``, ``--steps``, ``--epochs`` with
``--dataset-size``), of the floor (``--min-efficiency``) and of the queue (``--queue slurm`` with its partition,
account, time limit and what a device is to Slurm, or ``--queue-wait SIZE=HOURS,...``), their checks, and the
queue asked (:mod:`ddpbench.launch.queue`) for the answer to call once it knows each size's time to train."""

from __future__ import annotations

import math

from ddpbench.cli.shared.parsing import finite_float, whole_number
from ddpbench.errors import InputError, shown

#: the flags that give the run's work, one of which ``--queue`` and ``--queue-wait`` need
WORK_FLAGS = ("--samples", "--steps", "--epochs")


def add_finish_flags(p) -> None:
    """The time-to-finish flags of ``whatif``'s parser ``p``."""
    p.add_argument("--train-samples", "--samples", dest="samples", type=whole_number, metavar="N",
                   help="the run's samples, the same at every size: its time to finish, device-hours and cost at "
                   "each (default with a price: a million)")
    p.add_argument("--steps", type=whole_number, metavar="N", help="instead: the run's optimizer steps, the same "
                   "number at every size (a size of more devices trains more samples in them; default: none)")
    p.add_argument("--epochs", type=finite_float, metavar="E", help="or: epochs of --dataset-size (default: none)")
    p.add_argument("--dataset-size", type=whole_number, metavar="S", help="an epoch's samples (default: none)")
    p.add_argument("--min-efficiency", type=finite_float, metavar="F", help="the floor: the largest size whose "
                   "efficiency band stays at or above it (default: --target-efficiency's, 0.9)")
    p.add_argument("--queue", choices=("slurm",), help="ask Slurm when a job of each size would start "
                   "(sbatch --test-only: nothing is submitted; default: no queue)")
    p.add_argument("--partition", metavar="P", help="the Slurm partition asked (default: the cluster's default)")
    p.add_argument("--account", metavar="A", help="the Slurm account asked (default: the user's default)")
    p.add_argument("--time-limit", metavar="T", help="the job's limit as Slurm writes it, 90 or 1:30:00 "
                   "(default: each size's time to train at its band's high end, else at its estimate)")
    p.add_argument("--queue-device", choices=("gpu", "cpu"), default="gpu", help="what a device is to Slurm: a "
                   "GPU (--gpus-per-node=N) or a CPU task (a cluster without GPUs) (default: gpu)")
    p.add_argument("--queue-wait", type=_waits, metavar="SIZE=HOURS,...", help="where the scheduler is not Slurm: "
                   "each size's wait in the queue, hours (its sizes are the world sizes unless --world-sizes; "
                   "default: none)")


def _waits(text: str) -> dict[int, float]:
    """argparse's ``type`` of ``--queue-wait``: SIZE=HOURS pairs, comma-separated, each size once."""
    import argparse

    waits = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        size, _, hours = part.partition("=")
        try:
            size_n, hours_n = int(size), float(hours)
        except ValueError:
            size_n, hours_n = 0, math.nan
        if size_n < 1 or not math.isfinite(hours_n) or hours_n < 0 or size_n in waits:
            raise argparse.ArgumentTypeError(f"must be SIZE=HOURS pairs, each size a whole number of 1 or more once "
                                             f"and its hours 0 or more (got {shown(part)})")
        waits[size_n] = hours_n
    if not waits:
        raise argparse.ArgumentTypeError(f"must be SIZE=HOURS pairs separated by commas (got {shown(text)})")
    return waits


def check_finish(args) -> None:
    """The run's work as ``args.amount`` (None where none is asked), the floor as ``args.floor``, and the queue
    as ``args.ask_queue`` (None, or what gives each size's wait); InputError, one line, for what cannot be."""
    from ddpbench.analysis.models import Amount

    if args.queue_wait is not None and not isinstance(args.queue_wait, dict):  # `--queue-wait=--`: argparse's []
        raise InputError("command line", "--queue-wait", "must be SIZE=HOURS pairs separated by commas (got '--')")
    if args.epochs is not None and not args.epochs > 0:
        raise InputError("command line", "--epochs", f"must be a number above 0 (got {args.epochs:g})")
    if (args.epochs is None) != (args.dataset_size is None):
        raise InputError("command line", "--epochs" if args.epochs is None else "--dataset-size", "is needed with "
                         + ("--dataset-size: the epochs of it" if args.epochs is None else "--epochs: the samples of "
                            "one epoch"))
    typed = [flag for flag, value in zip(WORK_FLAGS, (args.samples, args.steps, args.epochs)) if value is not None]
    if len(typed) > 1:
        raise InputError("command line", typed[1], f"sets the run's work, as {typed[0]} does: give one of them")
    samples = math.ceil(args.epochs * args.dataset_size) if args.epochs is not None else args.samples
    args.amount = Amount(samples=samples) if samples is not None else \
        Amount(steps=args.steps) if args.steps is not None else None
    queue = "--queue" if args.queue else "--queue-wait" if args.queue_wait else None
    if queue and args.amount is None:
        raise InputError("command line", queue, "needs the run's work, to know when each size finishes: --samples N, "
                         "--steps N or --epochs E --dataset-size S")
    args.floor = args.target_efficiency if args.min_efficiency is None else args.min_efficiency
    if not 0 < args.floor <= 1:
        raise InputError("command line", "--min-efficiency", f"must be above 0 and at most 1 (got {args.floor:g})")
    args.ask_queue, args.queue_said = None, ""
    if args.queue_wait:
        _given_waits(args)
    if args.queue:
        _slurm(args)


def _given_waits(args) -> None:
    waits = args.queue_wait
    sizes = tuple(sorted(waits))
    if args.world_sizes is None:
        args.world_sizes = sizes
    missing = sorted(set(args.world_sizes) - set(waits))
    extra = sorted(set(waits) - set(args.world_sizes))
    if missing or extra:
        raise InputError("command line", "--queue-wait", f"must give a wait for each world size and no other "
                         f"({'no wait for ' + ', '.join(map(str, missing)) if missing else ''}"
                         f"{'; ' if missing and extra else ''}"
                         f"{', '.join(map(str, extra)) + ' not in --world-sizes' if extra else ''})")
    args.ask_queue = lambda rows: waits
    args.queue_said = "each size's wait as given (--queue-wait)"


def _slurm(args) -> None:
    """``args.ask_queue`` asking Slurm, its values checked here, before anything is modelled."""
    from ddpbench.launch.queue import limit_minutes, sbatch_argv, slurm_name, start_in_hours

    partition = slurm_name(args.partition, "--partition") if args.partition is not None else None
    account = slurm_name(args.account, "--account") if args.account is not None else None
    fixed = limit_minutes(args.time_limit) if args.time_limit is not None else None

    def ask(rows) -> dict[int, float]:
        waits = {}
        for r in rows:
            hours = r.hours.high if math.isfinite(r.hours.high) else r.hours.value
            minutes = fixed or max(1, math.ceil(hours * 60))
            waits[r.devices] = start_in_hours(sbatch_argv(r.devices, r.nodes, minutes, args.queue_device,
                                                          partition, account))
        return waits

    args.ask_queue = ask
    args.queue_said = ("Slurm's answer to sbatch --test-only for each size (nothing submitted)"
                       + "".join(f", {flag} {value}" for flag, value in (("partition", partition), ("account", account))
                                 if value) + (f", a limit of {fixed} minutes" if fixed else ", each with its time to "
                                              "train as its limit (the band's high end where it has one)")
                       + f", a device a {args.queue_device.upper()}")
