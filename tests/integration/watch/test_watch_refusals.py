"""``python -m ddpbench watch`` refuses bad input in one line, exit 2, before it starts anything or writes its
folder: through the command's ``main()`` in this process (moved from tests/processes/watch/test_watch.py, where
one refusal still runs in a new process, as a user meets it)."""

import os

import pytest

from ddpbench.testing.cli import run_main


@pytest.mark.parametrize("argv, said", [
    (["--", "no-such-program-xyz"], "'no-such-program-xyz': not found on PATH"),
    (["--", "./no/such/file"], "'./no/such/file': no such file"),
    ([], "no command to watch"),
    (["--every", "0", "--", "true"], "--every: must be a number above 0"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, argv, said):
    done = run_main("watch", "--out", tmp_path / "w", *argv, timeout=60)
    assert done.returncode == 2 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "w").exists()


def test_a_folder_that_holds_files_is_refused_untouched(tmp_path):
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "mine.txt").write_text("keep")
    done = run_main("watch", "--out", tmp_path / "w", "--", "true", timeout=60)
    assert done.returncode == 2 and "is not empty" in done.stderr
    assert os.listdir(tmp_path / "w") == ["mine.txt"]
