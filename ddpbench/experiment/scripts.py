"""Jobs that measure a user's training script (``script = "train.py"``) instead of a model.

The script decides what it trains, on what data, with which optimizer and for how long; the job
decides how many ranks run it and how its DDP is set up (``bucket_cap_mb`` and the other DDP
settings, applied where the script builds ``DistributedDataParallel``). What the script decides
cannot be given in the job: the fields whose role is "script decides"
(:data:`~ddpbench.experiment.spec.SCRIPT_DECIDES`) are refused with one line naming the key. The
script's path and the arguments that name files beside the experiment file are relative to that
file's folder (``script_dir``, set here, not part of the job's identity).
"""

from __future__ import annotations

from pathlib import Path

from ddpbench.errors import InputError, shown
from ddpbench.experiment.spec import SCRIPT_DECIDES, SCRIPT_ONLY  # the fields' roles say which (spec.ROLES)


def script_base(source: str) -> Path:
    """The folder a job's script is relative to: its experiment file's, else (flags of ``run``) the
    current folder."""
    path = Path(source)
    return (path.parent if path.is_file() else Path.cwd()).resolve()


def place_script(fields: dict, source: str) -> dict:
    """``fields`` with ``script_dir`` set for a script job (the experiment file's folder)."""
    if not fields.get("script") or fields.get("script_dir"):
        return fields
    return {**fields, "script_dir": str(script_base(source))}


def script_path(spec) -> Path:
    """Where a script job's script is."""
    return Path(spec.script_dir or ".") / spec.script


def check_script_tracing(spec, source: str, key: str) -> None:
    """A script's steps are not traced (yet): the profiler would have to start and stop at its steps."""
    if spec.script and spec.trace_steps:
        raise InputError(source, key, "is not available for a script job: its steps are timed by hooks, not "
                         "traced; leave it out (or 0)")


def check_script_job(spec, given: dict, source: str, key=lambda name: name) -> None:
    """One line naming the key for a script job that asks for what the script decides, or for what
    ddpbench cannot measure in a script; and for a script that is not there. ``key(field)``: the
    field as the user gave it (a flag of ``run``)."""
    if not spec.script:
        for name in SCRIPT_ONLY:
            if name in given:
                raise InputError(source, key(name), "applies to a script job only: set script, or leave it out")
        return
    for name in SCRIPT_DECIDES:
        if name in given:
            raise InputError(source, key(name), "is the script's to decide, not the job's: leave it out of a "
                             f"script job (script = {spec.script!r})")
    if spec.strategy != "ddp":
        raise InputError(source, key("strategy"), f"a script is measured through the DistributedDataParallel it "
                         f"builds: allowed with script: 'ddp' (got {shown(spec.strategy)})")
    check_script_tracing(spec, source, key("trace_steps"))
    path = script_path(spec)
    if not path.is_file():
        raise InputError(source, key("script"), f"no such file: {path} (a script's path is relative to the "
                         "experiment file's folder)")
