"""What several figures and sections derive from one table, derived once while a report is written.

The scaling figures, their sections' notes and the strategy figures each need the same lines,
groups and layouts of the summary table (:func:`ddpbench.report.plots.scaling.scaling_lines`,
...); a function marked :func:`remembered` computes them once per table object while
:func:`remembering` is open (:func:`ddpbench.report.build.write_context` opens it around the
sections), and every time outside it. The tables of a report are not changed once loaded, so a
table object stands for its contents; the value is kept with the table, whose id cannot then be
reused by another.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_MEMO: ContextVar[dict | None] = ContextVar("remembered", default=None)


@contextmanager
def remembering() -> Iterator[None]:
    """While open, :func:`remembered` functions compute once per table (and arguments)."""
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def remembered(derive: Callable) -> Callable:
    """``derive(table, ...)`` computed once per table object and arguments while :func:`remembering` is open.
    Its callers must not change what it returns."""

    @functools.wraps(derive)
    def recall(table, *args, **kwargs):
        memo = _MEMO.get()
        if memo is None:
            return derive(table, *args, **kwargs)
        key = (derive.__qualname__, id(table), args, tuple(sorted(kwargs.items())))
        if key not in memo or memo[key][0] is not table:
            memo[key] = (table, derive(table, *args, **kwargs))
        return memo[key][1]

    return recall
