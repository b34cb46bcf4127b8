"""``python -m ddpbench`` with the garbage collector paused while it imports (ddpbench.gc_pause): a
command has it back on as it runs, a report keeps it off to its end."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ddpbench.testing.records import ok, write_results


@pytest.mark.parametrize("command, collecting", [(["models"], True), (["report", "{folder}"], False)])
def test_python_m_ddpbench_imports_paused_and_a_report_stays_paused_to_its_end(tmp_path, command, collecting):
    """As the program: the collector is off before the command's first import; at the exit handlers a
    command has it back on, a report (which ends as its page is written) still off."""
    folder = write_results(tmp_path / "r", [ok(10.0)])
    argv = [part.format(folder=folder) for part in command]
    probe = ("import atexit, gc, runpy, sys\n"
             "atexit.register(lambda: print('collecting', gc.isenabled(), flush=True))\n"
             f"sys.argv = ['ddpbench', *{argv!r}]\n"
             "runpy.run_module('ddpbench', run_name='__main__', alter_sys=True)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == f"collecting {collecting}"
