"""How a command's flags are parsed: argparse whose errors are one line and whose arguments hold no
control character, the types and flags several commands share (numbers, counts, a price), and the flags
handed on as a frozen value (:class:`Options`)."""

from __future__ import annotations

import argparse
import math

from ddpbench.cli.shared.exits import EXIT_BAD_INPUT, say_error
from ddpbench.errors import InputError, shown

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


class Options:
    """A command's parsed flags handed on as a frozen value (what :mod:`ddpbench.show` is given): read as the
    flags are (``options.batch_size``, ``getattr(options, "batch", None)``), never changed; :meth:`but` is a
    copy with some changed."""

    __slots__ = ("_values",)

    def __init__(self, values: dict):
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, name: str):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value) -> None:
        import dataclasses

        raise dataclasses.FrozenInstanceError(f"cannot set {name!r}: options are a frozen value (use .but)")

    def __delattr__(self, name: str) -> None:
        self.__setattr__(name, None)

    def but(self, **changes) -> Options:
        """These options with ``changes`` in place of theirs."""
        return Options({**self._values, **changes})


def frozen(args: argparse.Namespace, **changes) -> Options:
    """``args`` (the parsed flags) as a frozen value, with ``changes`` in place of theirs; ``args`` is left as it is."""
    return Options({**vars(args), **changes})


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
        given its default from one not given (:func:`ddpbench.cli.shared.unused.refuse_unused`)."""
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


def positive_number(text: str) -> float:
    """argparse's ``type`` for a length of time (``--every 30``): a finite number above 0."""
    value = finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number above 0 (got {shown(text)})")
    return value


def whole_number(text: str) -> int:
    """argparse's ``type`` for a count (``--workers 4``): a whole number of 1 or more."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of 1 or more (got {shown(text)})")
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



class Given(argparse.Action):
    """Stores a flag's value as ``store`` (or ``store_true`` with ``nargs=0``) and notes that it was typed:
    ``args.given`` holds every such flag's dest, whatever its value (one typed at its default included)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)
        namespace.given = (*getattr(namespace, "given", ()), self.dest)
