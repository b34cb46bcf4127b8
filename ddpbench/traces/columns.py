"""The columns of the tables a trace folder is read into, declared once; every module and the page
read them from here.

* :data:`STEP_COLUMNS`: one row per rank and step. A step is the wall-clock window from one
  ``ProfilerStep#`` range's start to the next's (the last: to its own end), so the steps tile the
  traced time. In it, what the device did (``busy``): ``compute``; communication, split into
  ``hidden`` (under compute) and ``exposed``; ``memory`` copies and sets under neither. What it did
  not (``idle``), split by what the host's step thread was doing (:data:`IDLE_COLUMNS`, in
  :data:`ddpbench.traces.kinds.HOST_CAUSES`' order). ``compute + exposed + memory + idle`` is the
  step. On a CPU-only trace the device is the CPU: its compute is the operators outside the
  input pipeline and the collectives' own ranges.
* :data:`COLLECTIVE_COLUMNS`: one row per rank and collective as it ran (an NCCL kernel; on a CPU
  trace, gloo's range on its worker thread).
* :data:`RANK_COLUMNS`: one row per rank, its device time over the trace as Holistic Trace
  Analysis defines it (docs/traces.md): the span from the first to the last GPU work launched
  before the last step began, the time no work ran in it (``idle``), the time compute ran,
  the rest (``non_compute``), and the communication time with the part of it compute overlapped.
"""

from __future__ import annotations

from ddpbench.traces.kinds import HOST_CAUSES

#: the idle time of a step, by what the host was doing (kinds.HOST_CAUSES)
IDLE_COLUMNS = tuple(f"idle_{cause}_ms" for cause in HOST_CAUSES)
#: what a step is made of: these add up to ``step_ms``
PARTS = ("compute_ms", "exposed_ms", "memory_ms", *IDLE_COLUMNS)
STEP_COLUMNS = ("rank", "step", "start_us", "step_ms", "compute_ms", "comm_ms", "hidden_ms", "exposed_ms",
                "memory_ms", "idle_ms", *IDLE_COLUMNS, "compute_end_us", "collectives")
COLLECTIVE_COLUMNS = ("rank", "step", "index", "op", "bytes", "dtype", "group", "group_size", "start_us",
                      "end_us", "dur_us")
RANK_COLUMNS = ("rank", "span_us", "idle_us", "compute_us", "non_compute_us", "comm_us", "overlap_us", "device")
