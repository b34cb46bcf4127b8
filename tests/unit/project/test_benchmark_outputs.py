"""A benchmark writes only where it is asked (benchmarks/written.py): each script's ``--out`` (and every other file
it is told to write) given a symbolic link, a folder or, for a note marked with the script's header, a file of
someone else's, is refused in one line with exit code 2 by the script's own ``main`` as a user runs it, before
it measures anything, and the file is left as it was."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from ddpbench.testing import ROOT
from ddpbench.testing.scripts import load_benchmark

#: each script that writes a file it is given, the flags naming such files, and the arguments it needs besides
#: (a folder to read): found again from the scripts below, so a new one is not left out
OUT = ("--out",)
TOLD = {"budget_check": (OUT, ["reports/examples/trace-cpu"]), "checker_mutations": (OUT, []),
        "interval_calibration": (("--out", "--independent"), []), "machine_drift": (OUT, []), "mutation": (OUT, []),
        "scale": (OUT, []),
        "script_corpus": (OUT, []), "suite_durations": (("--out", "--costs", "--json"), []), "traces": (OUT, []),
        "watch_alarms": (OUT, []), "watch_collector": (OUT, []), "watch_cost": (OUT, []),
        "watch_replay": (OUT, ["benchmarks"]),
        "watch_cost_interleaved": (OUT, []), "whatif_bands": (OUT, []), "whatif_holdout": (OUT, []),
        "whatif_loso": (OUT, [])}


def test_every_benchmark_that_writes_a_file_it_is_given_goes_through_written():
    writers = {path.stem for path in (ROOT / "benchmarks").glob("*.py")
               if re.search(r"add_argument\(\s*\"--(out|costs|independent)\", type=Path",
                            path.read_text(encoding="utf-8"))}
    # --out names a results folder a sweep fills (or the example folder the script makes)
    folders = {"consistency", "exposed_check", "soak", "recovery", "fault_suite", "history_example"}
    assert writers - folders == set(TOLD)
    for name in TOLD:
        assert re.search(r"^from written import check_out, (emit|write_out)\b", (ROOT / "benchmarks" / f"{name}.py")
                         .read_text(), flags=re.M), name


def refused(name, argv, monkeypatch, capsys):
    script = load_benchmark(name)

    def started(*args, **kwargs):  # a refusal comes before the benchmark starts anything
        raise AssertionError(f"{name} started {args[:1]} before refusing")

    monkeypatch.setattr(subprocess, "run", started)
    monkeypatch.setattr(subprocess, "Popen", started)
    monkeypatch.setattr(sys, "argv", [f"benchmarks/{name}.py", *argv])
    with pytest.raises(SystemExit) as ended:
        script.main(*([argv] if "argv" in script.main.__code__.co_varnames[:script.main.__code__.co_argcount]
                      else []))
    said = capsys.readouterr().err.strip()
    return ended.value.code, said


@pytest.mark.parametrize("name", sorted(TOLD))
def test_a_link_a_folder_or_someone_else_s_note_is_refused_in_one_line_before_the_run(name, tmp_path, monkeypatch,
                                                                                        capsys):
    flags, besides = TOLD[name]
    besides = [str(ROOT / a) for a in besides]
    theirs = tmp_path / "theirs.md"
    theirs.write_text("my own notes\n")
    (tmp_path / "link.md").symlink_to(theirs)
    (tmp_path / "folder.md").mkdir()
    header = getattr(load_benchmark(name), "HEADER", None)
    for flag in flags:
        given = [(tmp_path / "link.md", "is a symbolic link"), (tmp_path / "folder.md", "is not a file")]
        if isinstance(header, str) and flag == "--out":
            given.append((theirs, "holds what this script did not write"))
        for path, why in given:
            extra = ["--results", str(tmp_path)] if flag == "--independent" else []
            code, said = refused(name, [*besides, *extra, flag, str(path)], monkeypatch, capsys)
            assert code == 2 and said == f"{flag}: {path} {why}" + said.split(why, 1)[1], (name, flag, said)
            assert "\n" not in said and "give" in said
            assert theirs.read_text() == "my own notes\n"


def test_the_write_checks_again_and_never_follows_a_link_that_appeared_since(tmp_path, capsys):
    written = load_benchmark("written")
    ours = tmp_path / "table.md"
    written.write_out(ours, "<!-- written by benchmarks/x.py -->\nfirst\n", "<!-- written by benchmarks/x.py -->")
    written.write_out(ours, "<!-- written by benchmarks/x.py -->\nsecond\n", "<!-- written by benchmarks/x.py -->")
    assert ours.read_text().endswith("second\n")  # its own file, written over
    theirs = tmp_path / "theirs.txt"
    theirs.write_text("mine")
    ours.unlink()
    ours.symlink_to(theirs)  # a link where the file was, between the run's check and its write
    with pytest.raises(SystemExit) as ended:
        written.write_out(ours, "table\n")
    assert ended.value.code == 2 and "symbolic link" in capsys.readouterr().err
    assert theirs.read_text() == "mine"
