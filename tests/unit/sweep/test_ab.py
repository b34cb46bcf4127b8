"""The A/B's own side of issue 82, without starting a side: two results folders written as the sides
write them, judged and logged (every job of either side in ``ab.json``, paired or unpaired, as strict
JSON), and a side's launches read as it stores them, while the A/B waits for its round's word."""

from __future__ import annotations

import json
import os

import pytest

from ddpbench.cli.ab import outcome_lines
from ddpbench.experiment.spec import spec_from_dict
from ddpbench.sweep.ab import LOG_FILE, Outcome, Side, SidePlan, judged, launch_line, write_log
from ddpbench.testing.records import ResultsFolder, job, result_for


def refuse(constant: str):
    raise ValueError(f"{constant} is not JSON")


def strict_load(text: str):
    """JSON as a strict parser (Node's JSON.parse) reads it: NaN, Infinity and -Infinity refused."""
    return json.loads(text, parse_constant=refuse)


def write_side(folder, jobs: list[tuple[dict, float]], rounds: int, first: int = 0) -> None:
    """A side's results folder: ``rounds`` launches of each job (spec dict, step ms), one a round, the
    rounds numbered from ``first``."""
    results = ResultsFolder(folder)
    for repeat in range(first, first + rounds):
        for spec, step_ms in jobs:
            results.launch(spec_from_dict(spec), repeat, result=result_for(spec, step_ms, repeat=repeat))


def two_files(tmp_path, rounds: int, extra_b: bool = False, first_b: int = 0):
    """Issue 82's A/B: two experiment files alike but for the ws=2 job's bucket, 25 MB against 50 MB;
    ``extra_b``: B also runs a ws=4 job that A does not; ``first_b``: B's first round."""
    alike = [(job(world_size=1), 20.0), (job(world_size=3), 12.0)]
    write_side(tmp_path / "A", [alike[0], (job(world_size=2, bucket_cap_mb=25), 15.0), alike[1]], rounds)
    write_side(tmp_path / "B", [alike[0], (job(world_size=2, bucket_cap_mb=50), 18.0), alike[1],
                                *([(job(world_size=4), 9.0)] if extra_b else [])], rounds, first_b)


def plans(tmp_path) -> list[SidePlan]:
    return [SidePlan(name, f"{name}.toml", tmp_path, str(tmp_path / f"{name}.toml")) for name in ("A", "B")]


def test_ab_json_holds_every_job_paired_or_unpaired_as_strict_json(tmp_path):
    two_files(tmp_path, rounds=6, extra_b=True)
    calls, unpaired, _ = judged(tmp_path, 0.05)
    write_log(tmp_path, plans(tmp_path), Outcome(rounds=[{"round": r} for r in range(6)], stopped="test",
                                                 calls=calls, unpaired=unpaired), seed=1)
    log = strict_load((tmp_path / LOG_FILE).read_text())
    assert [(c["world_size"], c["change"]) for c in log["calls"]] == [(1, ""), (2, "bucket 25 MB -> 50 MB"), (3, "")]
    (changed,) = [c for c in log["calls"] if c["change"]]
    assert changed["call"] == "slower" and changed["ratio"] > 1.15, changed
    assert [(u["side"], u["job"]) for u in log["unpaired"]] == [("B", "mlp-s ws=4 bucket 25 MB")]
    assert log["unpaired"][0]["why"] == "side A runs no job at ws=4"


@pytest.mark.parametrize("rounds", [1, 0])
def test_ab_json_has_null_where_a_figure_has_no_value(tmp_path, rounds):
    """Before the fifth round the interval's ends are 0 and infinity; with no round paired the ratio is
    NaN: ab.json says null, and strict JSON parsers read it (issue 82)."""
    two_files(tmp_path, rounds=1, first_b=1 - rounds)  # rounds 0: B's launch of another round than A's
    calls, unpaired, _ = judged(tmp_path, 0.05)
    assert [c.rounds for c in calls] == [rounds] * 3
    write_log(tmp_path, plans(tmp_path), Outcome(calls=calls, unpaired=unpaired), seed=None)
    text = (tmp_path / LOG_FILE).read_text()
    log = strict_load(text)
    assert log["calls"][0]["high"] is None and "Infinity" not in text and "NaN" not in text
    assert (log["calls"][0]["ratio"] is None) == (rounds == 0)


