"""Models of communication: what the machine's own figures predict elsewhere.

  finish       the time to finish a run at each size, its wait in the queue, and which size to ask for
  gbatch       scaling at a fixed global batch: each size's accumulation, and the batch past where it reaches 1
  costmodel    the alpha-beta model, fitted to this machine and projected to larger clusters
  whatif       a workload's DDP step on a cluster you describe
  terms        its settings (dtype, accumulation, sharding, input) and the costs that grow with N
  questions    the largest world size at a target efficiency, and the network rate it needs
  wholenodes   sizes in whole nodes, the model's limit, and the largest size searched in whole nodes
  memory       whether the parameters, gradients and optimizer state fit a device, by sharding
  presets      large models' parameter layouts, built on the meta device
  loso         the what-if model checked leave-one-source-out, with its band
  bands        the band conditioned on what its user states (compute, gradients, links)
  measured     the growth terms as a results folder measured them (whatif --from)
  holdout      the projection of a measured run checked by hiding its largest world size
  ownband      the band from the user's own measurement: its hold-out check's, where narrower
  reproduce    the model's step at each world size measured beside the measurement, before a projection
  fromtrace    a traced job's measurements as the projection's inputs (whatif --from a trace folder)
  layouts      the parameter layouts of models, and DDP's buckets cut from them
  validation   the what-if model against published scaling (published_scaling.toml)
  network      jobs on emulated links beside the model of the link; fault recovery
  collectives  the measured all_reduce curve beside DDP's buckets
  model        the fitted model a results folder carries
"""

from __future__ import annotations

from ddpbench.analysis.models.bands import band_at, largest_within
from ddpbench.analysis.models.bands import words as band_words
from ddpbench.analysis.models.collectives import ddp_buckets_vs_allreduce
from ddpbench.analysis.models.costmodel import predict, single_rank_only, workloads
from ddpbench.analysis.models.finish import (
    Amount,
    Finish,
    cheapest,
    finish_at,
    first_to_finish,
    largest_above,
    with_waits,
)
from ddpbench.analysis.models.fromtrace import traced, traced_spread
from ddpbench.analysis.models.gbatch import fixed_batch_rows, fixed_work, full_size, global_batch_problem, past_words
from ddpbench.analysis.models.holdout import MIN_WORLD_SIZES, TOLERANCE_PCT
from ddpbench.analysis.models.loso import BANDS, EFFICIENCY_QUANTITY, band, costs_words, held_out, score, validated
from ddpbench.analysis.models.measured import measured_terms, versus_report, with_inputs
from ddpbench.analysis.models.memory import (
    DEFAULT_OPTIMIZER,
    OPTIMIZERS,
    TRAINED_WITH,
    Memory,
    counted_optimizer,
    gpu_memory_gb,
)
from ddpbench.analysis.models.model import Model
from ddpbench.analysis.models.network import recovery_runs, shaped_jobs
from ddpbench.analysis.models.ownband import OwnBand, own_band
from ddpbench.analysis.models.ownband import band_words as own_band_words
from ddpbench.analysis.models.presets import PRESETS, layout
from ddpbench.analysis.models.questions import largest_world_size, link_needed, why_no_rate
from ddpbench.analysis.models.reproduce import mismatch, reproduced_in_folder, reproduced_in_trace, reproduces
from ddpbench.analysis.models.terms import GRAD_BYTES, SHARDS
from ddpbench.analysis.models.validation import flop_layout, published_table
from ddpbench.analysis.models.whatif import COSTS, Cluster, Work, ddp_step, master_step
from ddpbench.analysis.models.wholenodes import LIMIT, WORLD_SIZES, node_series, not_whole

__all__ = [
    "BANDS", "COSTS", "DEFAULT_OPTIMIZER", "EFFICIENCY_QUANTITY", "GRAD_BYTES", "LIMIT", "MIN_WORLD_SIZES",
    "OPTIMIZERS", "PRESETS", "SHARDS", "TRAINED_WITH",
    "TOLERANCE_PCT", "WORLD_SIZES", "Amount", "Cluster", "Finish", "Memory", "Model", "OwnBand", "Work", "band",
    "band_at", "band_words", "cheapest", "costs_words", "counted_optimizer", "ddp_buckets_vs_allreduce", "ddp_step",
    "finish_at",
    "first_to_finish", "fixed_batch_rows", "fixed_work", "flop_layout", "full_size", "global_batch_problem",
    "gpu_memory_gb", "held_out", "largest_above", "largest_within", "largest_world_size", "layout", "link_needed",
    "master_step", "measured_terms", "mismatch", "node_series", "not_whole", "own_band", "own_band_words",
    "past_words", "predict", "published_table", "recovery_runs", "reproduced_in_folder", "reproduced_in_trace",
    "reproduces", "score", "shaped_jobs", "single_rank_only", "traced", "traced_spread", "validated",
    "versus_report", "why_no_rate", "with_inputs", "with_waits", "workloads",
]
