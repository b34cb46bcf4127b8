"""The diagnosis: findings in plain words, each quoting the figures it rests on.

  finders         every finder of the diagnosis, in the order they run, and diagnose()
  findings        the Finding, blaming and ranking
  causes          each cause of lost time, declared once in its registry: what its fix would recover
  estimates       what a cause's estimate is made of: the Estimate, its Fixes, the Context it reads
  bucket_findings the gradient buckets: the best cap, caps with the same buckets, buckets that do not fit
  framework_findings each framework against raw DDP on the same work
  evidence        a fix the sweep ran: its measured gain
  wording         words that follow an interval (cannot tell, significant, scales well)
  bound           compute- or communication-bound
  contention      ranks sharing the machine
  model_findings  findings of the cost model
  precision       mixed precision and torch.compile
  lossbudget      the loss budget in words
  verdict         the headline: how it scales, what to change; the same as a table of answers
  choice          the best setting, and whether it is better
  claims          the verdict's and the findings' claims, for the checker
"""

from __future__ import annotations

from ddpbench.analysis.diagnosis.framework_findings import against_raw_ddp
from ddpbench.analysis.diagnosis.lossbudget import cluster_words
from ddpbench.analysis.diagnosis.precision import (
    has_settings,
    ratio_text,
    scaling_sentences,
    setting_name,
    settings_table,
)
from ddpbench.analysis.diagnosis.verdict import ANSWER_COLUMNS
from ddpbench.analysis.diagnosis.wording import measurable, noise_floor_ms, not_measurable, resolution

__all__ = [
    "ANSWER_COLUMNS", "against_raw_ddp", "cluster_words", "has_settings", "measurable", "noise_floor_ms",
    "not_measurable", "ratio_text", "resolution", "scaling_sentences", "setting_name", "settings_table",
]
