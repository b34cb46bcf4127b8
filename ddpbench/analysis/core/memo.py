"""What is read once per table: a function of a whole table (the folder's summary, say) that the
analysis asks again for each of its jobs, answered from the first answer while the table lives.

A sweep of a thousand jobs asks the same question of its summary a thousand times (which settings
vary, which layouts DDP recorded at a cap): asked afresh each time, the work grows with the square
of the jobs. A table is no dictionary key, so the answers are kept by its id and dropped when it
is collected; the tables these functions read are built once and never changed in place.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable

#: every per-table answer, by (function, the table's id, the other arguments)
_ANSWERS: dict = {}
#: the ids of the tables answered for, each with its finalizer registered
_TABLES: set = set()


def _forget(table_id: int) -> None:
    _TABLES.discard(table_id)
    for key in [k for k in _ANSWERS if k[1] == table_id]:
        del _ANSWERS[key]


def per_table(function: Callable) -> Callable:
    """``function(table, *args)`` answered once per table (and hashable ``args``) while the table lives;
    asked afresh of what cannot be watched for its end (not a table)."""

    @functools.wraps(function)
    def once(table, *args):
        key = (function, id(table), args)
        if key in _ANSWERS:
            return _ANSWERS[key]
        if id(table) not in _TABLES:
            try:
                weakref.finalize(table, _forget, id(table))
            except TypeError:
                return function(table, *args)
            _TABLES.add(id(table))
        _ANSWERS[key] = function(table, *args)
        return _ANSWERS[key]

    return once
