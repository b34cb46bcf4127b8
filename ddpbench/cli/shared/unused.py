"""The flags another flag leaves without effect: a command line giving one is refused, naming both,
rather than run as if the flag had not been typed."""

from __future__ import annotations

from dataclasses import dataclass

from ddpbench.errors import InputError


@dataclass(frozen=True)
class Unused:
    """Flags that would do nothing beside another: ``flags`` (``"*"``: every other flag of the command) when
    one of ``others`` is given, or, with ``given=False``, when none of them is; ``why`` says what makes them so."""

    flags: tuple[str, ...]
    others: tuple[str, ...]
    why: str
    given: bool = True


#: each command's flags that one of its other flags leaves without effect; a command line giving one is refused
#: (:func:`refuse_unused`) rather than run as if the flag had not been typed. Those that depend on a flag's value
#: (whatif's --model-args and --model-size by the model, --nvls by the algorithm) are its command's own checks.
UNUSED: dict[str, tuple[Unused, ...]] = {
    "whatif": (
        Unused(("*",), ("--validate",), "--validate checks the model against published scaling and takes no other "
               "flag"),
        Unused(("--model", "--model-size", "--model-args", "--bucket-cap-mb"), ("--from",),
               "--from takes every workload the sweep measured, with DDP's own buckets"),
        Unused(("--leaf-nodes",), ("--oversubscription",), "the nodes at full rate matter only beyond them, "
               "with --oversubscription", given=False),
        Unused(("--currency",), ("--price-per-device-hour",), "the currency is the prices'", given=False),
        Unused(("--batch-size",), ("--price-per-device-hour", "--samples", "--steps", "--epochs",
                                   "--input-samples-per-s"),
               "the batch sets the time and cost of training and the input pipeline's share", given=False),
        Unused(("--min-efficiency",), ("--price-per-device-hour", "--samples", "--steps", "--epochs"),
               "the floor is read on the time to finish, asked with the run's work or a price", given=False),
        Unused(("--partition", "--account", "--time-limit", "--queue-device"), ("--queue",),
               "they shape the job asked of Slurm", given=False),
        Unused(("--queue-wait",), ("--queue",), "--queue asks the scheduler for each size's wait"),
        Unused(("--accumulation",), ("--global-batch",), "a fixed global batch sets each size's accumulation"),
        Unused(("--global-batch",), ("--micro-batch",), "a fixed global batch is micro-batch x accumulation x "
               "devices: give the samples a device trains a micro-step", given=False),
        Unused(("--micro-batch",), ("--global-batch",), "the micro-batch divides a fixed global batch",
               given=False),
    ),
    "sweep": (
        Unused(("--resume", "--no-report", "--wide", "--verbose", "--wait", "--force"), ("--dry-run",),
               "--dry-run lists the jobs and runs, stores and reports nothing"),
    ),
    "traces": (
        Unused(("--compare-anyway",), ("--before",), "it compares with --before's traces", given=False),
        Unused(("--workers",), ("--ray",), "with --ray the files are parsed as Ray tasks, a few per CPU of the "
               "cluster"),
    ),
    "report": (
        Unused(("--out", "--force"), ("--check",), "--check writes nothing"),
        Unused(("--force",), ("--out",), "the report's own folder is the results folder, which ddpbench wrote",
               given=False),
    ),
}


def refuse_unused(command: str, given: frozenset[str]) -> None:
    """InputError naming the first flag ``given`` to ``command`` (typed, whatever its value:
    :class:`Parser`) that :data:`UNUSED` says does nothing beside the others given."""
    for rule in UNUSED.get(command, ()):
        present = [other for other in rule.others if other in given]
        if bool(present) != rule.given:
            continue
        for flag in sorted(given - set(rule.others)) if rule.flags == ("*",) else rule.flags:
            if flag in given:
                if rule.given:
                    raise InputError("command line", flag, f"does nothing with {present[0]} ({rule.why}); drop one "
                                     "of them")
                raise InputError("command line", flag, f"does nothing without {' or '.join(rule.others)} "
                                 f"({rule.why})")

