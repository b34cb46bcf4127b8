"""What the checker reads and what it says: a quoted sentence as plain data, and a problem found in it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Claim:
    """One quoted sentence as plain data: its text, the job key it is about (None: about several),
    the fix as job fields and how its gain is known ("measured" or "model"), and the finding's kind."""

    text: str
    job: str | None = None
    fix_fields: dict | None = None
    basis: str | None = None
    kind: str | None = None

    @classmethod
    def of(cls, value) -> Claim:
        if isinstance(value, Claim):
            return value
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, dict):
            return cls(**{k: value.get(k) for k in ("text", "job", "fix_fields", "basis", "kind")})
        return cls(*value)


@dataclass(frozen=True)
class Problem:
    kind: str  # figure, interval, direction, retired, basis, contradicted, significance, band, slowdown, bound, differ,
    # trend, cause, efficiency, statistic, job, name
    job: str | None
    sentence: str
    expected: str

    def line(self) -> str:
        return f"{self.kind}: {self.job or '-'}: {self.expected}: {self.sentence}"
