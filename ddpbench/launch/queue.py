"""When a job of each size would start on a Slurm cluster: ``sbatch --test-only`` asked once a size, which
submits nothing (Slurm answers "Job N to start at TIME ..." and forgets it). Every value the user gave goes in
one argv element of the form ``--partition=VALUE`` (never through a shell, never read as an option of its own),
after a check of its characters; each call waits on the scheduler at most :data:`TIMEOUT_S` seconds. What the
scheduler refuses (a partition or account it does not know, a limit past the partition's) is one line quoting
sbatch's own message."""

from __future__ import annotations

import datetime as _dt
import math
import re
import shutil
import subprocess

from ddpbench.errors import InputError, shown

#: the most seconds one ``sbatch --test-only`` may take before the answer is given up
TIMEOUT_S = 5.0
#: what a partition or an account may be called here: letters, digits and ``_ . + -``, never a leading ``-``
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
#: what a device is to Slurm: a GPU (``--gpus-per-node``) or a CPU task (a cluster without GPUs)
DEVICES = ("gpu", "cpu")
_START = re.compile(r"to start at (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)")
#: Slurm's time limits: minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes,
#: days-hours:minutes:seconds
_LIMIT = re.compile(r"(?:(?P<days>\d+)-(?P<dh>\d+)(?::(?P<dm>\d+)(?::(?P<ds>\d+))?)?"
                    r"|(?P<a>\d+)(?::(?P<b>\d+)(?::(?P<c>\d+))?)?)")


def slurm_name(value: str, flag: str) -> str:
    """``value`` where it is a name Slurm could have for a partition or an account (:data:`NAME`), else the
    InputError naming ``flag``."""
    if not NAME.fullmatch(value):
        raise InputError("command line", flag, f"must be a Slurm name: letters, digits and _ . + -, not starting "
                         f"with - (got {shown(value)})")
    return value


def limit_minutes(text: str, flag: str = "--time-limit") -> int:
    """A Slurm time limit (``90``, ``1:30:00``, ``2-12``) in whole minutes, at least 1; InputError otherwise."""
    found = _LIMIT.fullmatch(text.strip())
    if found is None:
        raise InputError("command line", flag, "must be a Slurm time limit: MINUTES, MINUTES:SECONDS, "
                         f"HOURS:MINUTES:SECONDS, DAYS-HOURS, DAYS-HOURS:MINUTES or DAYS-HOURS:MINUTES:SECONDS "
                         f"(got {shown(text)})")
    g = {k: int(v) for k, v in found.groupdict().items() if v is not None}
    if "days" in g:
        seconds = ((g["days"] * 24 + g["dh"]) * 60 + g.get("dm", 0)) * 60 + g.get("ds", 0)
    elif "c" in g:
        seconds = (g["a"] * 60 + g["b"]) * 60 + g["c"]
    else:
        seconds = g["a"] * 60 + g.get("b", 0)
    if seconds <= 0:
        raise InputError("command line", flag, f"must be longer than 0 (got {shown(text)})")
    return max(1, math.ceil(seconds / 60))


def sbatch_argv(devices: int, nodes: int, minutes: int, device: str = "gpu", partition: str | None = None,
                   account: str | None = None) -> list[str]:
    """The argv of ``sbatch --test-only`` for a job of ``devices`` devices over ``nodes`` nodes, ``minutes`` long:
    one task a device, and on ``device == "gpu"`` the GPUs each node takes."""
    per_node = math.ceil(devices / nodes)
    return ["sbatch", "--test-only", "--job-name=ddpbench-whatif", f"--nodes={nodes}", f"--ntasks={devices}",
            f"--ntasks-per-node={per_node}", *([f"--gpus-per-node={per_node}"] if device == "gpu" else []),
            f"--time={minutes}", *([f"--partition={partition}"] if partition else []),
            *([f"--account={account}"] if account else []), "--wrap=true"]


def start_in_hours(argv: list[str], now: _dt.datetime | None = None) -> float:
    """Hours from ``now`` until Slurm would start the job ``argv`` asks about (0 where it would start now);
    InputError, one line, where sbatch is missing, refuses the job, says no time, or takes over
    :data:`TIMEOUT_S` seconds."""
    if shutil.which(argv[0]) is None:
        raise InputError("command line", "--queue", f"slurm: no {argv[0]} on PATH: run it where Slurm's commands "
                         "are, or give each size's wait with --queue-wait SIZE=HOURS,...")
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise InputError("command line", "--queue", f"slurm: sbatch --test-only did not answer within {TIMEOUT_S:g} "
                         "s (is slurmctld up?); nothing was submitted; try again, or give --queue-wait") from None
    said = " ".join(line.strip() for line in (done.stderr + done.stdout).splitlines() if line.strip())
    found = _START.search(said)
    if done.returncode != 0 or found is None:
        quoted = said.removeprefix("sbatch: error: ").replace("sbatch: error: ", "") or f"exit {done.returncode}"
        raise InputError("command line", "--queue", f"slurm refused a job of {_shape(argv)}: {quoted[:300]!r}")
    start = _dt.datetime.fromisoformat(found.group(1))
    return max((start - (now or _dt.datetime.now())).total_seconds() / 3600, 0.0)


def _shape(argv: list[str]) -> str:
    values = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    return f"{values.get('ntasks')} devices on {values.get('nodes')} node(s), {values.get('time')} minutes"
