"""Overrides from the command line: what flags change in an experiment, checked as a file's values are.

Errors name the flag and come from ``"command line"``, as a file's name the file and the key.
"""

from __future__ import annotations

import dataclasses

from ddpbench.errors import InputError
from ddpbench.experiment.load import Experiment, check_stall
from ddpbench.experiment.scripts import check_script_tracing
from ddpbench.experiment.spec import FIELDS, check_micro_batch, check_nodes_and_faults, check_value

#: (flag, job field) of the emulated-node flags; a flag sets the field in every job
EMULATION_FLAGS = (("--emulate-nodes", "emulate_nodes"), ("--link", "link"), ("--link-delay-ms", "link_delay_ms"))
#: ``--stall``'s help, the same in every command that takes it
STALL_HELP = ("a launch none of whose ranks moved (a step or a phase) for S seconds is ended as hung, its record "
              "saying where each rank stood (overrides stall_s; default: none, the timeout ends it)")
#: (flag, job field) of every ``sweep`` flag that sets a field in every job
JOB_FLAGS = (*EMULATION_FLAGS, ("--trace-steps", "trace_steps"))


def check_timeout(seconds: float) -> float:
    """``--timeout``: seconds per launch."""
    if not 1 <= seconds <= 7 * 86400:  # also false for NaN
        raise InputError("command line", "--timeout", f"must be 1 to 604800 seconds (got {seconds:g})")
    return seconds


def with_timeout(experiment: Experiment, seconds: float | None) -> Experiment:
    """The experiment with ``--timeout`` in place of its ``timeout_s`` (unchanged when None)."""
    if seconds is None:
        return experiment
    return dataclasses.replace(experiment, timeout_s=check_timeout(seconds))


def with_stall(experiment: Experiment, seconds: float | None) -> Experiment:
    """The experiment with ``--stall`` in place of its ``stall_s`` (unchanged when None)."""
    if seconds is None:
        return experiment
    return dataclasses.replace(experiment, stall_s=check_stall(seconds, "command line", "--stall"))


def with_job_flags(experiment: Experiment, given: dict) -> Experiment:
    """The experiment with the job flags ``given`` (:data:`JOB_FLAGS`: job field -> value, None where
    not given) applied to every job; jobs that become the same job are run once."""
    fields = {field: check_value(field, given[field], "command line", flag)
              for flag, field in JOB_FLAGS if given.get(field) is not None}
    if not fields:
        return experiment
    jobs = {}
    for spec in experiment.jobs:
        spec = dataclasses.replace(spec, **fields)
        check_nodes_and_faults(spec, "command line")
        check_micro_batch(spec, "command line")
        check_script_tracing(spec, "command line", "--trace-steps")
        jobs.setdefault(spec.key, spec)
    return dataclasses.replace(experiment, jobs=tuple(jobs.values()))


def flag_name(field: str) -> str:
    """The ``run`` command's flag of a job field: ``bucket_cap_mb`` -> ``--bucket-cap-mb``."""
    return f"--{field.replace('_', '-')}"


def parse_flag(name: str, text: str):
    """Turn a flag's text into a field value; check_value then validates it."""
    kind = FIELDS[name].type
    if kind == "bool":
        return {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}.get(text.lower(), text)
    if text == "auto" or kind == "str":
        return text
    try:
        return float(text) if kind == "float" else int(text)
    except ValueError:
        return text


def fields_from_flags(texts: dict[str, str | None]) -> dict:
    """Job fields from the ``run`` command's flags (field -> the flag's text, None where not given),
    each checked as an experiment file's value is."""
    return {name: check_value(name, parse_flag(name, text), "command line", flag_name(name))
            for name, text in texts.items() if text is not None}
