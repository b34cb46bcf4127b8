"""What every command shares: exit codes, the one-line error, the output folder check and claim."""

from __future__ import annotations

import argparse
import contextlib
import errno
import math
import sys
from dataclasses import dataclass
from pathlib import Path

from ddpbench.errors import InputError, shown

EXIT_FAILED = 1  # a job failed or timed out, or results could not be written
EXIT_BAD_INPUT = 2
EXIT_UNTESTED = 3  # a gate tested nothing, and waiting for more commits will not change that (history check)
EXIT_INTERRUPTED = 130


def say_error(text: str) -> None:
    """One line on stderr, whatever the user typed: control characters (a newline in a flag's
    value) and the lone surrogates a non-UTF-8 file name arrives as are written as escapes."""
    sys.stderr.write("".join(c if c.isprintable() else ascii(c)[1:-1] for c in text) + "\n")
    sys.stderr.flush()


PROG = "python -m ddpbench"
_UNSET = object()  # a flag not typed (argparse fills in only what a namespace does not hold)


#: the kinds of character (Unicode categories) no argument may hold: C0 and C1 controls (a newline, a tab,
#: ESC, NUL, DEL) and the line and paragraph separators. Lone surrogates (Cs, a non-UTF-8 file name as
#: Python hands it over) and every printable character pass.
REFUSED_CHARACTERS = {"Cc": "a control character", "Zl": "a line separator", "Zp": "a paragraph separator"}


def refused_character(text: str) -> tuple[str, str] | None:
    """The first character of ``text`` that :data:`REFUSED_CHARACTERS` refuses and what it is; None where none."""
    import unicodedata

    for char in text:
        what = REFUSED_CHARACTERS.get(unicodedata.category(char))
        if what is not None:
            return char, what
    return None


class Parser(argparse.ArgumentParser):
    """argparse, but its errors are one line like every other bad-input error, and no argument holds a
    control character (:data:`REFUSED_CHARACTERS`): a newline pasted into ``--fail-on`` is refused,
    naming the flag, rather than read as a value without it."""

    def error(self, message: str):
        say_error(f"{self.prog}: error: {message} (see {self.prog} --help)")
        self.exit(EXIT_BAD_INPUT)

    def _get_values(self, action, arg_strings):
        # every value of every flag and positional passes here before its type sees it; a command's own
        # arguments are checked by its parser, against its own flags (only the command's name here)
        for text in arg_strings[:1] if action.nargs == argparse.PARSER else arg_strings:
            found = refused_character(text)
            if found is not None:
                name = action.option_strings[-1] if action.option_strings else action.metavar or action.dest
                raise InputError("command line", name, f"{shown(text)} holds {found[1]} ({ascii(found[0])}); "
                                 "give the value without it")
        return super()._get_values(action, arg_strings)

    def parse_known_args(self, args=None, namespace=None):
        """As argparse's, and the namespace says which flags were typed (``flags_given``, each by its last
        option string, whatever its value) and of which command (``flags_of``, the innermost command's name):
        parsed a second time into a namespace whose every flag starts unset, argparse's way of telling a flag
        given its default from one not given (:func:`ddpbench.cli.common.refuse_unused`)."""
        parsed, extras = super().parse_known_args(args, namespace)
        flags = [a for a in self._actions if a.option_strings and a.dest != argparse.SUPPRESS
                 and not isinstance(a, (argparse._HelpAction, argparse._VersionAction))]
        if args is None or not flags:
            return parsed, extras
        # an appending or counting flag starts from None, which argparse takes for "nothing yet"
        fresh = argparse.Namespace(**{a.dest: None if isinstance(a, (argparse._AppendAction, argparse._CountAction))
                                      else _UNSET for a in flags})
        seen, _ = super().parse_known_args(list(args), fresh)
        given = {a.option_strings[-1] for a in flags if getattr(seen, a.dest, _UNSET) not in (_UNSET, None)}
        parsed.flags_given = frozenset(given | getattr(parsed, "flags_given", frozenset()))
        if not hasattr(parsed, "flags_of"):  # the innermost command's parser runs first
            parsed.flags_of = self.prog.removeprefix(PROG).strip()
        return parsed, extras


#: errno -> what to do where a command could not write: (a sweep, which finishes with --resume; any other)
WRITE_FIXES = {errno.ENOSPC: ("free space", "free space and run it again"),
               errno.EDQUOT: ("free space", "free space and run it again"),
               errno.EROFS: ("make the folder writable", "give a folder you can write"),
               errno.EACCES: ("make the folder writable", "give a folder you can write"),
               errno.EPERM: ("make the folder writable", "give a folder you can write")}


