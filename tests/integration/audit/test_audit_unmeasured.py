"""A folder whose finished launches hold no measured steps (only their warm-up and no_sync() steps: a hand-cut or
foreign results file) is checked as any other: one line, no traceback. Until 2026-12-02 ``report --check`` of it
ended in a pandas KeyError from the checker's per-launch windows of no rows."""

from ddpbench.testing import run_main
from ddpbench.testing.records import ok, rewrite_steps, write_results


def test_a_folder_without_measured_steps_is_checked_in_one_line(tmp_path):
    folder = rewrite_steps(write_results(tmp_path / "results", [ok(10.0, world_size=1), ok(6.0, world_size=2)]),
                           lambda row: None if row["phase"] == "measure" else row)
    done = run_main("report", folder, "--check")
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "over 2 job(s): 0 problem(s) against the figures re-derived from the records" in done.stdout
