"""whatif's flags of how gradients accumulate: ``--accumulation N`` micro-steps at every size, or a fixed global
batch, ``--global-batch B --micro-batch b``, whose accumulation is ``B / (b x devices)`` at each size
(:mod:`ddpbench.analysis.models.gbatch`, answered by :mod:`ddpbench.show.gbatch`)."""

from __future__ import annotations


def add_accumulation_flags(p, given) -> None:
    """``--accumulation``, ``--global-batch`` and ``--micro-batch`` on ``p``; ``given``: its ``add_argument`` for a
    flag that describes a setting (noted as typed)."""
    given("--accumulation", type=int, default=1, metavar="N", help="micro-steps per all-reduce (default: 1)")
    given("--global-batch", type=int, metavar="B", help="samples an optimizer step at every size, with --micro-batch: "
          "accumulation = B / (micro-batch x devices), never below 1; --compute-ms is then a micro-step's (default: "
          "none, each device keeps its batch)")
    p.add_argument("--micro-batch", type=int, metavar="b", help="samples a device trains a micro-step, with "
                   "--global-batch (default: none)")


def print_step(args, *answer) -> None:
    """whatif's answer for one workload: at a fixed global batch where ``--global-batch`` is given
    (:func:`ddpbench.show.gbatch.print_fixed_batch`), else each device keeping its batch
    (:func:`ddpbench.show.answers.print_whatif`)."""
    from ddpbench.show.answers import print_whatif
    from ddpbench.show.gbatch import print_fixed_batch

    (print_fixed_batch if args.global_batch is not None else print_whatif)(args, *answer)
