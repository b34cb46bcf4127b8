"""An independent checker of what ddpbench says: every figure the verdict, the diagnosis, the
console and ``compare`` quote, set against figures it re-derives from the stored records itself.

It imports nothing of :mod:`ddpbench.analysis` (the import-linter layers contract puts it below),
nor the analysis's reader of results (:mod:`ddpbench.results.tables`): its own reader of
``results.jsonl`` (:mod:`.records`), its own derivation (:mod:`.figures`), its own generic reading
of sentences (:mod:`.parse`: numbers with units, job labels, direction and measured/estimated
words, no sentence templates), the figures a sentence may quote (:mod:`.pool`), the checks
(:mod:`.checks`; comparisons between two settings, :mod:`.comparisons`; what a sentence names and one
number a name, :mod:`.names`; direction words, :mod:`.directions`; what a verdict line chooses,
:mod:`.choices`; a figure found by its value, :mod:`.lookup`), the loss budget re-derived (:mod:`.budget`) and
``compare``'s rows (:mod:`.compare`). Input is plain data (:mod:`.problem`: a quoted sentence, a problem found
in it): sentences with the job key they are about, the fix fields and basis a finding carries.

    problems = audit.check_folder("reports/examples/quick-cpu", claims)   # [] when all hold
"""

from __future__ import annotations

from ddpbench.audit.checks import Claim, Problem, check
from ddpbench.audit.figures import Figures, derive

__all__ = ["Claim", "Figures", "Problem", "check", "check_folder", "derive"]


def check_folder(folder, claims, price: dict | None = None) -> list[Problem]:
    """Every problem of ``claims`` against the records of ``folder`` (a path, read by the checker's own
    reader, :mod:`.records`; or what that reader gave: see :func:`.figures.derive`, with ``price``);
    see :mod:`.checks`."""
    return check(derive(folder, price), claims)
