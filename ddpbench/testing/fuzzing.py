"""How many examples a hypothesis test draws: its full count in the whole suite (``pytest``, what CI
runs), a fifth of it in the inner loop (``pytest -m "not slow"``, which loads the hypothesis profile
``inner``: tests/conftest.py). A test writes ``@settings(max_examples=examples(1500))``."""

from __future__ import annotations

from hypothesis import settings

#: hypothesis's own default max_examples (its profile ``default``): the scale of one
FULL_SCALE = 100
#: the inner loop's profile: a fifth of every test's full count
INNER_PROFILE = "inner"
settings.register_profile(INNER_PROFILE, max_examples=FULL_SCALE // 5)


def examples(full: int) -> int:
    """``full``, scaled by the loaded profile's max_examples against hypothesis's default 100 (the
    inner loop's: a fifth; ``--hypothesis-profile`` another), never below 10 unless ``full`` is."""
    return max(min(full, 10), full * settings.default.max_examples // FULL_SCALE)
