"""Hypothesis over whole command lines: any arguments either reach the runner or end with exit code 2
and one line -- never a traceback. In-process, with the runner replaced by a probe (the ``runner_probe``
fixture), so a valid command line costs nothing. The named bad inputs, a world size past the cores and
every command's help are in tests/unit/cli/test_cli_fuzz.py."""

import string
import sys

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ddpbench.cli.program import main
from ddpbench.experiment.spec import FIELDS
from ddpbench.testing.cli import FILES, Reached
from ddpbench.testing.fuzzing import examples

PATHS = [*FILES, "missing.toml", "folder", "", "\udcff\udcfe.toml"]  # the last: a non-UTF-8 file name


numbers = (st.integers(-10, 10) | st.integers(-(10**30), 10**30) | st.floats(allow_nan=True, allow_infinity=True)
           | st.sampled_from(["0", "1e309", "-0", "nan", "inf", "1K", "64M:1K", "1,2,x", "", "auto"]))
words = st.text(string.printable + "\udcff\u00e9<>", max_size=12)
values = numbers.map(str) | words | st.sampled_from(PATHS) | st.sampled_from(
    [*{c for f in FIELDS.values() for c in (f.metadata.get("choices") or ())}, "gloo", "nccl", "cuda", "cpu"])

SWEEP_FLAGS = ["--out", "--timeout", "--stall", "--launcher", "--nodes", "--partition", "--array", "--nnodes",
               "--node-rank", "--rdzv-endpoint", "--emulate-nodes", "--link", "--link-delay-ms", "--trace-steps",
               "--resume", "--dry-run", "--no-report", "--wait", "--force"]
RUN_FLAGS = [f"--{name.replace('_', '-')}" for name in FIELDS] + ["--out", "--timeout", "--stall"]
COLLECTIVES_FLAGS = ["--ops", "--sizes", "--factor", "--world-sizes", "--backend", "--iters", "--warmup", "--out",
                     "--timeout", "--resume", "--no-report"]
FOLDERS = ["folder", "missing", "valid.toml", ""]


def flags(names):
    pair = st.tuples(st.sampled_from(names + ["--bogus"]), values).map(list)
    return st.lists(pair | st.sampled_from(names).map(lambda f: [f]), max_size=4).map(lambda ps: sum(ps, []))


def plausible(name):
    """A value of a job field that is often valid: a choice, the default, or a small or huge number."""
    meta, default = FIELDS[name].metadata, FIELDS[name].default
    if meta["choices"]:
        return st.sampled_from(list(meta["choices"]))
    return st.sampled_from([str(default).lower(), "1", "2", "64", "0", "100000000"] + (["auto"] if meta["auto"] else [])
                           + (["1gbit", "100mbit"] if meta["pattern"] else []))


plausible_run_flags = st.dictionaries(st.sampled_from(list(FIELDS)), st.just(None), max_size=5).flatmap(
    lambda names: st.tuples(*[plausible(n).map(lambda v, n=n: [f"--{n.replace('_', '-')}", v]) for n in names])
).map(lambda pairs: sum(pairs, []))

command_lines = st.one_of(
    st.tuples(st.just(["sweep"]), st.lists(st.sampled_from(PATHS), max_size=1), flags(SWEEP_FLAGS)),
    st.tuples(st.just(["run"]), st.just([]), flags(RUN_FLAGS)),
    st.tuples(st.just(["run"]), st.just([]), plausible_run_flags),  # mostly valid: past parsing, into the checks
    st.tuples(st.just(["collectives"]), st.lists(st.sampled_from(PATHS), max_size=1), flags(COLLECTIVES_FLAGS)),
    st.tuples(st.just(["report"]), st.lists(st.sampled_from(FOLDERS), min_size=0, max_size=2), flags(["--out"])),
    st.tuples(st.just(["compare"]), st.lists(st.sampled_from(FOLDERS), max_size=3), flags(["--fail-on", "--out"])),
    st.tuples(st.just(["export-benchmark"]), st.lists(st.sampled_from(FOLDERS), max_size=2), flags(["--out"])),
    st.tuples(st.lists(words, min_size=1, max_size=1), st.just([]), flags(SWEEP_FLAGS)),
).map(lambda parts: parts[0] + parts[1] + parts[2])


