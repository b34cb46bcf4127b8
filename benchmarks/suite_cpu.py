"""Where the whole test suite's CPU goes: every process it starts, by kind and by test.

    python benchmarks/suite_cpu.py [--top 25] [-- PYTEST_ARGS...]

Runs ``python -m pytest PYTEST_ARGS`` (default: ``-q -p no:cacheprovider``) with the kernel's
process accounting on, into a file of a temporary folder of its own, and notes each process's
command line as it appears (:mod:`ddpbench.testing.accounting`). Then it prints the machine's busy
and stolen CPU over the run (the ``cpu`` line of ``/proc/stat``, read as a rank reads it:
:func:`ddpbench.rank.neighbours.machine_ticks`), and the CPU of the processes under
pytest, by kind of process and by the test whose ``tmp_path`` a process's command line or an
ancestor's names. Unlike a sampling profiler it slows the suite by little (a look at ``/proc``
every 0.2 s), and it counts every process to its end, forked ranks too. What runs outside pytest's
tree is in the machine's busy CPU only: the Slurm daemons' and their job steps' ranks (the daemons
started by ``scripts/slurm-local.sh``), and a process whose parent left before the first look.

Needs Linux, root and ``accton`` (``apt-get install acct``). It turns the accounting off at the
end, so run it where nothing else uses it. Unset ``PYTHONDONTWRITEBYTECODE`` first, as CI does
(``.ci/run``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ddpbench.rank.neighbours import machine_ticks
from ddpbench.testing.accounting import Sampler, read_records, tally

DEFAULT_ARGS = ("-q", "-p", "no:cacheprovider")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=25, help="tests to list (default: 25)")
    parser.add_argument("pytest_args", nargs="*", help="after --: pytest's arguments")
    args = parser.parse_args()
    accton = shutil.which("accton")
    if accton is None or os.geteuid() != 0:
        print("suite_cpu: needs root and accton (apt-get install acct)", file=sys.stderr)
        return 2
    ticks = os.sysconf("SC_CLK_TCK")
    with tempfile.TemporaryDirectory(prefix="suite-cpu-") as folder:
        accounts = Path(folder) / "pacct"
        accounts.touch()
        subprocess.run([accton, str(accounts)], check=True, stdout=subprocess.DEVNULL)
        try:
            with Sampler() as sampler:
                (busy0, steal0), start = machine_ticks(), time.monotonic()
                suite = subprocess.Popen([sys.executable, "-m", "pytest", *(args.pytest_args or DEFAULT_ARGS)])
                code = suite.wait()
                wall, (busy1, steal1) = time.monotonic() - start, machine_ticks()
        finally:
            subprocess.run([accton, "off"], check=False, stdout=subprocess.DEVNULL)
        records = read_records(accounts)
    counted = tally(records, sampler.seen, suite.pid)
    busy, steal = (busy1 - busy0) / ticks, (steal1 - steal0) / ticks
    print(f"\npytest exited {code}; {wall:.1f} s of wall time; the machine {busy:.1f} CPU-s busy "
          f"({busy / wall:.2f} cores of {os.cpu_count()}), {steal:.1f} CPU-s taken by the hypervisor (steal)")
    print(f"processes under pytest: {sum(counted.processes.values())}, {counted.total_s:.1f} CPU-s")
    print(f"\n{'CPU-s':>8} {'share':>6} {'count':>6}  kind of process")
    for kind, seconds in counted.by_kind.most_common():
        print(f"{seconds:8.1f} {100 * seconds / counted.total_s:5.1f}% {counted.processes[kind]:6d}  {kind}")
    print(f"\n{'CPU-s':>8}  test (its tmp_path's name, 30 characters at most)")
    for test, seconds in counted.by_test.most_common(args.top):
        print(f"{seconds:8.1f}  {test}")
    return code


if __name__ == "__main__":
    sys.exit(main())
