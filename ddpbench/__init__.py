"""ddpbench: scaling analysis for PyTorch data-parallel training.

The flow, one package per stage, each importing only the stages below it (pyproject.toml's layers)::

    program        ``python -m ddpbench`` (:mod:`.__main__`): the parser of every command, what ends one
    cli            the commands, one module each
    commandline    what the commands share of the command line: exits, parsing, folders, the run
    sweep          plan and run every (job, repeat) of an experiment through a launcher into the store
    benchplugin    the pytest-benchmark plugin (the ddp_group fixture) and the persistent group it times
    report         the HTML report, its figures, the comparison, trend, trace and watched-run pages
    watch          a running job watched (``watch -- COMMAND``): its ranks' steps, alarms, traces
    show           what is shown, for the page, the console and the export alike
    launch         how ranks start: spawn, torchrun, Slurm, Ray, emulated nodes
    rank           what runs in a launched process: training, collectives, timing, a user's script
    traces         any job's per-rank profiler traces, read as a stream and answered
    analysis       pure functions over the tables: summary, statistics, cost model, diagnosis, comparison
    audit          the independent checker: every quoted figure re-derived from the records
    results        the record schema, the append-only store, the tables, the history store
    experiment     TOML -> frozen, validated specs
    strategies     how gradients are combined: plug-ins of one small interface
    workloads      what a job trains: models and their data
    files          the file-safety toolkit: folders' rules, claims and locks, side files, sanitising
    errors         errors a person can act on (one line, exit 2)
    owner          a child process dies with the one that started it
    gc_pause       the garbage collector paused while a process imports what it keeps

Beside them: ``testing`` (support for ddpbench's own tests, above every stage, imported by none), and
the paths users' files name, kept for them: ``tasks`` and ``pytest_plugin`` (the pytest-benchmark
tasks and plugin of earlier versions) and ``regression`` (the plugin's package before it was
``benchplugin``). ``import ddpbench`` is cheap: pandas, matplotlib and torch are imported only by the
functions that need them.
"""

from ddpbench.workloads.workload import Workload  # no torch: a user's factory returns one

__version__ = "0.1.0"

__all__ = ["Workload", "__version__", "load", "load_collectives", "summarize"]


def load(out_dir):
    """Per-step DataFrame of a results folder's training jobs; see :func:`ddpbench.results.tables.load`."""
    from ddpbench.results.tables import load as _load

    return _load(out_dir)


def load_collectives(out_dir):
    """The collective micro-benchmarks of a results folder; see :func:`ddpbench.results.tables.load_collectives`."""
    from ddpbench.results.tables import load_collectives as _load_collectives

    return _load_collectives(out_dir)


def summarize(steps, runs=None, ranks=None):
    """Per-job DataFrame from :func:`load`'s output; see :func:`ddpbench.analysis.summary.table.summarize`."""
    from ddpbench.analysis.summary import summarize as _summarize

    return _summarize(steps, runs, ranks)
