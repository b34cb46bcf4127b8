"""benchmarks/watch_replay.py: a kept run's stream fed again raises what the alarms raised as it came, and each
kept run is matched to what was planted in it (its run.json, or the benchmark's console lines)."""

import json
import os

import pytest

from ddpbench.testing.scripts import load_benchmark
from ddpbench.testing.watched import STEPS, ddp_run, feed
from ddpbench.watch.alarms import PHASE, SLOWER, STRAGGLER, AlarmFile
from ddpbench.watch.stream import STREAM_COLUMNS, STREAM_FILE, lines

bench = load_benchmark("watch_replay")
BATCH = 25


def kept_run(folder, rows, received_from=0.0):
    """A kept run's watch folder: the stream of ``rows`` as :func:`feed` sent them, each batch received in turn
    (rank 0's, then rank 1's, a second apart), and the alarms raised as it came."""
    sent = {}
    raised = feed(rows, sent=sent)
    (folder / "watch").mkdir(parents=True)
    stream = ",".join(STREAM_COLUMNS) + "\n"
    for number, start in enumerate(range(0, STEPS, BATCH)):
        for rank in (0, 1):
            stream += lines(rank, "vm", sent[rank][start:start + BATCH], received_from + number)
    (folder / "watch" / STREAM_FILE).write_text(stream)
    written = AlarmFile(folder / "watch")
    for alarm in raised:
        written.write((*alarm.row(), ""))
    written.close()
    return raised


@pytest.mark.parametrize("change, kind", [({"slow_rank": 1}, STRAGGLER),
                                          ({"slow_phase": {"data_ms": 4.0, "compute_bwd": 0.625}}, PHASE),
                                          ({"slow_phase": "data_ms", "factor": 4.0}, SLOWER)])
def test_a_stream_fed_again_raises_what_it_raised_as_it_came(tmp_path, change, kind):
    raised = kept_run(tmp_path / "run", ddp_run(3, **change))
    assert kind in {a.kind for a in raised}
    again = bench.replay(tmp_path / "run" / "watch" / STREAM_FILE)
    assert [(a["step"], a["kind"], a["rank"], a["phase"]) for a in again] == [
        (str(a.step), a.kind, "" if a.rank is None else str(a.rank), a.phase or "") for a in raised]


def test_each_kept_run_is_matched_to_what_was_planted_in_it(tmp_path, capsys):
    kept = tmp_path / "kept"
    for name, onset in (("lm-data-a", 700), ("lm-data-b", 650)):
        (kept / name / "watch").mkdir(parents=True)
        (kept / name / "watch" / STREAM_FILE).write_text("")
        os.utime(kept / name / "watch" / STREAM_FILE, (onset, onset))  # b's stream written first
    log = tmp_path / "kept.log"
    log.write_text("run 1: lm data onset 812: 1 alarm(s), slowest spell 1.2x\nrun 2: lm data onset 455: 0 alarm(s)\n")
    assert [(r["onset"], p.name) for r, p in bench.planted(kept, log)] == [(812, "lm-data-b"), (455, "lm-data-a")]
    with pytest.raises(SystemExit) as ended:
        bench.planted(kept, None)
    assert ended.value.code == 2 and "without run.json" in capsys.readouterr().err
    for name, onset in (("lm-data-a", 700), ("lm-data-b", 650)):
        (kept / name / "run.json").write_text(json.dumps({"script": "lm", "condition": "data", "onset": onset}))
    assert [(r["onset"], p.name) for r, p in bench.planted(kept, None)] == [(700, "lm-data-a"), (650, "lm-data-b")]
    log.write_text("run 1: lm data onset 812: 1 alarm(s)\n")
    with pytest.raises(SystemExit) as ended:
        bench.planted(kept, log)
    assert ended.value.code == 2 and "1 lm data run(s), but 2 kept" in capsys.readouterr().err


def test_the_table_counts_replayed_and_as_run_and_names_each_run_that_changed(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "machine", lambda root: "this machine")  # its commit is git's, another process
    kept = tmp_path / "kept"
    for name, onset, change in (("cnn-data-x", 700, {"slow_phase": {"data_ms": 4.0, "compute_bwd": 0.625}}),
                                ("cnn-unchanged-y", 600, {})):
        kept_run(kept / name, ddp_run(5, **change))
        (kept / name / "run.json").write_text(json.dumps({"script": "cnn", "condition": name.split("-")[1],
                                                          "onset": onset}))
    alarms = kept / "cnn-data-x" / "watch" / "alarms.csv"  # as run: nothing was called
    alarms.write_text(alarms.read_text().splitlines()[0] + "\n")
    out = tmp_path / "replay.md"
    bench.main([str(kept), "--out", str(out)])
    table = out.read_text()
    assert "| cnn | data | 1 | 1 (0) | 0 (0) |" in table and "| cnn | unchanged | 1 | - | 0 (0) |" in table
    assert "- kept/cnn-data-x (cnn, data from step 700): step " in table and "phase data_ms" in table
    assert "cnn-unchanged-y (" not in table
