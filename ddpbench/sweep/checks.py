"""The equivalence check where it proves something: once per training the check can tell apart.

A job's first launch trains a fresh replica for the check steps and compares it with single-process
training on the same global batches (:mod:`ddpbench.rank.equivalence`). What that proves depends on
the strategy, its settings, the model, the data, the precision, the world size (the number of shards
the global batch is cut into, which is what the averaged gradient must undo) and the optimizer step:
every field of the job but a few. Two jobs that differ only in those few run the same check and get
the same answer, so a sweep runs it in the first of them and hands the answer's source to the others
(:func:`check_key`, :func:`check_given`):

* the timed window and how often and how long a job is measured (the fields whose role is
  ``window`` or ``measurement``, :data:`ddpbench.experiment.spec.ROLES`: ``steps``, ``warmup_steps``,
  ``repeats``, ``min_repeats``, ``max_repeats``, ``ci_target_pct``, ``trace_steps``, ...): the check
  trains its own ``check_steps`` on a fresh replica, whatever steps were timed;
* ``bucket_cap_mb`` of DDP with its built-in all-reduce (``strategy = "ddp"``, ``comm_hook = "none"``):
  the cap only groups the same gradients into fewer or more buffers, each averaged elementwise by the
  same all-reduce; each parameter's averaged gradient is the same sum (bitwise at world size 2, and up
  to the float rounding of a ring's chunking beyond, which the check's tolerance is there for).
  Under a communication hook (fp16, PowerSGD, ...) or any other strategy (which may bucket on its
  own), a bucket is what the code transforms, so the cap stays in the key and each job runs its check.

The world size stays in the key: it is what the check proves the averaging right for. A job that
asks for its checks in every repeat (``check_every_repeat``), a fault-recovery job and a script job
(which runs no check of this kind) are never handed another's. The job that did not run the check
says whose stands for it (``result["check"]["checked_in_job"]``); the summary and the report take that
job's figures, labelled so.

The FLOP count is handed on the same way (:func:`flops_key`). A job's first launch counts, on rank 0,
the FLOPs of one micro-batch of its data through the bare model, before the strategy wraps it
(:meth:`ddpbench.rank.train.TrainingRank.count_flops`, PyTorch's counter: about 130 ms of a
transformer-s launch on a slow 2-core VM). Besides the timed fields, neither the bucket cap nor the
check's settings touch that model or that batch; every other field stays in the key, the world size
too (a workload's data may depend on it). The launch that was handed a count stores whose it is
(``result["compute"]["flops_counted_in_job"]``).
"""

from __future__ import annotations

from ddpbench.experiment.spec import with_role

#: fields that do not change what the equivalence check of a job proves (see the module docstring); of these,
#: check_every_repeat, script_to_end and script_dir never differ between two jobs that hand a check or a count
#: on (:func:`check_key` gives such jobs None; :data:`NOT_COUNTED` leaves the first out of the count's key)
TIMED_ONLY = with_role("window", "measurement")


def check_key(spec) -> str | None:
    """What a job's equivalence check proves, as a key two jobs share when their checks are the same;
    None where the job's check is never handed to or from another (see the module docstring)."""
    import json

    if spec.kind != "run" or spec.script or spec.check_every_repeat or spec.check_steps == 0 or spec.recovers:
        return None
    fields = {k: v for k, v in spec.to_dict().items() if k not in TIMED_ONLY}
    if spec.strategy == "ddp" and spec.comm_hook == "none":
        fields.pop("bucket_cap_mb")
    return json.dumps(fields, sort_keys=True, default=str)


#: fields that do not change a job's FLOP count besides :data:`TIMED_ONLY`: it is counted on the bare
#: model and one micro-batch, whatever the buckets or the check (see the module docstring)
NOT_COUNTED = ("bucket_cap_mb", "check_steps", "check_every_repeat")


def flops_key(spec) -> str | None:
    """What a job's FLOP count depends on, as a key two jobs share when their counts are the same; None
    where the job counts no FLOPs of this kind (a script's, another kind's)."""
    import json

    if spec.kind != "run" or spec.script:
        return None
    fields = {k: v for k, v in spec.to_dict().items() if k not in TIMED_ONLY + NOT_COUNTED}
    return json.dumps(fields, sort_keys=True, default=str)


class Checks:
    """The jobs of one sweep whose first launch ran its equivalence check and passed it, by
    :func:`check_key`, the job's key; and those whose first launch counted its FLOPs, by
    :func:`flops_key`, the job's key and the count."""

    def __init__(self):
        self._ran: dict[str, str] = {}
        self._counted: dict[str, tuple[str, float]] = {}

    def given(self, spec, repeat: int) -> dict | None:
        """``{"checked_in_job": key}`` for a launch that would run its check (a first launch) where an
        earlier job of the sweep ran the same one; None where it runs its own."""
        key = check_key(spec)
        if repeat != 0 or key is None or self._ran.get(key) in (None, spec.key):
            return None
        return {"checked_in_job": self._ran[key]}

    def flops_given(self, spec, repeat: int) -> dict | None:
        """``{"flops_per_step": n, "counted_in_job": key}`` for a first launch where an earlier job of the
        sweep counted the same FLOPs; None where it counts its own."""
        key = flops_key(spec)
        counted = self._counted.get(key) if key is not None else None
        if repeat != 0 or counted is None or counted[0] == spec.key:
            return None
        return {"flops_per_step": counted[1], "counted_in_job": counted[0]}

    def learn(self, spec, repeat: int, status: str, result: dict | None) -> None:
        """Note a launch that finished ok and ran the check itself (an exact strategy that failed it
        failed its launch: no job is handed a failed check), or counted its FLOPs itself."""
        if status != "ok":
            return
        compute = (result or {}).get("compute") or {}
        flops, key = compute.get("flops_per_step"), flops_key(spec)
        if (key is not None and compute.get("flops_source") == "counted" and not compute.get("flops_counted_in_job")
                and isinstance(flops, (int, float)) and flops == flops and flops > 0):
            self._counted.setdefault(key, (spec.key, float(flops)))
        key = check_key(spec)
        check = (result or {}).get("check") or {}
        if key is None or not check.get("check_steps_run") or check.get("max_abs_diff") is None:
            return
        self._ran.setdefault(key, spec.key)
