"""benchmarks/watch_alarms.py runs as written: a few short watched runs of each condition, and its table."""

import math
import os
import signal
import subprocess
import sys
import uuid

import pytest

from ddpbench.testing import MARK, ROOT, marked, wait_for
from ddpbench.testing.scripts import load_benchmark

bench = load_benchmark("watch_alarms")


def test_a_short_run_of_each_condition_makes_its_table(tmp_path):
    out = tmp_path / "alarms.md"
    bench.main(["--runs", "1", "--steps", "60", "--onset-from", "20", "--onset-to", "30", "--scripts", "lm",
                "--out", str(out)])
    table = out.read_text()
    assert table.startswith(bench.HEADER)
    for condition in bench.CONDITIONS:
        assert f"| lm | {condition} | 1 |" in table


def test_a_call_is_in_time_only_for_the_planted_rank_or_phase():
    straggler = [{"kind": "straggler", "rank": "0", "step": "500"}, {"kind": "straggler", "rank": "1", "step": "700"}]
    assert bench.in_time("straggler", straggler, 450) == 250
    assert bench.in_time("straggler", straggler, 350) is None  # 350 steps late
    data = [{"kind": "slower", "phase": "", "step": "500"}, {"kind": "slower", "phase": "data_ms", "step": "600"}]
    assert bench.in_time("data", data, 450) == 150
    assert bench.in_time("unchanged", data, 450) is None


def test_false_or_wrong_alarms_are_every_unchanged_one_and_each_call_of_what_was_not_planted():
    early = {"kind": "slower", "phase": "", "rank": "", "step": "300"}
    other_rank = {"kind": "straggler", "phase": "", "rank": "0", "step": "700"}
    other_phase = {"kind": "slower", "phase": "optimizer_ms", "rank": "", "step": "700"}
    right = [{"kind": "straggler", "phase": "", "rank": "1", "step": "700"},
             {"kind": "slower", "phase": "data_ms", "rank": "", "step": "700"}]
    assert bench.wrong("unchanged", right, 450) == right
    assert bench.wrong("straggler", [early, other_rank, *right], 450) == [early, other_rank]
    assert bench.wrong("data", [other_phase, *right], 450) == [other_phase]
    assert bench.wrong("straggler", [other_phase], 450) == []  # the job's slowdown a straggler makes is its phase's


def test_a_busy_machine_is_called_by_its_cause_and_named_elsewhere_is_wrong():
    busy = {"kind": "slower", "phase": "", "rank": "", "step": "700", "cause": bench.BUSY}
    busy_rank = {"kind": "straggler", "phase": "", "rank": "0", "step": "650", "cause": bench.BUSY}
    uncaused = {"kind": "slower", "phase": "forward_ms", "rank": "", "step": "700", "cause": ""}
    assert bench.in_time("busy", [uncaused, busy, busy_rank], 450) == 200
    assert bench.in_time("busy", [uncaused], 450) is None
    assert bench.wrong("busy", [uncaused, busy, busy_rank, {**busy, "step": "300"}], 450) == [
        uncaused, {**busy, "step": "300"}]
    straggler = {"kind": "straggler", "phase": "", "rank": "1", "step": "700", "cause": bench.BUSY}
    assert bench.wrong("straggler", [straggler], 450) == [straggler]  # a sleep planted: no CPU was waited for
    assert bench.wrong("straggler", [{**straggler, "cause": ""}], 450) == []


def test_sigterm_of_the_benchmark_ends_the_watched_run_under_way(tmp_path):
    """As a user stops it (SIGTERM, as ``kill`` sends): the watch, its torchrun and its ranks end with it, and no
    table is written."""
    mark, out = uuid.uuid4().hex, tmp_path / "alarms.md"
    bench_run = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "watch_alarms.py"), "--runs", "1",
                                  "--steps", "100000", "--scripts", "lm", "--out", str(out)],
                                 env={**os.environ, MARK: mark}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: sum("train_lm.py" in " ".join(p.cmdline()) for p in marked(mark)) >= 2, 120, "two ranks")
        bench_run.send_signal(signal.SIGTERM)
        bench_run.wait(60)
        wait_for(lambda: not marked(mark), 40, "every process of the benchmark gone")
    finally:
        for proc in marked(mark):
            proc.kill()
    assert bench_run.returncode != 0 and not out.exists()


def test_a_run_s_slowest_spell_is_found_where_it_ended(tmp_path):
    """The job's step is its slowest rank's; a spell is the median of 50 steps in a row against the baseline's."""
    stream = tmp_path / "steps.csv"
    rows = ["rank,step,step_ms"]
    for step in range(1500):
        for rank in (0, 1):
            slow = 600 <= step < 680 and rank == 1  # only rank 1 slower: the job waits for it
            rows.append(f"{rank},{step},{(30.0 if slow else 20.0 - rank) + (step % 3) * 0.1}")
    stream.write_text("\n".join(rows) + "\n")
    ratio, ended = bench.slowest_spell(stream)
    assert ratio == pytest.approx(30.1 / 20.1, rel=0.01)
    assert 625 <= ended <= 704  # the 50 steps' median is the spell's from its 26th step to 25 steps past its end


