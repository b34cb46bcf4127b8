"""Every figure a training launch stores, declared once: its name, how a stored value is checked,
its unit, what it means, whether each rank stores its own or the launch stores one, the schema
version it is stored since, and the summary columns made of it.

From these declarations, and nowhere else:

* :mod:`ddpbench.results.schema` takes the per-rank figures a hand-back may hold
  (:data:`RANK_FIGURES`) and each launch group's (:data:`LAUNCH_GROUPS`), and refuses a
  hand-back that stores a figure not declared here;
* :mod:`ddpbench.results.validate` checks every stored value with its figure's check;
* :mod:`ddpbench.results.tables` reads each figure into the ranks or runs table;
* :mod:`ddpbench.analysis.summary.table` makes each figure's :class:`Summary` columns, and
  :mod:`ddpbench.analysis.core.columns` declares them with the unit and meaning given here.

A new figure is one :class:`Figure` here and the code that measures it (pytest-benchmark's
``Stats.fields`` names its schema the same way). ``tests/unit/results/test_figures.py`` fails for a
figure a hand-back stores without a declaration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ddpbench.results import checks as c

#: the units a figure or a summary column may have, with what each means
UNITS = {
    "ms": "milliseconds",
    "s": "seconds",
    "h": "hours",
    "MB": "megabytes (10^6 bytes)",
    "bytes": "bytes",
    "samples": "training samples",
    "samples/s": "training samples per second, the whole job's",
    "FLOP": "floating-point operations",
    "FLOP/s": "floating-point operations per second",
    "TFLOP/s": "10^12 floating-point operations per second",
    "J": "joules",
    "J/sample": "joules per training sample",
    "W": "watts (joules per second)",
    "MHz": "megahertz (a clock's cycles per microsecond)",
    "price": "the experiment's currency (cost.currency: USD unless it says otherwise)",
    "price/sample": "the experiment's currency per training sample",
    "price/hour": "the experiment's currency per hour",
    "%": "percent",
    "ratio": "a plain ratio (1.0 = 100 %)",
    "cores": "CPU time over a window, in cores (1.0: one core busy the whole window)",
    "number": "a plain number in the model's own terms (a parameter's difference)",
    "count": "how many",
    "index": "a number that names one thing (a seed, a step, a rank)",
    "bool": "true or false (None where not judged)",
    "text": "words, a name or a key",
    "text list": "words, one per item",
    "ms list": "milliseconds, one per launch or bucket",
    "bytes list": "bytes, one per tensor or bucket, in DDP's order",
    "rank list": "ranks",
    "CPU list": "CPU ids",
}

#: how a :class:`Summary` makes one job column of a figure, with what the column then means
HOW = {
    "max": "the largest rank's, over every launch",
    "median": "the median rank's, over every launch",
    "first": "as the first rank that stored it",
    # per launch: the figure summed over its distinct ``domain``s (a counter two ranks share counts
    # once), each divided by its ``over``; then the mean over launches, with its t interval
    "per": "each launch's sum over distinct counters, each over its own divisor; the mean over launches",
}


@dataclass(frozen=True)
class Summary:
    """One column of the per-job summary made of a figure (:func:`ddpbench.analysis.summary.table.summarize`).

    ``how`` is a key of :data:`HOW`. ``column``, ``unit`` and ``meaning`` default to the figure's
    (the meaning followed by ``how``'s words). ``per`` reads two more figures of the same rank:
    ``over``, what each value is divided by, and ``domain``, what ranks share (a counter two ranks
    read counts once a launch). ``interval``: the column's 95 % t interval over launches as
    ``<column>_low`` and ``<column>_high``."""

    how: str
    column: str = ""
    unit: str = ""
    meaning: str = ""
    over: str = ""
    domain: str = ""
    interval: bool = False


@dataclass(frozen=True)
class Figure:
    """One stored figure. ``where``: ``rank`` (each rank's entry in ``result["ranks"]``) or the
    launch group of ``result`` it sits in (``compute``, ``check``, ``recovery``, ``script``).
    ``since``: the schema version it is stored since (a record older than that reads it as missing)."""

    name: str
    check: Callable[[Any], Any]
    unit: str
    meaning: str
    where: str = "rank"
    since: int = 1
    summary: tuple[Summary, ...] = ()

    def columns(self) -> list[tuple[str, str, str]]:
        """(name, unit, meaning) of each summary column made of this figure, its interval's ends included."""
        out = []
        for s in self.summary:
            name, unit = s.column or self.name, s.unit or self.unit
            meaning = s.meaning or f"{self.meaning}: {HOW[s.how]}"
            out.append((name, unit, meaning))
            if s.interval:
                out += [(f"{name}_{end}", unit, f"{name}'s 95 % interval over launches, {end} end")
                        for end in ("low", "high")]
        return out


def _f(name, check, unit, meaning, *summary: Summary, where: str = "rank", since: int = 1) -> Figure:
    return Figure(name, check, unit, meaning, where, since, summary)


def non_negative_or_none(value: Any):
    """A figure >= 0 that may be missing."""
    return c.non_negative_or_missing(value)


#: every figure a training launch stores, per rank first, then per launch group
FIGURES: tuple[Figure, ...] = (
    # -- who the rank was
    _f("rank", c.whole, "index", "the rank's number in the job"),
    _f("pid", c.whole_or_none, "index", "the rank's process id"),
    _f("threads", c.whole_or_none, "count", "torch threads the rank computed with"),
    _f("affinity", c.cpus_or_none, "CPU list", "the CPUs the rank process could run on, read before its measured "
                                               "steps"),
    _f("checksum", c.text_or_none, "text", "a checksum of the rank's parameters after training (every replica's "
                                           "must match)"),
    # -- memory
    _f("peak_rss_mb", c.finite_or_none, "MB", "peak resident memory of the rank process",
       Summary("max", meaning="peak resident memory of the largest rank")),
    _f("rank_memory_mb", c.finite_or_none, "MB", "the rank's own memory: anonymous and shared",
       Summary("max", meaning="the largest rank's own memory: anonymous and shared")),
    _f("uss_mb", c.finite_or_none, "MB", "the rank's unique set size"),
    _f("pss_mb", c.finite_or_none, "MB", "the rank's proportional set size"),
    _f("rss_file_mb", c.finite_or_none, "MB", "the rank's resident file-backed memory"),
    _f("optimizer_state_mb", c.finite_or_none, "MB", "the optimizer state the rank holds (ZeRO: its shard)",
       Summary("max", meaning="the largest rank's optimizer state (ZeRO shards it)")),
    _f("gpus", c.whole_or_none, "count", "GPUs the rank's process drives (0 on CPU)",
       Summary("max", meaning="GPUs per process (0 on CPU)")),
    _f("gpu_peak_allocated_mb", c.finite_or_none, "MB", "peak GPU memory allocated by tensors (NaN on CPU)",
       Summary("max", meaning="peak GPU memory allocated by tensors, fullest GPU (NaN on CPU)")),
    _f("gpu_peak_reserved_mb", c.finite_or_none, "MB", "peak GPU memory reserved by the caching allocator",
       Summary("max", meaning="peak GPU memory reserved by the caching allocator, fullest GPU")),
    # -- DDP's own statistics and buckets
    _f("bucket_bytes", c.wholes_or_none, "bytes list", "each bucket DDP made, in bytes, in its order"),
    _f("allreduce_bytes_per_step", c.finite_or_none, "bytes", "gradient bytes the rank all-reduced per step",
       Summary("median", meaning="gradient bytes all-reduced per step (median rank)")),
    _f("ddp_buckets_rebuilt", c.flag_or_none, "bool", "whether DDP rebuilt its buckets after the first step"),
    _f("ddp_forward_compute_ms", c.finite_or_none, "ms", "DDP's logged forward compute (sampled steps)"),
    _f("ddp_backward_compute_ms", c.finite_or_none, "ms", "DDP's logged backward compute (sampled steps)"),
    _f("ddp_backward_comm_ms", c.finite_or_none, "ms", "DDP's logged backward communication (sampled steps)"),
    _f("ddp_backward_compute_comm_overlap_ms", c.finite_or_none, "ms", "DDP's logged communication that ran while "
                                                                       "backward computed"),
    _f("ddp_unused_parameter_bytes", c.finite_or_none, "bytes", "parameters in DDP's buckets that got no gradient"),
    _f("bucket_comm_ms", c.finites_or_none, "ms list", "a script's rank: each bucket's mean all-reduce time in its "
                                                       "measured steps (null on a GPU)"),
    # -- traffic
    _f("bytes_sent_per_step", c.finite_or_none, "bytes", "bytes the rank sent per optimizer step"),
    _f("bytes_recv_per_step", c.finite_or_none, "bytes", "bytes the rank received per optimizer step"),
    _f("traffic_source", c.text_or_none, "text", "how the traffic figures were got: measured, or computed from what",
       Summary("first", meaning="how the traffic figures were got: measured, or computed from what")),
    _f("dp_replicas", c.whole_or_none, "count", "DataParallel: the replicas its one process drove"),
    _f("dp_note", c.text_or_none, "text", "DataParallel: what its one process did, in words"),
    # -- compute
    _f("gemm_peak_flops", c.finite_or_none, "FLOP/s", "the GEMM peak the rank measured as it started"),
    # -- TensorFlow's strategies
    _f("framework_version", c.text_or_none, "text", "a TensorFlow strategy's TensorFlow version",
       Summary("first", meaning="a TensorFlow strategy's TensorFlow version")),
    _f("reduction", c.text_or_none, "text", "a TensorFlow strategy's cross-device reduction",
       Summary("first", meaning="a TensorFlow strategy's cross-device reduction")),
    # -- the trace
    _f("trace_error", c.text_or_none, "text", "why a traced rank's trace could not be read back (null when it "
                                              "could, or was not traced)"),
    # -- precision and torch.compile
    _f("amp_skipped_steps", c.finite_or_none, "count", "fp16: steps the GradScaler skipped",
       Summary("max", meaning="fp16: steps the GradScaler skipped (worst launch)")),
    _f("amp_loss_scale", c.finite_or_none, "number", "fp16: the GradScaler's scale after the measured steps"),
    _f("compile_s", c.finite_or_none, "s", "torch.compile's time on the first step"),
    _f("compile_cache", c.text_or_none, "text", "the compile cache as the rank started: cold or warm"),
    _f("compiled_graphs", c.finite_or_none, "count", "graphs torch.compile made"),
    _f("graph_breaks", c.finite_or_none, "count", "graph breaks"),
    _f("graph_break_reasons", c.texts_or_none, "text list", "why the graph broke, one line a break"),
    _f("ddp_optimizer_subgraphs", c.finite_or_none, "count", "subgraphs DDPOptimizer split the graph into at buckets"),
    _f("recompiles_after_compile_phase", c.finite_or_none, "count", "recompiles during the measured steps"),
    # -- the operating system
    _f("involuntary_switches_per_step", c.finite_or_none, "count", "the rank's involuntary context switches per "
                                                                   "measured step"),
    # -- what else the machine ran over the measured steps (ddpbench.rank.neighbours); later within version 2
    _f("cpu_cores", non_negative_or_none, "cores", "the rank's own CPU time over its measured steps' window, in cores "
                                                    "(its threads and its live child processes)", since=2),
    _f("machine_busy_cores", non_negative_or_none, "cores", "every CPU's busy time over the rank's measured window, "
                                                             "in cores (Linux /proc/stat; None elsewhere)", since=2),
    _f("machine_steal_cores", non_negative_or_none, "cores", "time the hypervisor took from the machine's virtual "
                                                              "CPUs over the window, in cores", since=2),
    _f("cpu_mhz", non_negative_or_none, "MHz", "the CPUs' mean clock as the window ended (/proc/cpuinfo's "
                                                  "cpu MHz; None where not said)", since=2),
    # -- energy, over the timed steps (ddpbench.rank.energy; docs/cost-and-energy.md)
    _f("energy_j", non_negative_or_none, "J", "energy the rank's counter measured over its timed steps (None where "
                                              "there is none or the window was too short: energy_note says why)",
       Summary("per", column="energy_j_per_sample", unit="J/sample", over="energy_samples", domain="energy_domain",
                  interval=True, meaning="energy per sample trained: each launch's counters over its timed steps "
                                         "(a counter ranks share counted once) over the samples trained in them; "
                                         "the mean over launches (NaN where no counter: energy_note says why)"),
       Summary("per", column="power_w", unit="W", over="energy_window_s", domain="energy_domain", interval=True,
               meaning="the job's average power over its timed steps, every counter of a launch (a counter ranks "
                       "share counted once); the mean over launches"), since=2),
    _f("energy_window_s", non_negative_or_none, "s", "seconds between the counter's two readings (the timed steps)",
       since=2),
    _f("energy_samples", non_negative_or_none, "samples", "samples the whole job trained in the timed steps", since=2),
    _f("energy_period_s", non_negative_or_none, "s", "how often the counter updates (its readings are stale by up to "
                                                     "this)", since=2),
    _f("energy_domain", c.text_or_none, "text", "which counter: nvml:<GPU UUID>, or rapl:<host>:<zones> (a "
                                                "package every rank on the host shares)", since=2),
    _f("energy_method", c.text_or_none, "text", "how the energy was measured: the counter and what it covers",
       Summary("first", meaning="how the energy was measured: the counter and what it covers (None where not)"),
       since=2),
    _f("energy_note", c.text_or_none, "text", "why there is no energy figure, in one line (None where there is)",
       Summary("first", meaning="why energy is not given: no counter here, unreadable, a window too short"),
       since=2),

    # -- what a launch trained and the work it did: result["compute"]
    _f("workload", c.text_or_none, "text", "the workload's name", where="compute"),
    _f("tensors", c.whole_or_none, "count", "trainable tensors (gradients DDP buckets)", where="compute"),
    _f("tensor_bytes", c.wholes_or_none, "bytes list", "each trainable tensor's gradient bytes, in registration order",
       where="compute"),
    _f("flops_per_step", c.finite_or_none, "FLOP", "FLOPs one process computes per optimizer step", where="compute"),
    _f("flops_source", c.text_or_none, "text", "counted (PyTorch's counter) or the workload's own figure",
       where="compute"),
    _f("flops_counted_in_job", c.text_or_none, "text", "the job (its key) whose FLOP count this launch was handed, "
       "where it did not count: they differ only in what the count never sees (ddpbench.sweep.checks)",
       where="compute", since=2),
    _f("peak_method", c.text_or_none, "text", "how each rank's GEMM peak was measured", where="compute"),
    _f("peak_source", c.text_or_none, "text", "where the GEMM peak came from: measured (by this launch), sweep (an "
       "earlier launch of the same sweep) or cache (the measure-once cache of an earlier sweep)", where="compute",
       since=2),
    _f("peak_taken_utc", c.text_or_none, "text", "when a GEMM peak this launch did not measure was measured (UTC)",
       where="compute", since=2),
    # -- the equivalence check: result["check"]
    _f("max_abs_diff", c.finite_or_none, "number", "largest parameter difference from single-process training",
       where="check"),
    _f("exact", c.flag_or_none, "bool", "an exact strategy in fp32, held to its tolerance", where="check"),
    _f("check_steps_run", c.whole_or_none, "count", "the steps the check trained", where="check"),
    _f("skipped", c.text_or_none, "text", "why the check did not run (the workload's words)", where="check"),
    _f("checked_in_repeat", c.whole_or_none, "index", "the repeat that checked the job, where this one did not",
       where="check"),
    _f("checked_in_job", c.text_or_none, "text", "the job (its key) whose equivalence check stands for this one's, "
       "where this one did not run it: they differ only in what does not change the check "
       "(ddpbench.sweep.checks)", where="check", since=2),
    _f("tolerance", c.finite_or_none, "number", "the difference an exact strategy is held to", where="check"),
    _f("lossy_reason", c.text_or_none, "text", "why an exact strategy is not held to its tolerance", where="check"),
    # -- a fault-recovery launch: result["recovery"]
    _f("attempts", c.finite_or_none, "count", "attempts the launch took", where="recovery"),
    _f("fault_step", c.whole_or_none, "index", "the step the fault was planted at (the spec's)", where="recovery"),
    _f("resumed_from_step", c.finite_or_none, "index", "the step the restarted workers resumed from", where="recovery"),
    _f("steps_redone", c.finite_or_none, "count", "steps trained again after the restart", where="recovery"),
    _f("restart_s", c.finite_or_none, "s", "from the fault to the workers' restart", where="recovery"),
    _f("rejoin_s", c.finite_or_none, "s", "from the restart to the group formed again", where="recovery"),
    _f("recovery_s", c.finite_or_none, "s", "from the fault to training going on", where="recovery"),
    _f("params_identical", c.flag_or_none, "bool", "parameters bit for bit those of an uninterrupted run",
       where="recovery"),
    _f("params_max_abs_diff", c.finite_or_none, "number", "the largest difference from an uninterrupted run",
       where="recovery"),
    # -- a launch's time before its timed steps, apart from them: the launch record's "overhead"
    _f("cluster_start_s", non_negative_or_none, "s", "the cluster its launcher started first (Ray's, in the sweep's "
                                                     "first launch; not in wall_s)", where="overhead", since=2),
    _f("workers_start_s", non_negative_or_none, "s", "from the launch's start to rank 0 in its process group",
       where="overhead", since=2),
    _f("first_step_s", non_negative_or_none, "s", "from then to the end of rank 0's first timed step (null where its "
                                                  "timeline does not say)", where="overhead", since=2),
    # -- a script job's launch: the figure of result["script"] the tables read
    _f("nosync_allreduced", c.whole_or_none, "count", "no-sync steps that all-reduced all the same (all ranks)",
       where="script"),
)

BY_NAME: dict[str, Figure] = {f.name: f for f in FIGURES if f.where == "rank"}
#: the per-rank figures, in declaration order (``rank`` and ``pid`` name the rank)
RANK_FIGURES: tuple[str, ...] = tuple(f.name for f in FIGURES if f.where == "rank" and f.name not in ("rank", "pid"))
#: each launch group of ``result`` -> its figures' names
LAUNCH_GROUPS: dict[str, tuple[str, ...]] = {
    group: tuple(f.name for f in FIGURES if f.where == group)
    for group in ("compute", "check", "recovery", "script", "overhead")}
#: the figures that make summary columns
SUMMARIZED: tuple[Figure, ...] = tuple(f for f in FIGURES if f.summary)


def checks(where: str) -> dict[str, Callable]:
    """name -> check of the figures stored ``where`` (``rank`` or a launch group)."""
    return {f.name: f.check for f in FIGURES if f.where == where}


def undeclared(entry: dict, where: str = "rank") -> list[str]:
    """The keys of a stored ``entry`` (a rank's, or a launch group's) that no figure declares."""
    known = {f.name for f in FIGURES if f.where == where}
    return sorted(k for k in entry if k not in known)
