"""The sweep command leaves the interpreter's exit nothing to walk: it freezes the collector's
objects as the process exits (an atexit hook, before the exit's last collections), not while the
process goes on (a test session that runs sweeps in-process collects its garbage as ever)."""

import subprocess
import sys
import textwrap

from ddpbench.testing import ROOT

SCRIPT = textwrap.dedent("""
    import atexit, gc, sys, time
    # registered first, so it runs last (atexit is last in, first out): what the exit is left with
    atexit.register(lambda: print("at exit", gc.get_freeze_count(), flush=True))
    from ddpbench.cli import sweep
    from ddpbench.cli.program import main
    from ddpbench.launch import can_run, forked
    # the run itself is not what this is about; what a sweep imports before it is (each strategy, torch with it)
    sweep.run_and_report = lambda experiment, *args: can_run.check_jobs(experiment.jobs, experiment.source) or 0
    forked.start_server = lambda: None
    assert main(["sweep", "experiments/quick.toml", "--no-report"]) == 0
    assert main(["sweep", "experiments/quick.toml", "--no-report"]) == 0  # a second run in the process
    print("after the command", gc.get_freeze_count(), flush=True)
""")


def test_the_sweep_command_freezes_at_exit_not_before():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.rsplit(" ", 1) for line in proc.stdout.splitlines())
    assert int(lines["after the command"]) == 0  # the process goes on collecting as ever
    assert int(lines["at exit"]) > 100_000  # torch's objects and the rest: the exit's collections skip them
