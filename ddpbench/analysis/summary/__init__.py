"""The summary: one row per job, the figures every later room reads.

  table       one row per job: step times, throughput, speedup, efficiency, serial fraction, phases
  exposed     exposed communication and its interval
  stragglers  the ranks slower than the others at their own compute, step after step
  barrier     the rank everyone waited for, from gradient-ready times
  budget      what a job lost against its baseline, in lines that sum to it
  apart       that loss again from steps timed apart (a trace, a script's phases steps)
  overlap     exposed communication measured from the profiler's trace
  cost        cost per sample at a given price
  compiled    torch.compile's cache figures
  declared    the summary columns that follow from stored figure declarations
  frameworks  frameworks beside raw DDP: their overhead
  gpu         jobs that ran on CUDA beside the same job on CPU
"""

from __future__ import annotations

from ddpbench.analysis.summary.apart import SOURCES as APART_SOURCES
from ddpbench.analysis.summary.barrier import BARRIER_COLUMNS
from ddpbench.analysis.summary.budget import BUDGET_COLUMNS, BUDGET_LINES
from ddpbench.analysis.summary.cost import MILLION, stored_cost
from ddpbench.analysis.summary.frameworks import overhead_table
from ddpbench.analysis.summary.gpu import gpu_table
from ddpbench.analysis.summary.overlap import exposed_sentence, step_overlap, trace_events, typical_step
from ddpbench.analysis.summary.table import bounded_steps, datasheet_peak, launch_times, summarize

__all__ = [
    "APART_SOURCES", "BARRIER_COLUMNS", "BUDGET_COLUMNS", "BUDGET_LINES", "MILLION", "bounded_steps", "datasheet_peak",
    "exposed_sentence", "gpu_table", "launch_times", "overhead_table", "step_overlap",
    "stored_cost", "summarize", "trace_events", "typical_step",
]
