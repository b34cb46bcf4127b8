"""ddpbench: scaling analysis for PyTorch data-parallel training.

The flow, one module each:

    experiment (TOML) -> spec.JobSpec -> launch/ -> worker (one rank) -> results store
                      -> analysis -> plots / report

``import ddpbench`` is cheap: pandas, matplotlib and torch are imported only by
the functions that need them.
"""

__version__ = "0.1.0"

__all__ = ["__version__", "load", "summarize"]


def load(out_dir):
    """Per-step DataFrame of a results folder; see :func:`ddpbench.results.load`."""
    from ddpbench.results import load as _load

    return _load(out_dir)


def summarize(steps, runs=None, ranks=None):
    """Per-job DataFrame from :func:`load`'s output; see :func:`ddpbench.analysis.summarize`."""
    from ddpbench.analysis import summarize as _summarize

    return _summarize(steps, runs, ranks)
