"""Every threshold a word of the analysis rests on, declared once, each with its reason.

A word ("noisy", "straggler", "scales well", a rank named at the barrier) is said where a figure
crosses one of these; the modules that say it import the threshold from here.
"""

from __future__ import annotations

#: IQR / median above this marks a job noisy
NOISE_THRESHOLD = 0.10
#: a rank whose compute step is this much slower than the other ranks' median, in most steps, is a
#: straggler
STRAGGLER_THRESHOLD = 0.10
#: share of steps in which a straggler must be the slower one
STRAGGLER_CONSISTENCY = 0.75
#: parallel efficiency at or above this "scales well", below SCALES_POORLY "scales poorly"
SCALES_WELL, SCALES_POORLY = 0.8, 0.5
#: a rank is named at the barrier when it was last in at least this share of the steps ...
NAMED_SHARE = 0.75
#: ... and was ready, on those steps, at least this share of the mean step after the others' mean
NAMED_WAIT = 0.10
#: two measures of exposed communication disagree when they differ by more than this share
DISAGREE = 0.20
