"""Results: the record schema (:mod:`.schema`), the append-only store (:mod:`.store`), the
tables loaded from it (:mod:`.tables`), and the history of sweeps filed by machine and commit
(:mod:`.history`).

``ddpbench.results.load_tables(dir)`` and ``ddpbench.results.load_collectives(dir)`` are public
(the README names them). They are looked up when first asked for, not imported here: a rank
imports :mod:`.schema` and must not load the tables' code with it.
"""

__all__ = ["load", "load_collectives", "load_tables"]


def __getattr__(name: str):
    if name in __all__:
        from ddpbench.results import tables

        return getattr(tables, name)
    raise AttributeError(f"module 'ddpbench.results' has no attribute {name!r}")