def test_a_short_run_has_no_spell_to_measure(tmp_path):
    stream = tmp_path / "steps.csv"
    stream.write_text("rank,step,step_ms\n" + "".join(f"0,{s},20.0\n" for s in range(40)))
    ratio, ended = bench.slowest_spell(stream)
    assert math.isnan(ratio) and ended == -1


def test_an_existing_keep_folder_or_an_unknown_condition_is_refused_in_one_line(tmp_path, capsys):
    for argv, said in ((["--keep", str(tmp_path)], f"--keep: {tmp_path} exists; give a new folder"),
                       (["--conditions", "unchanged,slow"], "--conditions: 'unchanged,slow': each is one of")):
        with pytest.raises(SystemExit) as ended:
            bench.main(argv)
        err = capsys.readouterr().err.strip()
        assert ended.value.code == 2 and len(err.splitlines()) == 1 and err.startswith(said)


def traced_run(tmp_path, ranks=(0, 1), answer="", page=True):
    """A watch folder whose alarm-1 trace holds ``ranks``' files and whose answer's console says ``answer``."""
    folder = tmp_path / "watch" / "traces" / "alarm-1"
    folder.mkdir(parents=True)
    for rank in ranks:
        (folder / f"rank{rank}.json.gz").write_bytes(b"")
    if answer is not None:
        (folder.parent / "alarm-1-answer.txt").write_text(answer)
    if page:
        (folder.parent / "alarm-1-answer").mkdir()
        (folder.parent / "alarm-1-answer" / "index.html").write_text("<html></html>")
    return tmp_path / "watch"


WAITED = ("change: waiting for the slowest rank, 5.77 ms a step (13.9 %): even out the ranks: the others wait for "
          "rank {rank}, whose compute ends last in 8 of 8 steps\n")
INPUT = "change: idle: waiting for the input pipeline, 9.10 ms a step (24.0 %): more DataLoader workers\n"
BETWEEN = "change: idle: host between operators, 9.95 ms a step (25.7 %): the host is slow between operators\n"


def test_a_call_s_trace_counts_only_where_both_ranks_wrote_and_its_answer_names_what_the_alarm_named(tmp_path):
    straggler = {"kind": "straggler", "rank": "1", "phase": "", "step": "700", "trace": "traces/alarm-1"}
    assert bench.traced("straggler", straggler, traced_run(tmp_path / "a", answer=WAITED.format(rank=1))) == "same"
    assert bench.traced("straggler", straggler, traced_run(tmp_path / "b", answer=WAITED.format(rank=0))) == "other"
    assert bench.traced("straggler", straggler, traced_run(tmp_path / "c", answer=BETWEEN)) == "other"
    assert bench.traced("straggler", straggler, traced_run(tmp_path / "d", ranks=(0,),
                                                           answer=WAITED.format(rank=1))) == "none"
    assert bench.traced("straggler", straggler, traced_run(tmp_path / "e", answer=None)) == "none"
    assert bench.traced("straggler", straggler, traced_run(tmp_path / "f", answer=WAITED.format(rank=1),
                                                           page=False)) == "none"
    assert bench.traced("straggler", {**straggler, "trace": ""}, tmp_path / "a" / "watch") == "none"
    data = {"kind": "slower", "rank": "", "phase": "data_ms", "step": "700", "trace": "traces/alarm-1"}
    assert bench.traced("data", data, traced_run(tmp_path / "g", answer=BETWEEN + INPUT)) == "same"
    assert bench.traced("data", data, traced_run(tmp_path / "h", answer=BETWEEN)) == "other"
    assert bench.traced("data", data, traced_run(tmp_path / "i", answer="the input pipeline is fine\n")) == "other"
    assert bench.traced("data", None, tmp_path) is None  # no call in time
    assert bench.traced("busy", {**data, "cause": bench.BUSY}, tmp_path / "g" / "watch") is None  # nothing to name


def test_the_trace_cell_counts_the_calls_that_have_something_to_name():
    assert bench.trace_cell(["same", "other", "none", None, "same"]) == "2 of 4 (1, 1)"
    assert bench.trace_cell([None, None]) == "-"


def test_the_calling_alarm_is_the_first_in_time():
    straggler = [{"kind": "straggler", "rank": "1", "step": "800"}, {"kind": "straggler", "rank": "1", "step": "650"},
                 {"kind": "straggler", "rank": "0", "step": "600"}]
    assert bench.calling("straggler", straggler, 450) == straggler[1]
    assert bench.calling("straggler", straggler, 100) is None  # both later than 300 steps
    assert bench.calling("unchanged", straggler, 450) is None
