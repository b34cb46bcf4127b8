"""Results: the record schema (:mod:`.schema`), the append-only store (:mod:`.store`) and the
tables loaded from it (:mod:`.tables`).

``ddpbench.results.load_tables(dir)`` and ``ddpbench.results.load_collectives(dir)`` are public
(the README names them); the rest of ddpbench imports the modules themselves.
"""

from ddpbench.results.tables import load, load_collectives, load_tables

__all__ = ["load", "load_collectives", "load_tables"]
