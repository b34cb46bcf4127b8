"""The pieces that make a results folder safe to read, one by one (fast; the generated folders that
run every reader are in tests/processes/report/test_inert.py): validated records, side files read and files written
without following links, links confined to the folder, strings made harmless for a terminal and a
spreadsheet, figures that draw a ``$`` pair literally."""

import copy
import json
import math
import os

import pandas as pd
import pytest

from ddpbench.files.sanitize import csv_cell, csv_text, json_value, printable
from ddpbench.files.sidefiles import MAX_DEPTH, SideFileError, json_depth, read_json, replace_file
from ddpbench.report.page import DASH, html, html_table, local_href, num
from ddpbench.report.plots.common import figure, save
from ddpbench.results.schema import COLLECTIVE_COLUMNS, SCHEMA_VERSION
from ddpbench.results.store import DamagedRecord, ResultStore
from ddpbench.results.tables import load_tables
from ddpbench.results.validate import Damaged, clean_collective, clean_run, clean_sweep
from ddpbench.testing import ROOT

STEP = [0, "measure", 0, 1.0, 2.0, 3.0, 0.5, 0.5, 7.0]
COLUMNS = ["rank", "phase", "step", "data_ms", "forward_ms", "backward_ms", "comm_ms", "optimizer_ms", "step_ms"]


def run(**result):
    base = {"kind": "run", "key": "k", "repeat": 0, "spec": {}, "status": "ok", "wall_s": 1.0,
            "traces": [{"rank": 0, "path": "traces/k-r0.rank0.json.gz", "bytes": 10}],
            "result": {"params": 10, "grad_bytes": 40, "step_columns": COLUMNS, "steps": [list(STEP)],
                       "ranks": [{"rank": 0, "peak_rss_mb": 100.0, "bucket_bytes": [40], "traffic_source": "measured"}],
                       "trace_columns": ["rank", "step", "lane", "kind", "name", "start_ms", "dur_ms", "bytes"],
                       "trace": [[0, 0, "main", "phase", "forward", 0.0, 1.0, None]]}}
    base["result"].update(result)
    return base


def test_a_clean_run_record_is_kept_as_it_is():
    record = run()
    clean, notes = clean_run(copy.deepcopy(record))
    assert notes == [] and clean["traces"] == record["traces"]
    # a row stored before ready_ms existed reads it as NaN
    (row,) = clean["result"]["steps"]
    assert row[:-1] == STEP and math.isnan(row[-1])


@pytest.mark.parametrize("ready, kept", [(3.5, 3.5), (0.0, 0.0), (None, math.nan), (math.nan, math.nan)])
def test_ready_ms_is_a_step_figure_that_may_be_missing(ready, kept):
    clean, notes = clean_run(run(step_columns=[*COLUMNS, "ready_ms"], steps=[[*STEP, ready]]))
    value = clean["result"]["steps"][0][-1]
    assert notes == [] and (value == kept or (math.isnan(kept) and math.isnan(value)))


@pytest.mark.parametrize("ready, words", [(-1.0, "ready_ms: -1.0 is negative"), ("x", "ready_ms: 'x' is not a finite"),
                                          (math.inf, "ready_ms: inf is not a finite")])
def test_a_damaged_ready_ms_costs_the_record(ready, words):
    with pytest.raises(Damaged, match=r"result.steps\[0\]: " + words):
        clean_run(run(step_columns=["ready_ms", *COLUMNS], steps=[[ready, *STEP]]))  # in whatever order


@pytest.mark.parametrize("value, kept", [([0, 1], [0, 1]), (None, None), ([1, 1], None), (["a"], None), ("0", None)])
def test_a_rank_s_cpus_are_a_list_of_cpu_ids(value, kept):
    ranks = [{"rank": 0, "affinity": value, "involuntary_switches_per_step": 2.5}]
    clean, notes = clean_run(run(ranks=ranks))
    rank = clean["result"]["ranks"][0]
    assert rank["affinity"] == kept and rank["involuntary_switches_per_step"] == 2.5
    assert len(notes) == (0 if value == kept else 1)


@pytest.mark.parametrize("value", [math.nan, 0, -1.0, math.inf, "fast", None, True, [1]])
def test_a_damaged_step_time_costs_the_record_naming_the_row_and_field(value):
    row = list(STEP)
    row[-1] = value
    with pytest.raises(Damaged, match=r"result.steps\[1\]: step_ms .* is not a finite number > 0"):
        clean_run(run(steps=[list(STEP), row]))


@pytest.mark.parametrize("steps, words", [([], "empty"), ("x", "'x'"), ([[0, "measure"]], "not a row of 9"),
                                          ([[0, "bogus", *STEP[2:]]], "phase 'bogus' is not one of"),
                                          ([[0, "measure", 0, -2.0, *STEP[4:]]], "data_ms: -2.0 is negative"),
                                          ([["a", *STEP[1:]]], "'a' is not a whole number")])