@settings(max_examples=examples(1500), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(argv=command_lines)
def test_any_command_line_reaches_the_runner_or_gives_one_line_and_exit_2(argv, runner_probe, capsys):
    capsys.readouterr()  # the fixtures live across examples: start each one with empty streams
    # as the interpreter's own stderr does, a lone surrogate (a non-UTF-8 file name) is written
    # as an escape; pytest's capture stream would raise instead
    sys.stderr.reconfigure(errors="backslashreplace")
    try:
        code = main(argv)
    except Reached:
        event("reached the runner")
        return
    except SystemExit as exit_:  # argparse: --help, --version, or a usage error
        code = exit_.code
    out, err = capsys.readouterr()
    event(f"exit {code}")
    if code == 0:  # --dry-run or --help printed what was asked
        assert not err.strip() or "error" not in err, err
        return
    assert code == 2, (argv, code, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "error" in lines[0], (argv, err)
    assert "Traceback" not in err


def value_arguments():
    """(command words, the name an error gives, the arguments before the value) of every flag that takes
    a value and every positional, in every command and verb of the command line."""
    import argparse

    from ddpbench.cli.program import build_parser

    def walk(parser, words):
        before = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, [*words, name])
            elif action.option_strings and action.nargs != 0:
                yield words, action.option_strings[-1], [action.option_strings[-1]]
            elif not action.option_strings:
                yield words, action.metavar or action.dest, list(before)
                before.append("x")
    return list(walk(build_parser(), []))


VALUE_ARGUMENTS = value_arguments()
plain = st.text(string.ascii_letters + string.digits + "%:.,/-_ é<>\udcff", max_size=8)
lead = plain.filter(lambda text: not text.startswith("-"))  # not read as a flag
refused = st.characters(categories=["Cc", "Zl", "Zp"])


def test_the_arguments_of_every_command_are_found():
    commands = {words[0] for words, _, _ in VALUE_ARGUMENTS}
    assert len(VALUE_ARGUMENTS) >= 100 and {"sweep", "compare", "report", "history", "ab", "whatif"} <= commands
    assert (["compare"], "--fail-on", ["--fail-on"]) in VALUE_ARGUMENTS


@settings(max_examples=examples(600), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argument=st.sampled_from(VALUE_ARGUMENTS), head=lead, char=refused, tail=plain, joined=st.booleans())
def test_a_control_character_in_any_argument_is_refused_naming_its_flag(argument, head, char, tail, joined, capsys):
    """``--fail-on $'median:\\n5%'`` was read as ``median:5%``: now a newline, a tab, ESC, NUL, DEL, a C1
    control or a line separator in any value, of any flag or positional of any command, is one line
    naming it, exit 2, before anything runs."""
    words, name, before = argument
    value = head + char + tail
    if joined and before and before[-1].startswith("--"):  # --flag=VALUE
        argv = [*words, *before[:-1], f"{before[-1]}={value}"]
    else:
        argv = [*words, *before, value]
    capsys.readouterr()
    sys.stderr.reconfigure(errors="backslashreplace")
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2, (argv, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"command line: {name}: " in lines[0] and "holds a" in lines[0], (argv, err)
    assert ascii(char) in lines[0], (argv, err)


@settings(max_examples=examples(300), deadline=None)
@given(argument=st.sampled_from(VALUE_ARGUMENTS), value=lead)
def test_a_value_without_one_is_not_refused_for_its_characters(argument, value):
    """é, <, > and a non-UTF-8 file name's lone surrogates go through to the flag's own checks."""
    from ddpbench.cli.program import build_parser
    from ddpbench.errors import InputError

    words, name, before = argument
    try:
        build_parser().parse_args([*words, *before, value])
    except SystemExit:  # argparse's own refusal (a missing flag, a bad choice), said by its error()
        pass
    except InputError as err:  # a flag's type: an empty folder
        assert "holds a" not in str(err), err
