"""ddpbench: scaling analysis for PyTorch data-parallel training.

The flow, one package per stage, each importing only the stages below it::

    cli          the commands
    sweep        plan and run every (job, repeat) of an experiment through a launcher into the store
    launch       how ranks start: spawn, torchrun, Slurm, emulated nodes
    rank         what runs in a launched process: training, collectives, timing
    report       the HTML report, its figures, the comparison page, pytest-benchmark export
    analysis     pure functions over the tables: summary, statistics, cost model, diagnosis, comparison
    results      the record schema, the append-only store, the tables loaded from it
    experiment   TOML -> frozen, validated specs
    strategies   how gradients are combined: plug-ins of one small interface
    workloads    what a job trains: models and their data

(``regression``, the pytest-benchmark group, sits beside ``sweep``.) ``import ddpbench`` is
cheap: pandas, matplotlib and torch are imported only by the functions that need them.
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
