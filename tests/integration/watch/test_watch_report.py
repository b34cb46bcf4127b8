"""``python -m ddpbench report DIR`` on a watched run's folder: the page of the run (each rank's step, the alarms,
the budget before and after each), into the folder watch wrote or a report folder; every bad folder one line."""

import csv
import shutil

import pytest

from ddpbench.testing.cli import run_main
from ddpbench.testing.watched import ddp_run, watched_folder
from ddpbench.watch.windows import LINES, WINDOW_COLUMNS


@pytest.fixture(scope="module")
def straggled(tmp_path_factory):
    folder = tmp_path_factory.mktemp("watched") / "run"
    raised = watched_folder(folder, ddp_run(0, slow_rank=1, noise_sd=0.15))
    return folder, raised


def page_of(folder):
    return (folder / "index.html").read_text()


def test_the_page_of_a_watched_run_is_written_into_its_folder(straggled, tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(straggled[0], folder)
    done = run_main("report", folder)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(folder / "index.html")
    page = page_of(folder)
    assert [a.kind for a in straggled[1]] == ["slower", "straggler"]
    assert "Alarm 2: the budget before and after" in page and "Rank 1 is the straggler" in page
    assert "nan" not in page.lower().replace("nano", "")
    assert (folder / "steps.png").stat().st_size > 10_000
    with open(folder / "windows.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == list(WINDOW_COLUMNS)
    # the job's lines for each alarm, and the straggler's own for its
    assert len(rows) == len(LINES) * 3 and {r["who"] for r in rows} == {"the job", "rank 1"}
    forward = next(r for r in rows if r["who"] == "rank 1" and r["line"] == "forward_ms")
    assert float(forward["low"]) <= 0.25 <= float(forward["high"])  # its forward a quarter slower, planted


def test_a_page_elsewhere_is_a_report_folder_and_the_run_is_left_as_it_was(straggled, tmp_path):
    before = sorted(p.name for p in straggled[0].iterdir())
    done = run_main("report", straggled[0], "--out", tmp_path / "page")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in straggled[0].iterdir()) == before
    assert "Rank 1 is the straggler" in page_of(tmp_path / "page")


def test_an_unchanged_run_s_page_says_no_alarm(tmp_path):
    assert watched_folder(tmp_path / "run", ddp_run(3)) == []
    assert run_main("report", tmp_path / "run").returncode == 0
    assert "No alarm" in page_of(tmp_path / "run")


@pytest.mark.parametrize("damage, said", [
    (lambda f: f.write_text("rank,step\n0,1\n"), "steps.csv: columns: lacks end_s"),
    (lambda f: f.write_bytes(b"\xff\xfe\x00garbage"), "steps.csv: format: not a CSV ddpbench watch wrote")])
def test_a_damaged_stream_is_one_line_and_exit_2(straggled, tmp_path, damage, said):
    folder = tmp_path / "run"
    shutil.copytree(straggled[0], folder)
    damage(folder / "steps.csv")
    done = run_main("report", folder)
    assert done.returncode == 2 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (folder / "index.html").exists()


def test_a_stream_in_someone_else_s_folder_is_read_but_its_page_goes_elsewhere(straggled, tmp_path):
    folder = tmp_path / "theirs"
    folder.mkdir()
    for name in ("steps.csv", "alarms.csv"):
        shutil.copy(straggled[0] / name, folder / name)
    done = run_main("report", folder)
    assert done.returncode == 2 and "did not write" in done.stderr and not (folder / "index.html").exists()
    assert run_main("report", folder, "--out", tmp_path / "page").returncode == 0
    assert (tmp_path / "page" / "index.html").is_file() and sorted(p.name for p in folder.iterdir()) == [
        "alarms.csv", "steps.csv"]


@pytest.mark.parametrize("flag", [["--check"], ["--price-per-device-hour", "2"]])
def test_a_sweep_s_flag_on_a_watched_run_is_one_line(straggled, flag):
    done = run_main("report", straggled[0], *flag)
    assert done.returncode == 2 and "a watched run's folder" in done.stderr, done.stderr


@pytest.mark.parametrize("trace, linked", [("traces/alarm-1", True), ("../elsewhere/alarm-1", False),
                                           ("/etc/alarm-1", False)])
def test_an_alarm_s_trace_answer_is_linked_only_inside_the_run_s_folder(straggled, tmp_path, trace, linked):
    folder = tmp_path / "run"
    shutil.copytree(straggled[0], folder)
    for answer in (folder / "traces" / "alarm-1-answer", tmp_path / "elsewhere" / "alarm-1-answer"):
        answer.mkdir(parents=True)
        (answer / "index.html").write_text("<p>an answer</p>")
    with open(folder / "alarms.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    with open(folder / "alarms.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({**r, "trace": trace} for r in rows)
    assert run_main("report", "run", cwd=tmp_path).returncode == 0  # the folder as a user types it, relative
    page = page_of(folder)
    assert ('href="traces/alarm-1-answer/index.html"' in page) is linked
    assert "alarm-1's answer" in page if linked else "alarm-1 (no answer)" in page
