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

# the diagnosis
#: a cause is blamed only where its fix would recover at least this share of the step (set in b5b46cb;
#: docs/diagnosis.md, scored by benchmarks/fault_suite.py against experiments/faults/)
MATERIAL_SHARE = 0.10
#: communication-bound: the exposed communication's whole interval at or above this share of the step
#: (set in 1d04b97, on intervals since 87a0395; docs/diagnosis.md, the slow-link case of
#: benchmarks/fault_suite.py)
COMM_BOUND_SHARE = 0.25
#: compute-bound: the exposed communication's whole interval at or below this share of the step (set in
#: 1d04b97, on intervals since 87a0395; docs/reading-the-report.md)
COMPUTE_BOUND_SHARE = 0.10
#: data-bound: waiting for the next batch above this share of the step (set in b5b34e2, first read on the
#: models-cpu example of 7c0e501; docs/diagnosis.md, the data-stall and slow-loader cases of
#: benchmarks/fault_suite.py)
DATA_BOUND_SHARE = 0.25
#: buckets too small: a layout with at least this many times the buckets the default cap makes (set in
#: b5b46cb; docs/diagnosis.md, the small-buckets case of benchmarks/fault_suite.py)
SMALL_BUCKETS = 4
#: buckets too large: the largest bucket holds at least this share of the gradients (set in b5b46cb;
#: docs/diagnosis.md, the large-buckets case of benchmarks/fault_suite.py)
LARGE_BUCKET_SHARE = 0.8
#: the caps a too-large layout is re-cut at (MB), the one leaving least exposed is proposed (set in b5b46cb;
#: the large-buckets case of benchmarks/fault_suite.py)
CANDIDATE_CAPS = (25.0, 10.0, 5.0, 2.0, 1.0)
#: caps that would leave no more exposed time than the best plus this share of the job's exposed time tie,
#: and the largest of them is proposed: each bucket also pays a fixed cost the model leaves out (named in
#: 47066d6; tests/unit/analysis/test_thresholds.py)
NEAR_TIE_SHARE = 0.05
#: a difference in time per sample or cost smaller than this is not worth a "cheaper" or "faster" (set in
#: c54306e on experiments/cost.toml, reports/examples/cost-cpu)
CHOICE_MATERIAL = 0.05
#: a projection names compute measured slower at world size > 1 by more than this apart from
#: communication (set in ebce5f4; tests/unit/analysis/test_whatif.py)
COMPUTE_SLOWDOWN_SHARE = 0.05
#: with one launch a side there is no interval: a measured difference of a fix counts beyond this share
#: of the step (set in a6a38a8; the audit's own copy is ddpbench/audit/checks.py's)
SINGLE_LAUNCH_MARGIN = 0.05
#: exposed communication above this share of the step, and grown by at least COMM_SHARE_GROWTH over fp32
#: eager's, is named as what kept a faster compute from the job (set in ec5bec7 on experiments/precision.toml
#: and experiments/gpu-precision.toml)
COMM_SHARE_NAMED = 0.15
COMM_SHARE_GROWTH = 0.05
#: Karp-Flatt's serial fraction rising by more than this across world sizes: overhead grows with the ranks
#: (set in 1d04b97, on intervals since db4761f; docs/reading-the-report.md)
SERIAL_FRACTION_RISE = 0.05
