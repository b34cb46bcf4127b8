"""A flag that another one given beside it leaves without effect is refused -- one line naming it, exit 2 --
rather than run as if it had not been typed (ddpbench.cli.shared.unused.UNUSED, checked in ddpbench.cli.program.main;
whatif's value-dependent ones in ddpbench.cli.whatif)."""

import argparse

import pytest

from ddpbench.cli.program import build_parser
from ddpbench.cli.shared.unused import UNUSED
from ddpbench.testing import ROOT, run_main

QUICK = ROOT / "reports" / "examples" / "quick-cpu"
#: what each command needs to parse at all
NEEDS = {"whatif": [], "sweep": [], "report": [str(QUICK)],
         "traces": [str(ROOT / "reports" / "examples" / "traces-cpu" / "traces")]}
#: a value each flag whose type takes no "1" takes
VALUES = {"--ray": "local", "--queue-wait": "1=0"}


def _parsers() -> dict:
    parser = build_parser()
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def _typed(parser, flag: str) -> list[str]:
    """``flag`` as typed with a value its parser takes."""
    action = next(a for a in parser._actions if flag in a.option_strings)
    if action.nargs == 0:
        return [flag]
    return [flag, str(action.choices[0]) if action.choices else VALUES.get(flag, "1")]


def _one_line(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, (result.returncode, result.stderr)
    return lines[0]


def test_every_flag_the_table_names_is_one_of_its_commands():
    parsers = _parsers()
    for command, rules in UNUSED.items():
        flags = {s for a in parsers[command]._actions for s in a.option_strings}
        for rule in rules:
            assert set(rule.others) <= flags, (command, rule.others)
            assert rule.flags == ("*",) or set(rule.flags) <= flags, (command, rule.flags)


def _pairs():
    """(command, the flag left without effect, the flag that leaves it so) of every rule whose other flag is given."""
    parsers = _parsers()
    for command, rules in UNUSED.items():
        for rule in rules:
            if not rule.given:
                continue
            flags = rule.flags if rule.flags != ("*",) else [
                a.option_strings[-1] for a in parsers[command]._actions
                if a.option_strings and a.dest != argparse.SUPPRESS and a.option_strings[-1] not in rule.others
                and a.help != argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)][:6]
            for flag in flags:
                yield command, flag, rule.others[0]


@pytest.mark.parametrize("command, flag, other", list(_pairs()))
def test_a_flag_another_leaves_without_effect_is_refused(command, flag, other):
    parser = _parsers()[command]
    out = run_main(command, *NEEDS[command], *_typed(parser, other), *_typed(parser, flag))
    line = _one_line(out)
    assert line.startswith(f"error: command line: {flag}: does nothing with {other} ("), line


@pytest.mark.parametrize("argv, words", [
    # the two: an argument the preset does not take, and --validate that ignored --from
    (["whatif", "--model", "mlp", "--model-args", "{ bogus = 1 }", "--compute-ms", "10"],
     "--model-args: mlp takes no arguments (got '{ bogus = 1 }'): its size is --model-size (xs, s, m, l, xl)"),
    (["whatif", "--validate", "--from", str(QUICK)], "--from: does nothing with --validate"),
    # a flag given at its default value is still typed, and still does nothing
    (["whatif", "--validate", "--model-size", "s"], "--model-size: does nothing with --validate"),
    (["whatif", "--model", "resnet50", "--model-size", "m", "--compute-ms", "10"],
     "--model-size: does nothing for resnet50: it sizes mlp, cnn, transformer"),
    (["whatif", "--nvls", "--algorithm", "ring", "--compute-ms", "10"], "--nvls: does nothing with --algorithm ring"),
    (["whatif", "--compute-ms", "10", "--leaf-nodes", "4"], "--leaf-nodes: does nothing without --oversubscription"),
    (["whatif", "--compute-ms", "10", "--batch-size", "64"],
     "--batch-size: does nothing without --price-per-device-hour or --samples or --steps or --epochs or "
     "--input-samples-per-s"),
    (["whatif", "--compute-ms", "10", "--batch-size", "64", "--train-samples", "100", "--currency", "EUR"],
     "--currency: does nothing without --price-per-device-hour"),
    (["report", str(QUICK), "--force"], "--force: does nothing without --out"),
    (["sweep", "--dry-run", "--wide"], "--wide: does nothing with --dry-run"),
    (["traces", str(ROOT / "reports" / "examples" / "traces-cpu" / "traces"), "--compare-anyway"],
     "--compare-anyway: does nothing without --before (it compares with --before's traces)"),
    (["traces", *NEEDS["traces"], "--ray", "bogus:1", "--workers", "2"], "--workers: does nothing with --ray"),
])
def test_the_named_cases_are_refused_in_one_line(argv, words):
    assert words in _one_line(run_main(*argv))


def test_the_same_flags_do_something_together():
    """The rules refuse only what does nothing: with the flag that gives it effect, each runs."""
    whatif = ["whatif", "--model", "bart-large", "--compute-ms", "10", "--world-sizes", "1,16"]
    for extra in (["--leaf-nodes", "1", "--oversubscription", "2"],
                  ["--batch-size", "64", "--train-samples", "6400", "--price-per-device-hour", "2",
                   "--currency", "EUR"],
                  ["--model-args", "{ layers = 2 }"],
                  ["--nvls", "--algorithm", "auto"]):
        out = run_main(*whatif, *extra)
        assert out.returncode == 0, (extra, out.stderr)
    # a preset's size (building it would start the workload probe's process: its check alone)
    from types import SimpleNamespace

    from ddpbench.cli.models import check_model_flags

    check_model_flags(SimpleNamespace(model="mlp", model_size="m", model_args="",
                                      flags_given=frozenset({"--model", "--model-size"})))
