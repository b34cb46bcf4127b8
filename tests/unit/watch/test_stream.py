"""The stream of ``ddpbench watch`` (steps.csv): written into a file of its own only, never through a
link or after a file it did not create; a full disk stops it at a whole row, said in one line with
what was not written (test_collector.py: the collector goes on collecting); its cells read back exactly."""

from __future__ import annotations

import math

import pytest

from ddpbench.errors import InputError
from ddpbench.watch import stream as stream_module
from ddpbench.watch.stream import STREAM_FILE, Stream, cell, lines


def test_a_linked_stream_is_refused_and_what_it_names_untouched(tmp_path):
    elsewhere = tmp_path / "elsewhere.csv"
    elsewhere.write_text("someone's\n")
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / STREAM_FILE).symlink_to(elsewhere)
    with pytest.raises(InputError, match=r"--out: .*steps.csv is a symbolic link; the watch writes its stream only"):
        Stream(tmp_path / "w")
    (tmp_path / "dangling").mkdir()
    (tmp_path / "dangling" / STREAM_FILE).symlink_to(tmp_path / "nowhere.csv")
    with pytest.raises(InputError, match="is a symbolic link"):
        Stream(tmp_path / "dangling")
    (tmp_path / "linked").symlink_to(tmp_path / "w")  # the folder itself a link
    with pytest.raises(InputError, match="linked is a symbolic link"):
        Stream(tmp_path / "linked")
    assert elsewhere.read_text() == "someone's\n" and not (tmp_path / "nowhere.csv").exists()


def test_a_stream_it_did_not_create_is_refused_and_kept(tmp_path):
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / STREAM_FILE).write_text("rank,step\n0,1\n")
    with pytest.raises(InputError) as refused:
        Stream(tmp_path / "w")
    assert str(refused.value) == (f"command line: --out: {tmp_path / 'w' / STREAM_FILE} is there already, and the "
                                  "watch never writes over or after a file it did not create: give a new folder")
    assert (tmp_path / "w" / STREAM_FILE).read_text() == "rank,step\n0,1\n"
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match="is a file; give a folder"):
        Stream(tmp_path / "file")


def test_the_cells_read_back_exactly():
    rows = [(1, 1.7e9 + 1 / 3, 0.1 + 0.2, math.nan, -0.0, 5e-324, 1.7976931348623157e308, math.inf)]
    text = lines(12, "a,b", rows, 1.5e9 + 0.25)
    assert text == (f"12,1,{1.7e9 + 1 / 3!r},{0.1 + 0.2!r},,-0.0,5e-324,1.7976931348623157e+308,inf,"
                    '"a,b",1500000000.25\n')
    assert [float(c) for c in text.split(",")[2:4]] == [1.7e9 + 1 / 3, 0.1 + 0.2]
    assert cell(None) == "" and cell("n1") == "n1" and cell('say "x"') == '"say ""x"""' and cell("a\nb") == '"a\nb"'


def test_close_syncs_once_and_each_batch_is_one_write(tmp_path, monkeypatch):
    writes = []
    real = stream_module.append_all
    monkeypatch.setattr(stream_module, "append_all", lambda fd, data: (writes.append(data), real(fd, data)))
    stream = Stream(tmp_path / "w")
    stream.rows(0, "h", [(step, 1.0, 2.0, *[math.nan] * 5) for step in (1, 2, 3)], 1.0)
    stream.rows(1, "h", [(step, 1.0, 2.0, *[math.nan] * 5) for step in (1, 2)], 2.0)
    assert len(writes) == 3 and writes[1].count(b"\n") == 3  # the header, then a write a batch
    assert stream.path.read_text().count("\n") == 6  # in the file before it is closed: nothing buffered
    stream.close()
    stream.close()
    assert (stream.written, stream.unwritten, stream.problem) == (5, 0, None)
