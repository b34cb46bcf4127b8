"""A trace at the moment it matters: every connected rank asked once an alarm is raised, the traces bounded in
number, the reader started only once every rank asked has written its trace, and what was never written said."""

import os
from dataclasses import dataclass, field
from pathlib import Path

from ddpbench.watch import traced
from ddpbench.watch.traced import MAX_TRACES, TRACE_AFTER, TRACE_STEPS, Traces, answer_of


@dataclass
class State:
    last_step: int
    traced: list = field(default_factory=list)


class FakeCollector:
    """The collector as Traces sees it: its ranks, the requests it sent, a snapshot of the ranks."""

    def __init__(self, steps):
        self.ranks = {rank: State(step) for rank, step in steps.items()}
        self.sent = []

    def request(self, **asked):
        self.sent.append(asked)
        return sorted(self.ranks)

    def snapshot(self):
        return type("Snapshot", (), {"ranks": self.ranks})()


class FakeReader:
    def __init__(self, code=0):
        self.code, self.done, self.killed = code, False, False

    def poll(self):
        return self.code if self.done else None

    @property
    def returncode(self):
        return self.code

    def kill(self):
        self.killed = True


def test_every_rank_is_asked_for_the_same_steps_past_the_furthest_one(tmp_path):
    collector = FakeCollector({0: 410, 1: 433})
    traces = Traces(tmp_path, collector, print)
    folder = traces.ask(1)
    assert folder == (tmp_path / "traces" / "alarm-1").resolve()
    assert collector.sent == [{"trace": {"from_step": 433 + TRACE_AFTER, "steps": TRACE_STEPS,
                                         "folder": str(folder)}}]


def test_a_run_takes_at_most_its_traces(tmp_path):
    traces = Traces(tmp_path, FakeCollector({0: 1}), print)
    folders = [traces.ask(n) for n in range(1, MAX_TRACES + 3)]
    assert all(folders[:MAX_TRACES]) and folders[MAX_TRACES:] == [None, None]


def test_the_reader_starts_once_every_rank_asked_wrote_its_trace_and_its_answer_is_said(tmp_path, monkeypatch):
    started, said = [], []
    monkeypatch.setattr(traced, "read", lambda folder: started.append(folder) or FakeReader())
    collector = FakeCollector({0: 10, 1: 10})
    traces = Traces(tmp_path, collector, said.append)
    folder = traces.ask(1)
    collector.ranks[0].traced.append(str(folder / "rank0.json.gz"))
    collector.ranks[1].traced.append(str(tmp_path / "elsewhere" / "rank1.json.gz"))  # another trace's file
    traces.poll()
    assert started == []
    collector.ranks[1].traced.append(str(folder / "rank1.json.gz"))
    traces.poll()
    assert started == [folder]
    traces.asked[0]["reader"].done = True
    traces.poll()
    assert said == [f"alarm 1's trace, 2 ranks: {answer_of(folder) / 'index.html'}"]


def test_a_trace_never_written_or_still_being_read_is_said_as_the_run_ends(tmp_path, monkeypatch):
    said = []
    reader = FakeReader()
    monkeypatch.setattr(traced, "read", lambda folder: reader)
    collector = FakeCollector({0: 10})
    traces = Traces(tmp_path, collector, said.append)
    unread = traces.ask(1)
    collector.ranks[0].traced.append(str(unread / "rank0.json.gz"))
    traces.ask(2)  # rank 0 never writes this one
    traces.finish(wait_s=0.2)
    assert reader.killed
    assert any(line.startswith("alarm 1's trace was still being read after 0.2 s") for line in said)
    assert any(line.startswith("alarm 2's trace was not written by every rank asked") for line in said)


def test_the_answer_lies_beside_the_traces_never_among_them():
    assert answer_of(Path("/w/traces/alarm-3")) == Path("/w/traces/alarm-3-answer")


def test_the_reader_runs_owned_in_a_session_of_its_own_at_the_lowest_priority(tmp_path, monkeypatch):
    started, lowered = [], []

    class Started:  # the reader's process as started
        pid = 4242

        def __init__(self, command, **kwargs):
            started.append((command, kwargs))

    monkeypatch.setattr(traced.subprocess, "Popen", Started)
    monkeypatch.setattr(traced, "lowest", lowered.append)
    (tmp_path / "alarm-1").mkdir()
    traced.read(tmp_path / "alarm-1")
    (command, kwargs), = started
    assert command[1:3] == ["-m", "ddpbench.owner"] and command[4:6] == ["ddpbench", "traces"]
    assert command[3] == str(os.getpid())  # it dies with the watch
    assert kwargs["start_new_session"] and lowered == [4242]


def test_lowest_sets_the_process_and_its_session_s_group_where_the_kernel_has_one(monkeypatch):
    set_to, written = [], {}

    class Group:
        def __init__(self, path, mode):
            self.path = path

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def write(self, text):
            written[self.path] = text

    monkeypatch.setattr(traced.os, "setpriority", lambda which, pid, value: set_to.append((which, pid, value)))
    monkeypatch.setattr("builtins.open", Group)
    traced.lowest(4242)
    assert set_to == [(traced.os.PRIO_PROCESS, 4242, 19)] and traced.LOWEST == 19
    assert written == {"/proc/4242/autogroup": "19"}


def test_lowest_is_quiet_where_the_process_ended_or_the_kernel_has_no_groups(monkeypatch):
    def gone(which, pid, value):
        raise ProcessLookupError(pid)

    monkeypatch.setattr(traced.os, "setpriority", gone)
    traced.lowest(4242)  # ended already: nothing to lower
    monkeypatch.setattr(traced.os, "setpriority", lambda *args: None)
    monkeypatch.setattr("builtins.open", lambda *args: (_ for _ in ()).throw(FileNotFoundError(args[0])))
    traced.lowest(4242)  # no /proc/PID/autogroup: the nice value is all there is
