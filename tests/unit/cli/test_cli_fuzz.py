"""Hypothesis over command lines: any arguments either reach the runner or end with exit code 2 and
one line -- never a traceback. In-process, with the runner replaced by a probe, so a valid command
line costs nothing (the real runs are tested in test_sweep.py and test_collectives.py)."""

import shutil
import signal
import string
import sys

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ddpbench.cli import main
from ddpbench.experiment.machine import Machine, oversubscribed
from ddpbench.experiment.spec import FIELDS
from ddpbench.testing import ROOT
from ddpbench.testing.fuzzing import examples

VALID = """
name = "fuzz"
[defaults]
model_size = "xs"
steps = 2
[grid]
world_size = [1, 2]
"""

#: files a user might pass: (name, bytes); "missing.toml" and "folder" are made below
FILES = {
    "valid.toml": VALID.encode(),
    "empty.toml": b"",
    "bad.toml": b"[defaults\nsteps = ",
    "latin1.toml": 'name = "caf\xe9"\n'.encode("latin-1"),
    "types.toml": b"[defaults]\nworld_size = 'two'\nbucket_cap_mb = -1\n[grid]\nsteps = []\n",
    "unknown.toml": b"[defaults]\nbogus = 1\n",
    "huge.toml": b"[defaults]\nworld_size = 100000\nbatch_size = 99999999999999999999\n",
}
PATHS = [*FILES, "missing.toml", "folder", "", "\udcff\udcfe.toml"]  # the last: a non-UTF-8 file name


class Reached(Exception):
    """The command line was valid: the runner was called."""


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return make_workdir(tmp_path_factory.mktemp("fuzz"))


def make_workdir(root):
    for name, data in FILES.items():
        (root / name).write_bytes(data)
    (root / "folder").mkdir()
    shutil.copytree(ROOT / "experiments", root / "experiments")  # the commands' default files
    return root


@pytest.fixture
def probe(monkeypatch, workdir):
    """The runner is a probe that checks what it was given and says the input was accepted."""
    machine = Machine.here()

    def run_sweep(experiment, out_dir, **kw):
        for spec in experiment.jobs:  # a world size past the cores is allowed, and flagged
            assert oversubscribed(spec, machine) == (spec.device == "cpu"
                                                     and spec.world_size * spec.threads_per_rank > machine.cores)
        raise Reached

    def run_collectives(experiment, out_dir, **kw):
        raise Reached

    monkeypatch.setattr("ddpbench.sweep.runner.run_sweep", run_sweep)
    monkeypatch.setattr("ddpbench.sweep.runner.run_collectives", run_collectives)
    monkeypatch.setattr("ddpbench.report.build.write_report", lambda *a, **k: (_ for _ in ()).throw(Reached()))
    monkeypatch.chdir(workdir)  # default output folders land here
    term = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, term)  # main() installs its own


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
def test_any_command_line_reaches_the_runner_or_gives_one_line_and_exit_2(argv, probe, capsys):
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


@pytest.mark.parametrize("argv, named", [
    (["sweep", "latin1.toml"], ["latin1.toml", "not UTF-8"]),
    (["sweep", "bad.toml"], ["bad.toml", "invalid TOML"]),
    (["sweep", "unknown.toml"], ["unknown.toml", "bogus"]),
    (["sweep", "types.toml"], ["types.toml", "world_size"]),
    (["sweep", "\udcff\udcfe.toml"], ["no such experiment file"]),
    (["run", "--world-size", "-3"], ["--world-size", "1"]),
    (["run", "--steps", "1e309"], ["--steps"]),
    (["collectives", "--sizes", "64M:1K"], ["sizes"]),
    (["compare", "missing", "folder"], ["missing", "no such folder"]),
])
def test_examples_name_the_file_or_flag_and_key(argv, named, probe, tmp_path, monkeypatch, capsys):
    # a folder of its own: the fuzz test's output folders (--out "\udcff\udcfe.toml") land in the shared one
    monkeypatch.chdir(make_workdir(tmp_path))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    for word in named:
        assert word in err.encode("utf-8", "backslashreplace").decode(), err


def test_a_world_size_past_the_cores_is_accepted_and_flagged(probe, workdir, capsys, no_gpu_here):
    """64 ranks on this machine: the job runs (the probe checks the flag), and --dry-run says so."""
    with pytest.raises(Reached):
        main(["run", "--world-size", "64", "--model-size", "xs"])
    (workdir / "big.toml").write_text('[defaults]\nmodel_size = "xs"\n[grid]\nworld_size = [1, 64]\n')
    assert main(["sweep", "big.toml", "--dry-run"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if "mlp-xs" in line]
    assert len(rows) == 2 and "oversubscribed" not in rows[0] and "oversubscribed" in rows[1]


def test_every_command_prints_its_help(capsys):
    """argparse formats help with %: a field's help that says "95 % interval" must not break it."""
    import argparse

    from ddpbench.cli.program import build_parser

    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(sub.choices) >= 10
    for command in sub.choices:
        with pytest.raises(SystemExit) as exit_:
            main([command, "--help"])
        assert exit_.value.code == 0, command
        assert "usage:" in capsys.readouterr().out