def cannot_write(err: OSError, args) -> tuple[str, int] | None:
    """The one line and exit code of a command that could not write (:data:`WRITE_FIXES`); None for
    another error. A command with ``--resume`` keeps every launch it stored (the store truncates a
    record it could not finish) and exits 1; any other names the folder it could not write in, and
    exits 2 where that folder is one it may not write (bad input), 1 where the disk is full."""
    fixes = WRITE_FIXES.get(err.errno)
    if fixes is None:
        return None
    if hasattr(args, "resume"):
        return (f"error: cannot write {err.filename or 'the results'}: {err.strerror}; every launch stored before is "
                f"intact; {fixes[0]} and rerun with --resume to finish"), EXIT_FAILED
    where = f" in {Path(err.filename).parent}" if err.filename else ""
    fix = fixes[1] + (" (--out)" if fixes[1].startswith("give") and hasattr(args, "out") else "")
    return (f"error: cannot write{where}: {err.strerror}; {fix}",
            EXIT_FAILED if err.errno in (errno.ENOSPC, errno.EDQUOT) else EXIT_BAD_INPUT)


def check_out_dir(out_dir: Path) -> None:
    """The output folder must be a folder we can write (:func:`ddpbench.results.folder.check_target`,
    :func:`~ddpbench.results.folder.check_writable`), and its results file a file."""
    from ddpbench.results.folder import check_target, check_writable
    from ddpbench.results.schema import RESULTS_FILE

    check_target(out_dir)
    if (out_dir / RESULTS_FILE).exists() and not (out_dir / RESULTS_FILE).is_file():
        raise InputError("command line", "--out", f"{out_dir / RESULTS_FILE} is not a file; give another folder")
    check_writable(out_dir)


def add_folder_flags(parser) -> None:
    """--wait and --force of every command that writes a results folder (:mod:`ddpbench.results.folder`)."""
    parser.add_argument("--wait", action="store_true",
                        help="if another sweep is writing the output folder, wait for it to end instead of stopping")
    parser.add_argument("--force", action="store_true",
                        help="write into an output folder that holds files ddpbench did not write")


@contextlib.contextmanager
def claimed_out_dir(out_dir: Path, args, console=None):
    """Hold ``out_dir`` for this command's sweep (one sweep per folder), as ``args.wait`` and
    ``args.force`` say; a line on ``console`` while it waits."""
    from ddpbench.results.writing import claimed

    def waiting(running: str) -> None:
        text = f"waiting for {out_dir}: another writer ({running}) holds it"
        if console is not None:
            console.print(text, highlight=False)
        else:
            say_error(text)

    with claimed(out_dir, wait=getattr(args, "wait", False), force=getattr(args, "force", False),
                 writer=getattr(args, "flags_of", "") or "sweep", on_wait=waiting):
        yield out_dir


def add_cost_flags(parser) -> None:
    """The flags of a device-hour's price and the training it is for (:class:`ddpbench.experiment.cost.Cost`'s
    keys, each declared there with its help), put over an experiment's ``[cost]``."""
    import dataclasses

    from ddpbench.experiment.cost import Cost

    for f in dataclasses.fields(Cost):
        kind = {"samples": int, "currency": str, "source": str, "date": str}.get(f.name, finite_float)
        parser.add_argument(f.metadata["flag"], dest=f"cost_{f.name}", type=kind, default=None,
                            metavar="N" if kind is not str else "TEXT", help=f.metadata["help"])


def cost_flags(args) -> dict:
    """flag -> value of the cost flags given (None where not)."""
    from ddpbench.experiment.cost import FLAGS

    return {flag: getattr(args, f"cost_{name}", None) for flag, name in FLAGS.items()}


def finite_float(text: str) -> float:
    """argparse's ``type`` for every number flag: a finite number (never inf or nan)."""
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number (got {shown(text)})")
    return value


def whole_numbers(text: str) -> tuple[int, ...]:
    """argparse's ``type`` for a list of counts (``--world-sizes 8,160,320``): whole numbers of 1 or more,
    comma-separated, sorted and once each."""
    import argparse

    try:
        numbers = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be whole numbers separated by commas (got {shown(text)})") from None
    if not numbers or numbers[0] < 1:
        raise argparse.ArgumentTypeError(f"must be whole numbers of 1 or more (got {shown(text)})")
    return numbers


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
        Unused(("--batch-size",), ("--price-per-device-hour", "--train-samples", "--input-samples-per-s"),
               "the batch sets the time and cost of training and the input pipeline's share", given=False),
    ),
    "sweep": (
        Unused(("--resume", "--no-report", "--wide", "--verbose", "--wait", "--force"), ("--dry-run",),
               "--dry-run lists the jobs and runs, stores and reports nothing"),
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
