"""The per-job summary's columns, declared once: name, unit, meaning, and the stage that fills each.

:func:`ddpbench.analysis.summary.table.summarize` returns one row per job with exactly these columns
(``tests/integration/analysis/test_columns.py`` summarises committed results folders and holds it to
that; ``tests/unit/analysis/core/test_columns.py`` checks the table in ``docs/results.md`` against
:func:`markdown_table`). A job's settings come first: every field of its spec, declared with its help
text in :data:`ddpbench.experiment.spec.FIELDS`, so they are not repeated here but derived
(:func:`_spec_columns`). Then what was measured.

A figure a job cannot have (a trace figure of an untraced job, a GPU's memory on CPU) is NaN, or
None for a word or a flag: every row has every column.

Add a column to the summary and to :data:`MEASURED` together; the test names the one forgotten.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ddpbench.analysis.core.budget_lines import LOSS_LINES, RECOVERABLE
from ddpbench.analysis.core.thresholds import CONTENDED_CORES, DISAGREE, NAMED_SHARE, NAMED_WAIT, NOISE_THRESHOLD
from ddpbench.experiment.spec import FIELDS
from ddpbench.results.figures import SUMMARIZED, UNITS  # noqa: F401 (UNITS: a column's units are a figure's)
from ddpbench.results.phases import BY_COLUMN, TIMED

#: the stages that fill columns, in the order summarize() runs them, with where each is computed
STAGES = {
    "spec": "the job's settings (ddpbench.experiment.spec.FIELDS)",
    "launch": "the launch records: how each launch ended, where, its batch (summary.summarize)",
    "steps": "the measured steps, slowest rank per step (summary.summarize)",
    "intervals": "95 % Student t intervals over launches (analysis.core.stats)",
    "ranks": "each rank's record: DDP's statistics, buckets, traffic, memory, energy (summary._rank_figures; a "
             "figure's own columns as ddpbench.results.figures declares them)",
    "precision": "precision and torch.compile figures (summary._precision_figures, analysis.summary.compiled)",
    "trace": "the profiler's events of traced steps (analysis.summary.overlap)",
    "check": "the equivalence check against single-process training (summary._check_figures)",
    "compute": "FLOPs and the GEMM peak (summary._compute_figures)",
    "stragglers": "each rank's compute time against the others' (summary.stragglers); the rank last to have its "
                  "gradients ready (analysis.summary.budget)",
    "speedup": "against the world-size-1 baseline (summary.add_speedup)",
    "budget": "what was lost against that baseline, in lines that sum to it (analysis.summary.budget)",
    "cost": "the price of a device-hour given in [cost] or by flags, times the measured step (analysis.summary.cost)",
}


@dataclass(frozen=True)
class Column:
    """One column of the summary: its name, unit (a key of :data:`UNITS`), meaning in one line, and the
    stage that fills it (a key of :data:`STAGES`)."""

    name: str
    unit: str
    meaning: str
    stage: str


# the most-read columns, by name
STEP_MS = "step_ms_mean"
SAMPLES_PER_S = "samples_per_s"
SPEEDUP = "speedup"
EFFICIENCY = "efficiency"
EXPOSED_COMM_MS = "exposed_comm_ms"

#: spec fields whose unit their name and type do not say
_SPEC_UNITS = {"batch_size": "samples", "seed": "index", "fault_step": "index", "fault_rank": "index"}


def _spec_unit(field: dataclasses.Field) -> str:
    if field.name in _SPEC_UNITS:
        return _SPEC_UNITS[field.name]
    for suffix, unit in (("_mb", "MB"), ("_ms", "ms"), ("_pct", "%")):
        if field.name.endswith(suffix):
            return unit
    return {"bool": "bool", "str": "text"}.get(str(field.type), "count")


def _spec_columns() -> tuple[Column, ...]:
    return tuple(Column(name, _spec_unit(field), field.metadata["help"], "spec") for name, field in FIELDS.items())


def _c(name: str, unit: str, stage: str, meaning: str) -> Column:
    return Column(name, unit, meaning, stage)


#: the loss budget's lines (analysis.core.budget_lines), then the loss timed apart (analysis.summary.apart) and
#: its gap from the budget's: their columns and meanings, each with a Welch interval over launches
_BUDGET_LINES = (
    ("loss_ms", "step_ms_mean - budget_baseline_ms: what the job lost against its baseline"),
    *((line.column, line.meaning) for line in LOSS_LINES),
)
_APART = (
    ("loss_apart_ms", "the loss again from steps timed apart (loss_apart_source's): the job's mean step there less "
                      "its baseline's"),
    ("loss_gap_ms", "the budget's loss less loss_apart_ms, over launches (each launch's measured step less its step "
                    "timed apart, job against baseline)"),
)


def _with_interval(lines) -> tuple[Column, ...]:
    """Each (column, meaning) of a budget's time in ms, with its Welch interval's ends over launches."""
    return tuple(c for name, meaning in lines for c in (
        _c(name, "ms", "budget", meaning),
        _c(f"{name}_low", "ms", "budget", f"{name}'s 95 % interval over launches (Welch: the job's against the "
                                          "baseline's), low end"),
        _c(f"{name}_high", "ms", "budget", f"{name}'s 95 % interval, high end")))

#: every column summarize() adds to a job's spec fields, grouped by stage
MEASURED: tuple[Column, ...] = (
    _c("key", "text", "launch", "the job's stable key (a hash of its spec)"),
    _c("per_rank_batch", "samples", "launch", "samples each rank trains per micro-step (at a fixed global batch, "
                                               "micro_batch: per optimizer step, in micro-steps of micro_batch)"),
    _c("global_batch", "samples", "launch", "samples the whole job trains per optimizer step"),
    _c("accumulation", "count", "launch", "micro-steps a rank trains per optimizer step: grad_accum, or at a fixed "
                                          "global batch batch_size / (micro_batch x world_size)"),
    _c("params", "count", "launch", "the model's trainable parameters"),
    _c("status", "text", "launch", "ok only if every launch finished; else the first bad launch's: failed, "
                                   "timed_out, skipped"),
    _c("error", "text", "launch", "the first launch that did not finish: its repeat and error (None if all did)"),
    _c("repeats_ok", "count", "launch", "launches that finished"),
    _c("oversubscribed", "bool", "launch", "a CPU job with more busy threads (world size x threads) than cores"),
    _c("cores", "count", "launch", "usable cores of the machine it ran on (the most of any launch)"),
    _c("contention_cores", "cores", "launch", "CPU other processes and the hypervisor took during its launches' "
                                              "measured steps, the mean over launches (analysis.core.machine)"),
    _c("contended_launches", "count", "launch", f"launches whose measured steps ran beside {CONTENDED_CORES:g} "
                                                "cores or more of other processes' and the hypervisor's time"),
    _c("wall_s", "s", "launch", "wall time of all its launches together"),
    # the measured steps
    _c("step_ms_median", "ms", "steps", "median step time (slowest rank per step): describes the spread"),
    _c("step_ms_iqr", "ms", "steps", "interquartile range of the step times: the noise"),
    _c(STEP_MS, "ms", "steps", "mean step time (each launch's slowest rank's window): THE job's step time everywhere"),
    _c(SAMPLES_PER_S, "samples/s", "steps", "throughput: global batch / mean step time"),
    _c("launch_step_ms", "ms list", "steps", "each finished launch's mean step time"),
    # the timed phases (declared in ddpbench.results.phases)
    *(_c(phase.column, "ms", "steps", phase.meaning) for phase in TIMED),
    _c("nosync_step_ms", "ms", "steps", "mean step time under no_sync(): the step without gradient communication"),
    _c(EXPOSED_COMM_MS, "ms", "steps", BY_COLUMN[EXPOSED_COMM_MS].meaning),
    _c("exposed_comm_share", "ratio", "steps", "exposed_comm_ms / step_ms_mean"),
    _c("data_share", "ratio", "steps", "data_ms / step_ms_mean"),
    _c("noisy", "bool", "steps", f"step_ms_iqr / step_ms_median above {100 * NOISE_THRESHOLD:.0f} %"),
    # intervals over launches
    _c("samples_per_s_low", "samples/s", "intervals", "throughput's 95 % interval, low end (NaN for one launch)"),
    _c("samples_per_s_high", "samples/s", "intervals", "throughput's 95 % interval, high end"),
    _c("step_ms_mean_low", "ms", "intervals", "mean step time's 95 % interval, low end"),
    _c("step_ms_mean_high", "ms", "intervals", "mean step time's 95 % interval, high end"),
    _c("exposed_comm_ms_low", "ms", "intervals", "exposed_comm_ms's 95 % interval over launches (each launch's mean "
                                                 "step - its mean no_sync() step), low end"),
    _c("exposed_comm_ms_high", "ms", "intervals", "exposed_comm_ms's 95 % interval, high end"),
    _c("exposed_comm_share_low", "ratio", "intervals", "exposed_comm_ms_low / step_ms_mean"),
    _c("exposed_comm_share_high", "ratio", "intervals", "exposed_comm_ms_high / step_ms_mean"),
    _c("ci_halfwidth_pct", "%", "intervals", "half the throughput interval's width, in % of the throughput"),
    _c("ci_reached", "bool", "intervals", 'repeats = "auto": whether the interval got within ci_target_pct'),
    _c("repeats_bound", "text", "intervals", 'repeats = "auto", target missed: what stopped it, max_repeats or '
                                             "budget"),
    # the ranks' records: each declared figure's own columns, then those made of several
    *(Column(name, unit, meaning, "ranks") for figure in SUMMARIZED for name, unit, meaning in figure.columns()),
    _c("sent_mb_per_step_max", "MB", "ranks", "bytes the busiest rank sent per optimizer step"),
    _c("recv_mb_per_step_max", "MB", "ranks", "bytes the busiest rank received per optimizer step"),
    _c("sent_mb_per_step_median", "MB", "ranks", "bytes the median rank sent per optimizer step"),
    _c("ddp_comm_ms", "ms", "ranks", "DDP's own logged backward communication time (median rank, sampled)"),
    _c("overlap_pct", "%", "ranks", "share of DDP's logged communication that ran while backward computed"),
    _c("unused_param_mb", "MB", "ranks", "parameters in DDP's buckets that got no gradient"),
    _c("buckets", "count", "ranks", "gradient buckets DDP made"),
    _c("bucket_layout", "bytes list", "ranks", "each bucket's bytes, in DDP's order: same layout, same setting"),
    # precision and compile
    _c("compile_s_cold", "s", "precision", "compile time with the job's compile cache cold (median rank)"),
    _c("compile_s_warm", "s", "precision", "compile time with the cache warm (later repeats)"),
    _c("compile_launches_cold", "count", "precision", "launches that found the compile cache cold"),
    _c("compile_launches_warm", "count", "precision", "launches that found the compile cache warm"),
    _c("compiled_graphs", "count", "precision", "graphs torch.compile made (worst rank)"),
    _c("graph_breaks", "count", "precision", "graph breaks (worst rank)"),
    _c("ddp_optimizer_subgraphs", "count", "precision", "subgraphs DDPOptimizer split the graph into at buckets"),
    _c("recompiles_after_compile_phase", "count", "precision", "recompiles during the measured steps (worst rank)"),
    # the trace
    _c("trace_comm_ms", "ms", "trace", "traced communication per step, as the last rank to finish computing saw it"),
    _c("trace_exposed_comm_ms", "ms", "trace", "the part of it that rank's backward compute did not cover"),
    _c("trace_overlap_pct", "%", "trace", "the part it did cover, in % of trace_comm_ms"),
    _c("trace_wait_ms", "ms", "trace", "how much earlier the other ranks' backward compute ended (mean)"),
    _c("trace_backward_compute_ms", "ms", "trace", "that rank's backward compute, first op to last"),
    _c("trace_steps_read", "count", "trace", "traced steps the trace figures are over"),
    _c("trace_steps_partial", "count", "trace", "traced steps left out: some rank or its backward missing"),
    _c("trace_step_ms", "ms", "trace", "mean step time of the traced steps"),
    _c("trace_overhead_pct", "%", "trace", "what tracing cost a step: trace_step_ms against step_ms_mean"),
    _c("trace_mb", "MB", "trace", "the trace files of one launch, every rank's (median launch)"),
    _c("ddp_exposed_comm_ms", "ms", "trace", "DDP's logged communication not overlapped: ddp_comm_ms x (1 - "
                                             "overlap_pct)"),
    _c("nosync_backward_ms", "ms", "trace", "backward per micro-step under no_sync(), set against the trace's"),
    _c("exposed_disagree", "bool", "trace", f"two measures of exposed communication differ by more than "
                                          f"{100 * DISAGREE:.0f} % of the larger"),
    _c("exposed_trusted", "text", "trace", "which measure of exposed communication to trust: no_sync or trace"),
    _c("exposed_reason", "text", "trace", "why that one; for a script job whose no-sync steps all-reduced, why its "
       "exposed communication is withheld"),
    # the equivalence check
    _c("max_abs_diff", "number", "check", "largest parameter difference from single-process training, over launches"),
    _c("exact", "bool", "check", "an exact strategy in fp32, held to its tolerance; False: lossy by design"),
    _c("check_skipped", "text", "check", "why the equivalence check did not run (None where it did)"),
    _c("checked_in_job", "text", "check", "the job (key) whose check stands for this one's, which did not run its own: "
       "they differ only in what does not change the check; max_abs_diff and exact are that job's"),
    # compute
    _c("flops_per_step", "FLOP", "compute", "FLOPs one process computes per optimizer step"),
    _c("flops_source", "text", "compute", "counted (PyTorch's counter) or the workload's own figure"),
    _c("tensors", "count", "compute", "trainable tensors (gradients DDP buckets)"),
    _c("tensor_bytes", "bytes list", "compute", "each trainable tensor's gradient bytes, in registration order"),
    _c("achieved_tflops", "TFLOP/s", "compute", "flops_per_step over the mean step, per process"),
    _c("total_tflops", "TFLOP/s", "compute", "achieved_tflops x processes: the job's"),
    _c("gemm_peak_tflops", "TFLOP/s", "compute", "the GEMM peak each rank measured at start (median rank)"),
    _c("peak_method", "text", "compute", "how that peak was measured"),
    _c("compute_efficiency", "ratio", "compute", "achieved_tflops / gemm_peak_tflops"),
    _c("mfu", "ratio", "compute", "achieved_tflops / the experiment's datasheet_tflops (NaN without one)"),
    # stragglers
    _c("straggler_ranks", "rank list", "stragglers", "ranks whose compute was consistently slower than the others'"),
    _c("straggler_pct", "%", "stragglers", "the slowest rank's median compute beyond the others' median"),
    _c("straggler_excess_ms", "ms", "stragglers", "that excess in ms: what the others wait for it each step"),
    _c("barrier_rank", "index", "stragglers", "the rank most often last to have its gradients ready (ready_ms of the "
                                              "measured steps; NaN without ready_ms)"),
    _c("barrier_last_share", "ratio", "stragglers", "share of the steps that rank was last"),
    _c("barrier_wait_ms", "ms", "stragglers",
       "mean over the steps of the last rank's ready_ms beyond the others' mean: what a step waited at the barrier"),
    _c("barrier_rank_wait_ms", "ms", "stragglers", "mean, over the steps that rank was last, of how much later it was "
                                                   "ready"),
    _c("barrier_launch_ranks", "rank list", "stragglers", "each launch's rank most often last, in launch order"),
    _c("barrier_cause", "text", "stragglers", f"data, compute or placement, for a rank named (last in a share >= "
                                              f"{NAMED_SHARE:g} of the steps, by >= {NAMED_WAIT:g} of the mean step); "
                                              "None otherwise"),
    _c("barrier_cause_detail", "text", "stragglers", "the figures the cause rests on, in words (or why no rank is "
                                                     "named)"),
    # speedup against the world-size-1 baseline
    _c(SPEEDUP, "ratio", "speedup", "samples_per_s / the world-size-1 baseline's"),
    _c(EFFICIENCY, "ratio", "speedup", "speedup / world_size"),
    _c("serial_fraction", "ratio", "speedup", "Karp-Flatt's experimentally determined serial fraction"),
    *(_c(f"{name}_{end}", "ratio", "speedup", f"{name}'s 95 % interval over launches, {end} end")
      for name in (SPEEDUP, EFFICIENCY, "serial_fraction") for end in ("low", "high")),
    _c("baseline_key", "text", "speedup", "the key(s) of the world-size-1 job(s) speedup is against"),
    _c("baseline_problem", "text", "speedup", "why that baseline cannot be trusted, in words (empty where it can)"),
    # the loss budget against that baseline
    _c("budget_baseline_ms", "ms", "budget", "the baseline's mean step (strong scaling: over world_size, the ideal "
                                             "split)"),
    *_with_interval(_BUDGET_LINES),
    _c("budget_top", "text", "budget", f"the largest line of {', '.join(RECOVERABLE)} (None without a budget)"),
    _c("budget_note", "text", "budget", "why there is no budget, or what its lines come from"),
    # the loss timed apart (a traced or script job whose baseline has the same): a second total for the budget
    *_with_interval(_APART),
    _c("loss_apart_source", "text", "budget", "trace (the traced steps, the profiler's clock) or phases (a script's "
                                              "steps its phases were timed on); None where no total was timed apart"),
    # what it costs at the price given ([cost] or --price-per-device-hour): NaN without one
    _c("devices", "count", "cost", "devices the job pays for: its GPUs (world size x GPUs per process), on CPU its "
                                   "ranks"),
    _c("nodes", "count", "cost", "nodes it pays for: emulate_nodes, else 1"),
    _c("price_per_hour", "price/hour", "cost", "devices x price_per_device_hour + nodes x price_per_node_hour"),
    _c("cost_per_sample", "price/sample", "cost", "price_per_hour x step_ms_mean / 3.6e6 / global_batch"),
    _c("cost_per_sample_low", "price/sample", "cost", "cost_per_sample's 95 % interval (the mean step's), low end"),
    _c("cost_per_sample_high", "price/sample", "cost", "cost_per_sample's 95 % interval, high end"),
    _c("cost_per_million_samples", "price", "cost", "cost_per_sample x 10^6"),
    _c("time_to_train_h", "h", "cost", "hours to train the [cost] samples (a million where it names none): samples / "
                                       "samples_per_s"),
    _c("time_to_train_h_low", "h", "cost", "time_to_train_h's 95 % interval (the mean step's), low end"),
    _c("time_to_train_h_high", "h", "cost", "time_to_train_h's 95 % interval, high end"),
    _c("cost_to_train", "price", "cost",
       "what training those samples costs: samples x cost_per_sample (NaN without a price)"),
    _c("cost_to_train_low", "price", "cost", "cost_to_train's 95 % interval, low end"),
    _c("cost_to_train_high", "price", "cost", "cost_to_train's 95 % interval, high end"),
    _c("meets_deadline", "bool", "cost", "the whole interval of time_to_train_h within deadline_h (False: wholly past "
                                         "it; None: across it, or no deadline)"),
)

#: every column of the summary, by name: the spec fields, then the measured ones
COLUMNS: dict[str, Column] = {c.name: c for c in (*_spec_columns(), *MEASURED)}


def markdown_table(columns=MEASURED) -> str:
    """The measured columns as the Markdown table docs/results.md shows (column, unit, from, meaning)."""
    lines = ["| column | unit | from | meaning |", "|---|---|---|---|"]
    for c in columns:
        lines.append(f"| `{c.name}` | {c.unit} | {c.stage} | {c.meaning.replace('|', '/')} |")
    return "\n".join(lines) + "\n"
