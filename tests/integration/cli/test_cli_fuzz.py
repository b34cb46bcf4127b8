"""Hypothesis over whole command lines: any arguments either reach the runner or end with exit code 2
and one line -- never a traceback. In-process, with the runner replaced by a probe (the ``runner_probe``
fixture), so a valid command line costs nothing. The named bad inputs, a world size past the cores and
every command's help are in tests/unit/cli/test_cli_fuzz.py."""

import string
import sys

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ddpbench.cli import main
from ddpbench.experiment.spec import FIELDS
from ddpbench.testing.cli import FILES, Reached
from ddpbench.testing.fuzzing import examples

PATHS = [*FILES, "missing.toml", "folder", "", "\udcff\udcfe.toml"]  # the last: a non-UTF-8 file name


numbers = (st.integers(-10, 10) | st.integers(-(10**30), 10**30) | st.floats(allow_nan=True, allow_infinity=True)
           | st.sampled_from(["0", "1e309", "-0", "nan", "inf", "1K", "64M:1K", "1,2,x", "", "auto"]))
words = st.text(string.printable + "\udcff\u00e9<>", max_size=12)
values = numbers.map(str) | words | st.sampled_from(PATHS) | st.sampled_from(
    [*{c for f in FIELDS.values() for c in (f.metadata.get("choices") or ())}, "gloo", "nccl", "cuda", "cpu"])

SWEEP_FLAGS = ["--out", "--timeout", "--launcher", "--nodes", "--partition", "--array", "--nnodes", "--node-rank",
               "--rdzv-endpoint", "--emulate-nodes", "--link", "--link-delay-ms", "--trace-steps", "--resume", "--dry-run",
               "--no-report", "--wait", "--force"]
RUN_FLAGS = [f"--{name.replace('_', '-')}" for name in FIELDS] + ["--out", "--timeout"]
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