def test_a_sides_launches_are_read_as_it_stores_them_while_the_ab_waits(tmp_path):
    """The console's progress from the first launch on (issue 82): while the A/B waits for a side's word
    on its round, it reads every launch the side has stored since it last looked, each once, a line cut
    mid-write only once whole."""
    side = Side.__new__(Side)  # a side without its process: its folder and its answer pipe
    side.plan, side.folder = SidePlan("A", "a.toml", tmp_path, "a.toml"), tmp_path / "A"
    side._answers, answer_write = os.pipe()
    side._buffer, side._read_to = b"", 0
    results = ResultsFolder(side.folder)
    specs = [job(world_size=1), job(world_size=2)]
    seen: list[list[str]] = []

    def waiting():  # the side stores a launch a look; after the second, it says it is done
        now = side.stored()
        seen.append([record["spec"]["world_size"] for record in now])
        if len(seen) <= len(specs):
            spec = specs[len(seen) - 1]
            results.launch(spec_from_dict(spec), 0, result=result_for(spec, 10.0))
        if len(seen) == len(specs) + 1:
            with open(side.folder / "results.jsonl", "ab") as handle:
                handle.write(b'{"kind": "run", "key": "cut')  # a line the side is still writing
            os.write(answer_write, b"done 0\n")

    try:
        assert side.answer(10, waiting) == "done 0"
    finally:
        os.close(side._answers)
        os.close(answer_write)
    assert seen == [[], [1], [2]], seen  # the sweep record is not a launch; each launch read once
    assert side.stored() == []  # the cut line stays unread until whole
    label, status, line = launch_line(json.loads((side.folder / "results.jsonl").read_text().splitlines()[1]))
    assert (label, status) == ("mlp-s ddp ws=1 threads_per_rank=1", "ok") and line.endswith("ms/step (mean)"), line


@pytest.mark.parametrize("rounds", [0, 1, 2])
def test_the_console_names_every_job_counts_rounds_right_and_never_prints_nan(tmp_path, rounds):
    """What ``ab`` prints at its end (:func:`ddpbench.cli.ab.outcome_lines`): the changed job under what
    changed, the job only B runs as unpaired, "1 round" and "2 rounds", and no "nanx" where no round paired."""
    two_files(tmp_path, rounds=max(rounds, 1), extra_b=True, first_b=1 if rounds == 0 else 0)
    calls, unpaired, _ = judged(tmp_path, 0.05)
    outcome = Outcome(rounds=[{"round": r} for r in range(rounds)], stopped="test", calls=calls, unpaired=unpaired)
    lines = outcome_lines(outcome, "a.toml", "b.toml", tmp_path / LOG_FILE)
    text = "\n".join(lines)
    assert lines[0] == (f"A/B of b.toml (B) against a.toml (A) over {rounds} round{'' if rounds == 1 else 's'}, "
                        "interleaved; stopped: test"), lines[0]
    assert [line.split(":")[0] for line in lines[1:4]] == ["  mlp-s ws=1 bucket 25 MB",
                                                           "  mlp-s ws=2 (bucket 25 MB -> 50 MB)",
                                                           "  mlp-s ws=3 bucket 25 MB"], text
    assert lines[4:6] == ["unpaired, run in the first round only (1):",
                          "  mlp-s ws=4 bucket 25 MB: only on side B, not compared (side A runs no job at ws=4)"]
    assert "nan" not in text.lower() and "1 rounds" not in text
    if rounds == 0:
        assert "no round paired yet; a ratio needs a round in which both sides' launches of it end ok" in lines[2]
    else:
        assert lines[2] == (f"  mlp-s ws=2 (bucket 25 MB -> 50 MB): cannot tell: A 1.20x as fast as B over {rounds} "
                            f"round{'' if rounds == 1 else 's'}; no interval before the fifth round"), lines[2]
