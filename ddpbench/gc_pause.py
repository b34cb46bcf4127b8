"""Python's cyclic garbage collector paused while a process imports what it keeps to its end.

Importing torch (with ``torch._dynamo`` and sympy), pandas or matplotlib makes hundreds of
thousands of objects that live as long as the process: modules, their functions, classes and
tables. Every 700 allocations can start a collection, and every hundredth of those walks all of
them again; none finds garbage among them. What pausing it saves (the fork server's imports, the
default sweep, a report) is measured in benchmarks/measured.md
(``python benchmarks/import_speed.py`` times the server's imports both ways).

:func:`pause` as a process starts: ``python -m ddpbench`` (``ddpbench.__main__``) and the fork
server, as it imports :mod:`ddpbench.rank.forked`. :func:`resume` once the process has imported
what it keeps: what is alive then goes to the permanent generation (``gc.freeze``: never walked
again), and the collector runs as before on whatever the process makes from then on, the ranks'
timed steps included. The command line resumes it as a command starts
(:func:`ddpbench.cli.program.main`); a sweep before its first launch, once its report's modules
are imported (:func:`ddpbench.cli.shared.running.run_and_report`); a rank as it is forked. A report never
resumes it: the process ends as its page is written (a report pauses the collector while it is
written anyway: :func:`ddpbench.report.build.collector_paused`).
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Turn the collector off, if it is on, for :func:`resume` to turn back on."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Turn the collector back on where :func:`pause` turned it off (nothing otherwise), after moving
    what is alive now to the permanent generation."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


def paused() -> bool:
    """Whether :func:`pause` turned the collector off and nothing has resumed it."""
    return _paused
