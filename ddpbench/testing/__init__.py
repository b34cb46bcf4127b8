"""Test support for ddpbench's own tests and benchmarks (as ``numpy.testing`` is numpy's): running
the command line, tiny experiments, finding survivor processes, writing results folders and
planted faults. It sits above every stage (it may import any of ddpbench); nothing of ddpbench
imports it (import-linter's layers in pyproject.toml).

- :mod:`ddpbench.testing.cli`: ``python -m ddpbench`` as a user runs it (:func:`run_cli`), or its
  ``main()`` in this process (:func:`run_main`)
- :mod:`ddpbench.testing.experiments`: experiment files of the smallest real jobs (:data:`TINY`)
- :mod:`ddpbench.testing.survivors`: the processes a sweep left behind (:func:`rank_processes`, :func:`marked`)
- :mod:`ddpbench.testing.records`: results folders written through the record schema and the real store
- :mod:`ddpbench.testing.planted_faults`: faults planted in real jobs, and a strategy with a planted bug
- :mod:`ddpbench.testing.traces`: trace folders of data-parallel jobs made from a committed GPU trace
- :mod:`ddpbench.testing.watched`: watched runs made up with known faults, fed to the alarms, written as folders
- :mod:`ddpbench.testing.sweeps`: real sweeps with a planted fault or traces, and what their folders must hold
- :mod:`ddpbench.testing.tables`, :mod:`ddpbench.testing.comparing`: made-up tables and launches
- :mod:`ddpbench.testing.budgets`: planted jobs whose every line of the loss budget is known
- :mod:`ddpbench.testing.launchers`: a launcher that starts no process
- :mod:`ddpbench.testing.workloads`: the example workload (tests/data/example_workload), from outside ddpbench;
  small datasets for the data tests
- :mod:`ddpbench.testing.scripts`: the scripts of benchmarks/ and scripts/ as modules
- :mod:`ddpbench.testing.columns`: the summary's columns in the committed example folders
- :mod:`ddpbench.testing.fuzzing`: a hypothesis test's example count, a fifth of it in the inner loop
- :mod:`ddpbench.testing.accounting`: the suite's CPU by process, from the kernel's accounting
  (benchmarks/suite_cpu.py)
- :mod:`ddpbench.testing.one_process`: the hooks that fail a test of the folders that start no process
  when it starts one
- :mod:`ddpbench.testing.scheduling`: how the suite shares the machine's cores (which files run beside which)
- :mod:`ddpbench.testing.pages`: a report page read in tests (a section, whether it is inert)
- :mod:`ddpbench.testing.histories`, :mod:`ddpbench.testing.benchmark_runs`: history stores and
  pytest-benchmark JSON files made for tests
- :mod:`ddpbench.testing.bisecting`: a training repository of a few commits, one planting a slowdown
- :mod:`ddpbench.testing.forked`: the probe of what a forked rank's start may not inherit
"""

from ddpbench.testing.cli import ROOT, as_from_a_terminal, cli_command, run_cli, run_main
from ddpbench.testing.experiments import TINY, TINY_DEFAULTS, script_experiment, write_experiment
from ddpbench.testing.survivors import MARK, marked, rank_processes, wait_for

__all__ = ["MARK", "ROOT", "TINY", "TINY_DEFAULTS", "as_from_a_terminal", "cli_command", "marked", "rank_processes",
           "run_cli", "run_main", "script_experiment", "wait_for", "write_experiment"]