def test_damaged_steps_cost_the_record(steps, words):
    with pytest.raises(Damaged, match=words.replace("(", r"\(").replace("[", r"\[")):
        clean_run(run(steps=steps))


def test_a_phase_a_rank_could_not_see_may_be_missing():
    row = [0, "measure", 0, math.nan, math.nan, math.nan, math.nan, math.nan, 7.0]  # TensorFlow's ranks
    assert clean_run(run(steps=[row]))[1] == []


def test_a_damaged_figure_costs_that_figure_with_one_line_each():
    clean, notes = clean_run(run(ranks=[{"rank": 0, "peak_rss_mb": "lots", "bucket_bytes": ["x"], "gpus": 1.5}],
                                 trace="x", params="many", compute=[]))
    rank = clean["result"]["ranks"][0]
    assert rank["peak_rss_mb"] is None and rank["bucket_bytes"] is None and rank["gpus"] is None
    assert clean["result"]["trace"] is None and clean["result"]["params"] is None and clean["result"]["compute"] is None
    assert len(notes) == 6 and any("result.ranks[0].peak_rss_mb: 'lots' is not a finite number" in n for n in notes)
    assert all("\n" not in n for n in notes)


@pytest.mark.parametrize("traces", ["x", [5], [{"rank": "a", "path": "p"}], [{"rank": 0, "path": 5}]])
def test_damaged_trace_files_are_not_linked(traces):
    record = run()
    record["traces"] = traces
    clean, notes = clean_run(record)
    assert clean["traces"] is None and len(notes) == 1 and "not linked" in notes[0]


def test_a_sweep_record_keeps_plain_values_and_complete_links():
    record = {"kind": "sweep", "sweep_id": "s", "env": {"host": "h", "gpus": ["a"], "odd": {"x": 1}, "inf": math.inf},
              "experiment": {"name": "e", "links": [{"name": "ok", "latency_us": 5, "gbit_per_s": 10}, 5,
                                                    {"name": "zero", "latency_us": 5, "gbit_per_s": 0},
                                                    {"name": "a"}]}}
    clean, notes = clean_sweep(record)
    assert clean["env"] == {"host": "h", "gpus": ["a"]}
    assert [link["name"] for link in clean["experiment"]["links"]] == ["ok"] and len(notes) == 5
    for env in ([1, 2], "x", 5):
        clean, notes = clean_sweep({"kind": "sweep", "sweep_id": "s", "env": env, "experiment": "x"})
        assert clean["env"] == {} and clean["experiment"] == {} and len(notes) == 2


def test_a_collectives_record_with_a_damaged_row_is_skipped():
    row = ["all_reduce", "out", 1024, 256, "float32", "sum", -1, 10, 5.0, 4.0, 6.0, 0.2, 0.3, 0]
    record = {"kind": "collective", "key": "c", "repeat": 0, "status": "ok", "spec": {"world_size": 2},
              "result": {"columns": list(COLLECTIVE_COLUMNS), "rows": [row]}}
    assert clean_collective(record)[1] == []
    record["result"]["rows"] = [row[:2] + ["big"] + row[3:]]
    with pytest.raises(Damaged, match=r"rows\[0\].size_bytes"):
        clean_collective(record)


# -- many damaged lines: one warning each kind, with its count -------------------------------------

