"""--wait and --force say what they do for the command they are a flag of
(:func:`ddpbench.cli.shared.folders.add_folder_flags`): a sweep's waits for another writer of its results
folder; traces', a short writer's, says how long it waits without --wait and whose files --force
replaces, and speaks of no sweep writing its folder; nor does any other flag of traces."""

import argparse

import pytest

from ddpbench.cli.program import build_parser
from ddpbench.files.writing import WAIT_S

#: the commands whose results folder is a sweep's
SWEEPS = ("sweep", "run", "tune", "collectives")


def _helps(command: str) -> dict:
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return {a.option_strings[-1] if a.option_strings else a.dest: a.help or "" for a in sub.choices[command]._actions}


@pytest.mark.parametrize("command", SWEEPS)
def test_a_sweep_s_wait_names_the_writers_of_its_results_folder(command):
    helps = _helps(command)
    assert helps["--wait"].startswith("if another command is writing the output folder (sweep, run, tune or "
                                      "collectives, or a report of it), wait for it to end"), helps["--wait"]
    assert helps["--force"] == "write into an output folder that holds files ddpbench did not write"


def test_traces_flags_speak_of_traces():
    helps = _helps("traces")
    assert f"another traces, is waited for up to {WAIT_S:g} s" in helps["--wait"], helps["--wait"]
    assert "another run's traces output (only the files traces writes are replaced)" in helps["--force"]
    assert "another sweep" not in helps["--wait"]
    for flag in ("--out", "--workers", "--ray", "--before"):
        assert "sweep" not in helps[flag] and "experiment" not in helps[flag], (flag, helps[flag])
    assert "1 or more" in helps["--workers"] and "local" in helps["--ray"] and "ray://HOST:PORT" in helps["--ray"]
    assert "never a folder of traces read" in helps["--out"]
