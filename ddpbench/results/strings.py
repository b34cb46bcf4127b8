"""Text columns held as Python strings, not Arrow's.

pandas 3 infers a ``str`` dtype for text, stored in Arrow where pyarrow is installed (a framework or
Ray brings it) and in Python objects otherwise. ddpbench's tables are small and read a value at a
time (a job's key, a phase, a strategy, compared and grouped row by row), where an Arrow-backed column
costs a call into Arrow per value: the same report, summary or audit took about 15 % longer with
pyarrow installed. :func:`python_strings` builds the tables of the functions it wraps with Python
storage (``mode.string_storage``), for the call only: a user's own frames keep the storage they had,
and the values and the dtype (``str``) are the same either way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable)


def python_strings(func: F) -> F:
    """``func`` run with pandas' text columns stored as Python strings (see the module docstring)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        import pandas as pd

        with pd.option_context("mode.string_storage", "python"):
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
