"""``benchmarks/ended.py``: a benchmark stopped by SIGTERM ends the command it runs and what that command started
(mutmut's forked test runs, a sweep's ranks): nothing outlives the benchmark, even where the command leaves its own
children behind when it is told to end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

from ddpbench.testing import MARK, ROOT, marked, wait_for

#: a command that starts a child and ends at SIGTERM (Python's default) without ending it, as mutmut's main process
#: leaves the test run it forked; it says each pid once both run
LEAVES_ITS_CHILD = textwrap.dedent("""
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    print(child.pid, flush=True)
    time.sleep(120)
""")
#: the benchmark: ended.run of that command, SIGTERM handled as a benchmark's main does
BENCHMARK = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import ended
    ended.stop_with_term()
    ended.run([sys.executable, "-c", sys.argv[2]])
""")


def test_a_benchmark_stopped_by_sigterm_leaves_no_process_of_its_command(tmp_path):
    mark = uuid.uuid4().hex
    bench = subprocess.Popen([sys.executable, "-c", BENCHMARK, str(ROOT / "benchmarks"), LEAVES_ITS_CHILD],
                             env={**os.environ, MARK: mark}, stdout=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        assert bench.stdout.readline().strip().isdigit()  # the grandchild runs
        wait_for(lambda: len(marked(mark)) == 3, 20, "the benchmark, its command and the command's child")
        bench.send_signal(signal.SIGTERM)
        bench.wait(40)
        began = time.monotonic()
        while marked(mark) and time.monotonic() - began < 5:
            time.sleep(0.05)
        left = [" ".join(p.cmdline()) for p in marked(mark)]
        assert not left, f"alive 5 s after the benchmark ended: {left}"
    finally:
        for proc in marked(mark):
            proc.kill()
        bench.kill()
        bench.wait()
