"""Results: the record, where it is kept and the tables made of it.

  schema          the record schema: every record kind, its fields, the schema version
  figures         every stored figure, declared once (name, check, unit, meaning, summary columns)
  phases          the phases of a training step, declared once
  checks          how a stored value is checked (each figure names one)
  store           the append-only store: ``results.jsonl``, one record a line
  validate        stored records checked value by value before any table is made of them
  tables          the tables loaded from a folder (``load_tables``, ``load_collectives``)
  strings         the tables' text columns held as Python strings
  history         the history store: sweeps and benchmark runs filed by machine and commit
  benchmark_json  a pytest-benchmark run's JSON as the history files it, and the machine it names

How a folder is written and read safely (claims, locks, side files, sanitising) is
:mod:`ddpbench.files`'; the git revisions a user names are :mod:`ddpbench.sweep.revisions`'.

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