def said(read):
    """What ``read()`` returns and the DamagedRecord warnings it gave, as text."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = read()
    assert all(w.category is DamagedRecord for w in caught), caught
    return value, [str(w.message) for w in caught]


def test_a_file_of_random_bytes_is_one_warning_with_the_count_of_its_lines(tmp_path):
    """20 KB of random bytes was one warning a line (72 for one such file) before its one-line error."""
    import random

    data = random.Random(83).randbytes(20_000)
    (tmp_path / "results.jsonl").write_bytes(data)
    lines = [n for n, raw in enumerate(data.split(b"\n"), start=1) if raw.strip()]
    assert len(lines) > 50
    records, warned = said(lambda: list(ResultStore(tmp_path).numbered()))
    assert records == [] and len(warned) == 1, warned
    head = ", ".join(map(str, lines[:5]))
    assert warned[0].startswith(f"{tmp_path / 'results.jsonl'}: {len(lines)} damaged records skipped "
                                f"(lines {head} and {len(lines) - 5} more; line {lines[0]}: "), warned


def test_one_damaged_line_is_named_as_it_always_was(tmp_path):
    (tmp_path / "results.jsonl").write_text('{"kind": "sweep"\n\n')
    assert said(lambda: list(ResultStore(tmp_path).numbered()))[1] == [
        f"{tmp_path / 'results.jsonl'}:1: damaged record skipped (Expecting ',' delimiter: line 1 column 17 (char 16))"]


def quick_records():
    with open(ROOT / "reports" / "examples" / "quick-cpu" / "results.jsonl") as fh:
        return [json.loads(line) for line in fh]


@pytest.mark.parametrize("damage, words", [
    (lambda r: r["result"].update(steps="x"), "records skipped for a damaged value"),
    (lambda r: r["result"]["ranks"][0].update(peak_rss_mb="lots"), "damaged values left out or read as missing"),
])
def test_many_damaged_records_are_one_warning_with_their_count(tmp_path, damage, words):
    records = quick_records()
    runs = [n for n, r in enumerate(records, start=1) if r["kind"] == "run"]
    for record in records:
        if record["kind"] == "run":
            damage(record)
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    _, warned = said(lambda: load_tables(tmp_path))
    assert len(runs) == 12 and len(warned) == 1, warned
    assert warned[0].startswith(f"{tmp_path / 'results.jsonl'}: 12 {words} (lines "
                                f"{', '.join(map(str, runs[:5]))} and 7 more; line {runs[0]}: "), warned


def test_records_of_a_newer_ddpbench_are_one_warning_and_still_read(tmp_path):
    records = quick_records()
    (tmp_path / "results.jsonl").write_text("".join(json.dumps({**r, "schema_version": SCHEMA_VERSION + 1}) + "\n"
                                                    for r in records))
    read, warned = said(lambda: list(ResultStore(tmp_path).numbered()))
    assert len(read) == len(records) == 17 and len(warned) == 1, warned
    assert warned[0] == (f"{tmp_path / 'results.jsonl'}: 17 records written by a newer ddpbench, read as far as this "
                         f"version knows (lines 1, 2, 3, 4, 5 and 12 more; line 1: schema {SCHEMA_VERSION + 1})")


# -- side files and written files -----------------------------------------------------------------

def test_side_files_are_read_only_as_regular_files_inside_the_folder(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "ok.json").write_text('{"a": [1, 2]}')
    assert read_json(folder / "ok.json", folder) == {"a": [1, 2]}
    (tmp_path / "secret.json").write_text("{}")
    (folder / "out.json").symlink_to(tmp_path / "secret.json")
    (folder / "zero.json").symlink_to("/dev/zero")
    os.mkfifo(folder / "fifo.json")
    (folder / "deep.json").write_text("[" * 200_000 + "]" * 200_000)
    (folder / "bad.json").write_text("{")
    (folder / "loop.json").symlink_to(folder / "loop.json")
    for name, words in (("out.json", "link out of the results folder"), ("zero.json", "link out of"),
                        ("fifo.json", "not a regular file"), ("deep.json", f"deeper than {MAX_DEPTH}"),
                        ("bad.json", "not JSON"), ("loop.json", "link out of")):
        with pytest.raises(SideFileError, match=words) as caught:
            read_json(folder / name, folder)
        assert str(folder / name) in str(caught.value) and "\n" not in str(caught.value)
    assert json_depth('{"a": "[[[[", "b": [[1]]}') == 3  # brackets inside strings do not count


def test_a_file_written_over_a_link_replaces_the_link(tmp_path):
    canary = tmp_path / "canary"
    canary.write_text("keep")
    link = tmp_path / "index.html"
    link.symlink_to(canary)
    replace_file(link, "<p>new</p>")
    assert canary.read_text() == "keep" and not link.is_symlink() and link.read_text() == "<p>new</p>"
    assert oct(link.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["canary", "index.html"]



def test_a_file_written_without_replacing_is_linked_whole_and_only_one_writer_wins(tmp_path):
    """Issue 83: ``replace=False`` links the whole file into place; a second writer of the name, or one
    finding a link planted there, gets FileExistsError and changes nothing; no temporary file is left."""
    canary = tmp_path / "canary"
    canary.write_text("keep")
    out = tmp_path / "bench.json"
    replace_file(out, "first\n", replace=False)
    with pytest.raises(FileExistsError):
        replace_file(out, "second\n", replace=False)
    (tmp_path / "link.json").symlink_to(canary)
    with pytest.raises(FileExistsError):
        replace_file(tmp_path / "link.json", "second\n", replace=False)
    assert out.read_text() == "first\n" and canary.read_text() == "keep"
    assert oct(out.stat().st_mode & 0o777) == oct(0o666 & ~_umask()) and out.stat().st_nlink == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.json", "canary", "link.json"]


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


# -- the page -----------------------------------------------------------------------------------

def test_fragments_escape_every_value_that_is_not_markup():
    fragment = html("<p>{{ a }} {{ b }} {{ c }}</p>", a="<script>x</script>", b=html("<em>{{ v }}</em>", v="&"),
                    c=None)
    assert fragment == "<p>&lt;script&gt;x&lt;/script&gt; <em>&amp;</em> &ndash;</p>"
    table = html_table(["<h>"], [["<td>"], [num(float("nan"))], [num("x<")]])
    assert "&lt;h&gt;" in table and "&lt;td&gt;" in table and DASH in table and "x&lt;" in table
    assert "<p>" + fragment == "&lt;p&gt;" + str(fragment)  # a plain string added to a fragment is text too


@pytest.mark.parametrize("stored, linked", [
    ("traces/a.json.gz", "traces/a.json.gz"), ("javascript:alert(1)", None), ("JavaScript:x", None),
    (" data:text/html,x", None), ("http://example.invalid/x", None), ("../outside", None),
    ("traces/../../outside", None), ("/etc/passwd", None), ("traces/out", None), ("", None),
    ("traces/missing.json.gz", None)])
def test_links_only_to_files_inside_the_folder(tmp_path, stored, linked):
    folder = tmp_path / "folder"
    (folder / "traces").mkdir(parents=True)
    (folder / "traces" / "a.json.gz").write_bytes(b"x")
    (folder / "traces" / "out").symlink_to(tmp_path)
    assert local_href(stored, folder, folder) == linked
    if linked:  # from a page written elsewhere, the link still reaches the file
        (tmp_path / "page").mkdir(exist_ok=True)
        assert local_href(stored, folder, tmp_path / "page") == "../folder/" + linked


# -- terminal and spreadsheet -------------------------------------------------------------------

def test_a_terminal_sees_no_escape_sequence_or_control_character():
    text = "job\x1b]0;retitled\x07 \x1b[31mred\x1b[0m\x9b2J tab\there\nnext\x00\u202eevil\x7f"
    assert printable(text) == "job red tab here nextevil"


@pytest.mark.parametrize("cell", ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx"])
def test_a_csv_cell_a_spreadsheet_would_run_is_text(cell):
    assert csv_cell(cell) == "'" + cell
    frame = pd.DataFrame({"job": [cell], "ratio": [-1.5]})
    assert csv_text(frame).splitlines()[1].startswith(('"\'', "'")) and csv_text(frame).rstrip().endswith(",-1.5")


def test_a_dollar_pair_in_a_label_is_drawn_literally(tmp_path):
    fig = figure(3, 2)
    ax = fig.add_subplot()
    ax.set_title("costs $5{ or $6")
    ax.plot([1, 2], [1, 2], label="$\\frac{1}{0}$ and $x^$")
    ax.legend()
    ax.set_yticks([1, 2], ["$a", "b$"])
    path = save(fig, tmp_path / "plot.png")
    assert path.stat().st_size > 1000


@pytest.mark.parametrize("value", [-2.0, -1e-300, math.inf, -math.inf, True, "1.0", [1.0]])
@pytest.mark.parametrize("column", ["data_ms", "optimizer_ms", "ready_ms"])
def test_a_timed_phase_or_later_column_refused_as_the_check_refuses_it(column, value):
    """Whatever the row's common case (a finite float >= 0, passed without the check's calls) does
    not hold goes through the check, as every value did: a negative, an infinity, a flag, a text."""
    columns = [*COLUMNS, "ready_ms"]
    row = [*STEP, 0.25]
    row[columns.index(column)] = value
    with pytest.raises(Damaged, match=rf"result.steps\[0\]: {column}: "):
        clean_run(run(step_columns=columns, steps=[row]))


@pytest.mark.parametrize("value, kept", [(0.0, 0.0), (-0.0, -0.0), (3, 3), (2.5, 2.5), (None, None)])
def test_a_timed_phase_or_later_column_kept_as_the_check_keeps_it(value, kept):
    columns = [*COLUMNS, "ready_ms"]
    clean, notes = clean_run(run(step_columns=columns, steps=[[0, "measure", 0, value, *STEP[4:], value]]))
    data_ms, ready_ms = clean["result"]["steps"][0][3], clean["result"]["steps"][0][-1]
    assert notes == [] and (data_ms is kept or data_ms == kept)
    assert ready_ms == kept if kept is not None else math.isnan(ready_ms)  # a later column's None reads as NaN


def test_a_value_for_strict_json_has_null_where_no_number():
    """ab.json and bisect.json: what a strict parser (Node's JSON.parse) reads; NaN and both infinities None."""
    value = {"ratio": math.nan, "ends": (0.9, math.inf), "rounds": [{"low": -math.inf, "n": 3, "label": "nan"}]}
    assert json_value(value) == {"ratio": None, "ends": [0.9, None], "rounds": [{"low": None, "n": 3, "label": "nan"}]}
    json.dumps(json_value(value), allow_nan=False)  # raises on any NaN or infinity left
