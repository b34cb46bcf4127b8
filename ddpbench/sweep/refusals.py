"""A refusal stops its job at the first launch: which launches of a sweep a refused one stands for.

A script job can be refused by ddpbench's own checks of the script's shape (a DDP switch the job
leaves off, a first step that took another batch than the job counts, a second DDP model, ...:
:class:`ddpbench.rank.script.steps.BadScript` with ``refused`` set, read back into the launch's outcome by
:func:`ddpbench.launch.handback.collect_outcome`). Such a refusal is deterministic: the same job,
launched again, runs the same script into the same check. So the sweep records it once, on the
launch that met it, and runs none of the launches it stands for:

* scope ``job`` (:data:`~ddpbench.rank.script.steps.JOB`): the other launches of the same job (its key);
* scope ``world_sizes`` (:data:`~ddpbench.rank.script.steps.WORLD_SIZES`): also the launches of the jobs that
  differ from it in their world size alone (the same script, arguments and settings), for a refusal
  of what the script does whatever the world size (a DDP switch it passes, a second DDP, its
  optimizers, its device or backend). A refusal that may follow the world size (the samples of the
  first step: a script may divide a global batch among its ranks; the steps it runs; the processes it
  spawns) stands for its own job only.

Each launch it stands for is stored as ``skipped``, with a reason naming the refused launch, and the
record's ``refusal`` (``{"scope", "launch": {"key", "repeat"}}``) ties it to that launch, whose own
record holds ``{"scope"}`` and the error. Nothing else is skipped: a crash, a timeout, a rank killed
from outside, or an error the script raised itself is no refusal, and the job's next launches run.
A resumed sweep keeps standing by the refusals stored (``--retry-failed`` runs the refused launch
and the launches skipped for it again).
"""

from __future__ import annotations

from dataclasses import dataclass

from ddpbench.launch.base import Launch, LaunchOutcome
from ddpbench.rank.script.steps import REFUSAL_SCOPES, WORLD_SIZES


def same_but_world_size(spec, other) -> bool:
    """Whether ``other`` is ``spec``'s script job at another world size: every other field the same but its
    measuring window (:data:`~ddpbench.analysis.core.WINDOW_FIELDS`: a window laid on the script's epochs
    differs with the world size; a refusal of what the script does whatever the world size does not depend on
    which of its steps are timed)."""
    from ddpbench.analysis.core import WINDOW_FIELDS

    if getattr(spec, "kind", None) != "run" or getattr(other, "kind", None) != "run" or not spec.script:
        return False
    if spec.world_size == other.world_size:
        return False
    mine, theirs = spec.to_dict(), other.to_dict()
    for name in ("world_size", *WINDOW_FIELDS):
        mine.pop(name)
        theirs.pop(name)
    return mine == theirs


@dataclass(frozen=True)
class Refusal:
    """A refused launch (its job's spec, its repeat) and what it stands for (``scope``)."""

    spec: object
    repeat: int
    scope: str

    def covers(self, spec) -> bool:
        """Whether a launch of ``spec`` would meet this refusal again."""
        if spec.key == self.spec.key:
            return True
        return self.scope == WORLD_SIZES and same_but_world_size(self.spec, spec)

    def reason(self, spec) -> str:
        """Why a launch of ``spec`` that this refusal covers is not run (the record's error)."""
        if spec.key == self.spec.key:
            return (f"not run: repeat {self.repeat} of this job was refused, and a refusal of the script's shape "
                    "comes again on every launch (that launch's error says why, and what to set)")
        return (f"not run: the same script at world size {self.spec.world_size} was refused (repeat {self.repeat}, "
                "its error says why and what to set), and that refusal does not depend on the world size")

    def record(self) -> dict:
        """The record's ``refusal`` of a launch skipped for it."""
        return {"scope": self.scope, "launch": {"key": self.spec.key, "repeat": self.repeat}}


class Refusals:
    """The refusals a sweep has met, and the launches they stand for."""

    def __init__(self) -> None:
        self.refusals: list[Refusal] = []

    def __bool__(self) -> bool:
        return bool(self.refusals)

    def note(self, launch: Launch, outcome: LaunchOutcome) -> Refusal | None:
        """Keep the refusal ``outcome`` holds, if it does (a failed launch whose ``refusal`` names a scope)."""
        refusal = outcome.refusal or {}
        if outcome.status != "failed" or refusal.get("launch") or refusal.get("scope") not in REFUSAL_SCOPES:
            return None
        found = Refusal(launch.spec, launch.repeat, refusal["scope"])
        self.refusals.append(found)
        return found

    def covering(self, spec) -> Refusal | None:
        """The first refusal a launch of ``spec`` would meet again, or None."""
        return next((r for r in self.refusals if r.covers(spec)), None)

    def skipped(self, launch: Launch) -> LaunchOutcome | None:
        """``launch``'s outcome where a refusal stands for it (``skipped``, the reason, its ``refusal``), else None."""
        refusal = self.covering(launch.spec)
        if refusal is None:
            return None
        return LaunchOutcome("skipped", error=refusal.reason(launch.spec), refusal=refusal.record())

    def seed(self, records, pending: set[tuple[str, int]], specs) -> None:
        """The refusals a resumed sweep keeps standing by: those of the stored launches whose latest record
        is a refusal and that are not run again (``pending``: the (key, repeat) of the launches to run).
        ``specs``: the experiment's jobs, by which a stored key is known."""
        by_key = {spec.key: spec for spec in specs}
        latest: dict[tuple[str, int], dict] = {}
        for record in records:
            if record.get("kind") == "run":
                latest[(record["key"], record["repeat"])] = record
        for (key, repeat), record in latest.items():
            refusal = record.get("refusal")
            if (record.get("status") == "failed" and isinstance(refusal, dict) and not refusal.get("launch")
                    and refusal.get("scope") in REFUSAL_SCOPES and key in by_key and (key, repeat) not in pending):
                self.refusals.append(Refusal(by_key[key], repeat, refusal["scope"]))


def announce(refusal: Refusal, left: list[Launch]) -> str:
    """The console's line for a refusal just met: what of ``left`` (the launches still to run) it skips."""
    same = sum(1 for launch in left if launch.spec.key == refusal.spec.key)
    others = [launch for launch in left if launch.spec.key != refusal.spec.key and refusal.covers(launch.spec)]
    parts = []
    if same:
        parts.append(f"its {same} other launches" if same > 1 else "its other launch")
    if others:
        sizes = " and ".join(str(s) for s in sorted({launch.spec.world_size for launch in others}))
        parts.append(f"the {len(others)} launch{'es' if len(others) > 1 else ''} of the same script at world size "
                     f"{sizes} (this refusal does not depend on the world size)")
    if parts:
        what = " and ".join(parts) + (" are" if same + len(others) > 1 else " is") + " skipped, not run"
    else:
        what = "none of its launches was left to run"
    return (f"refused: a refusal of the script's shape comes again on every launch: {what}; the sweep goes on "
            "with the next job")
