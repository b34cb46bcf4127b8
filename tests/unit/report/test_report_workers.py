"""What the report process takes back from its helper (ddpbench.report.workers), without starting one."""

import pickle

from ddpbench.report import workers
from ddpbench.report.page import Section, html
from ddpbench.report.workers import CHILD, FREE, PARENT, Helper


def _sections(count: int):
    return [lambda ctx, n=n: Section(f"part {n}", html("<p>{{ n }}</p>", n=n)) for n in range(count)]


def test_sections_handed_back_up_to_a_record_cut_mid_write():
    helper = Helper(_sections(4), first=(), call=lambda fn, ctx: fn(ctx))
    try:
        for index in (3, 2):
            helper._hand_back(index, helper.sections[index](None))
        cut = pickle.dumps((1, helper.sections[1](None)))
        helper.results.write(len(cut).to_bytes(8, "little") + cut[: len(cut) // 2])  # died writing its third
        back = helper._handed_back()
        assert sorted(back) == [2, 3]
        assert back[3].title == "part 3" and str(back[2].html) == "<p>2</p>"
    finally:
        helper.results.close()
        helper.context.close()


def test_a_section_is_claimed_once_the_helper_takes_the_analysis_first_then_from_the_bottom():
    sections = _sections(5)
    helper = Helper(sections, first=(sections[1], sections[4]), call=lambda fn, ctx: fn(ctx))
    try:
        assert helper.order == [1, 4, 3, 2, 0]
        assert helper.parent_order == [0, 2, 3, 1, 4]
        assert helper._claim(0, PARENT) and not helper._claim(0, CHILD)
        assert helper._claim(3, CHILD) and not helper._claim(3, PARENT)
        assert list(helper.claims[:5]) == [PARENT, FREE, FREE, CHILD, FREE]
    finally:
        helper.results.close()
        helper.context.close()


def test_the_folder_is_handed_over_once_however_often_it_is_sent():
    """The sweep hands the folder over before it computes the console's verdict, then writes the page
    (which sends it again): the helper reads the first, and only, copy."""
    import os

    helper = Helper(_sections(2), first=(), call=lambda fn, ctx: fn(ctx))
    feed_read, helper.feed = os.pipe()
    try:
        helper.send({"folder": 1})
        helper.send({"folder": 2})
        assert helper.feed is None and os.read(feed_read, 8) == b"!"
        helper.context.seek(0)
        assert pickle.load(helper.context) == {"folder": 1} and helper.context.read() == b""
    finally:
        os.close(feed_read)
        helper.results.close()
        helper.context.close()


def test_the_command_asks_for_a_helper_where_a_cpu_is_idle_or_when_told(tmp_path, monkeypatch):
    counts = tmp_path / "loadavg"
    monkeypatch.setattr(workers, "LOADAVG", str(counts))
    monkeypatch.setattr(workers, "usable_cpus", lambda: 2)
    monkeypatch.delenv("DDPBENCH_REPORT_HELPER", raising=False)
    counts.write_text("0.10 0.20 0.30 1/180 4242\n")  # this process alone runs
    assert workers.spare_cpu() and workers.wanted()
    counts.write_text("3.10 2.20 1.30 2/180 4242\n")  # another process runs beside it: no idle CPU
    assert not workers.spare_cpu() and not workers.wanted()
    monkeypatch.setenv("DDPBENCH_REPORT_HELPER", "1")
    assert workers.wanted()
    monkeypatch.setenv("DDPBENCH_REPORT_HELPER", "0")
    counts.write_text("0.10 0.20 0.30 1/180 4242\n")
    assert not workers.wanted()
