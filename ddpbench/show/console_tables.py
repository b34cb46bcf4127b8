"""The console's tables, printed: the jobs an experiment holds, the summary of a sweep and its loss
budget, the verdict, the collectives, the comparison of two folders, the what-if model beside published
scaling (rich tables; a pipe gets full-width rows).

Each table is declared one column at a time (:class:`ddpbench.show.tables.Col`: heading, cell,
figures right-aligned), as the report's are: the jobs and the collectives here, the tables of what the
analysis found in :mod:`ddpbench.show.console_columns`. How a table is printed:
:mod:`ddpbench.show.console`. Light to import: what reads the analysis (those columns, the budget's
words) is imported as a table prints.
"""

from __future__ import annotations

from ddpbench.experiment.machine import oversubscribed
from ddpbench.experiment.spec import FIELDS
from ddpbench.files.sanitize import printable
from ddpbench.show.console import console_table, human_bytes, num, table_console
from ddpbench.show.tables import Col

#: the shown settings of the jobs an experiment holds; the "also" column names the others that differ
_JOB_FIELDS = ("strategy", "model", "model_size", "model_args", "script", "script_args", "world_size",
               "bucket_cap_mb", "batch_size", "threads_per_rank", "steps", "repeats")
#: the jobs an experiment holds, every column left-aligned (settings, not measurements)
JOBS = (
    Col("key", lambda s, _: s.key, numeric=False),
    Col("strategy", lambda s, _: s.strategy, numeric=False),
    Col("model", lambda s, _: s.model_label, numeric=False),
    Col("ws", lambda s, _: str(s.world_size), numeric=False),
    Col("bucket MB", lambda s, _: f"{s.bucket_cap_mb:g}", numeric=False),
    Col("batch/rank", lambda s, _: str(s.per_rank_batch), numeric=False),
    Col("threads", lambda s, _: str(s.threads_per_rank), numeric=False),
    Col("steps", lambda s, _: str(s.steps), numeric=False),
    Col("repeats", lambda s, _: str(s.repeats), numeric=False),
    Col("also", lambda s, jobs: " ".join(f"{name}={getattr(s, name)}" for name in jobs.others), numeric=False,
        when=lambda jobs: bool(jobs.others)),
    Col("note", lambda s, jobs: "oversubscribed" if oversubscribed(s, jobs.machine) else "", numeric=False),
)


class Jobs:
    def __init__(self, experiment, machine):
        self.machine = machine
        # the other fields whose value differs between jobs: without them two rows would read alike
        self.others = [name for name in FIELDS if name not in _JOB_FIELDS
                       and len({str(getattr(s, name)) for s in experiment.jobs}) > 1]



class Collectives:
    """One row of the collectives' table: an op at a placement and world size, its largest size, its best."""

    def __init__(self, key, part):
        (self.op, self.placement, self.ws), self.part = key, part
        self.last, self.best = part.loc[part["size_bytes"].idxmax()], part.loc[part["busbw_gbps"].idxmax()]


#: per op and world size: bus bandwidth at the largest size and at its best, and wrong elements
COLLECTIVES = (
    Col("op", lambda g, _: g.op, numeric=False),
    Col("placement", lambda g, _: g.placement, numeric=False),
    Col("ws", lambda g, _: str(g.ws)),
    Col("largest size", lambda g, _: human_bytes(g.last["size_bytes"])),
    Col("time us", lambda g, _: f"{g.last['time_us_median']:.1f}"),
    Col("busbw", lambda g, _: f"{g.last['busbw_gbps']:.3f}"),
    Col("best busbw", lambda g, _: f"{g.best['busbw_gbps']:.3f}"),
    Col("at size", lambda g, _: human_bytes(g.best["size_bytes"])),
    Col("wrong", lambda g, _: str(int(g.part["wrong"].sum()))),
)


def print_jobs(experiment, machine) -> None:
    title = f"{experiment.name}: {len(experiment.jobs)} jobs ({experiment.source})"
    table_console().print(console_table(title, JOBS, experiment.jobs, Jobs(experiment, machine)))


def print_summary(table, wide: bool = False) -> None:
    """The sweep's summary, a row a job: within :data:`~ddpbench.show.console.NARROW` columns, or with
    ``wide`` every column (the IQR, traffic and equivalence figures besides)."""
    from ddpbench.show.budget import comm_marks
    from ddpbench.show.console_columns import SUMMARY, Sweep

    if table.empty:
        return
    ok = bool((table["status"] == "ok").all())
    marks = comm_marks(table)
    title = ("mean step (slowest rank) per job; speedup vs 1 rank"
             + (f"; {marks}" if marks else "")
             + ("; IQR of the steps" if wide else ("; all ok" if ok else "") + "; --wide: all columns"))
    console = table_console(wide)
    console.print(console_table(title, SUMMARY, [r for _, r in table.iterrows()], Sweep(table, wide), wide,
                                console.width))


def budget_lines(table) -> list[str]:
    """One line per multi-rank job with its loss budget (``loss 47.0 ms over baseline 39.1: contention 23.6,
    ...``); one line saying there is none where the summary lacks the budget's columns."""
    from ddpbench.analysis.core import describe, label_fields, ordered
    from ddpbench.show.budget import NO_BUDGET_COLUMNS, budget_rows, console_line, has_budget_columns, multi_rank_jobs

    if multi_rank_jobs(table).empty:
        return []
    if not has_budget_columns(table):
        return [NO_BUDGET_COLUMNS]
    fields = [*(f for f in label_fields(table) if f != "world_size"), "world_size"]
    return [printable(f"{describe(r, fields, table)}: {console_line(r)}")
            for _, r in ordered(budget_rows(table)).iterrows()]


def print_verdict(table, lines, answers=(), verbose: bool = False, wide: bool = False) -> None:
    """After the summary table, on standard output: each job's loss budget, then the verdict as its answer
    table (:func:`ddpbench.analysis.diagnosis.verdict.answers`; at most NARROW columns unless ``wide``), and
    its sentences with ``verbose`` (or where there is no table: every job failed)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from ddpbench.analysis.diagnosis import ANSWER_COLUMNS
    from ddpbench.show.budget import WITHIN_NOISE

    out = Console(highlight=False, soft_wrap=True)
    budget = budget_lines(table)
    if budget:
        out.print(f"loss budget (ms per step; {WITHIN_NOISE} within noise):", markup=False)
        for line in budget:
            out.print(f"  {line}", markup=False)
    if answers:
        grid = Table(title=None if verbose else "verdict (--verbose: in sentences)", title_justify="left",
                     show_lines=True)
        for name, ratio in zip(ANSWER_COLUMNS, (None, 5, 4, 2)):
            grid.add_column(name, overflow="fold", no_wrap=ratio is None, ratio=ratio)
        for a in answers:
            grid.add_row(*(Text(printable(cell)) for cell in (a.question, a.answer, a.sure, a.settle)))
        table_console(wide).print(grid)
    if lines and (verbose or not answers):
        out.print("verdict in sentences:" if answers else "verdict:")
        for label, text in lines:
            out.print(f"  {label}: {text}", markup=False)


def print_collectives(table) -> None:
    """Per op and world size: bus bandwidth at the largest size and at its best, and wrong elements."""
    ok = table[table["status"] == "ok"] if len(table) else table
    if ok.empty:
        return
    groups = [Collectives(key, part) for key, part in ok.groupby(["op", "placement", "world_size"], sort=False)]
    title = "collectives: busbw (GB/s) as nccl-tests defines it; slowest rank, median over iterations"
    table_console().print(console_table(title, COLLECTIVES, groups))


def print_comparison(table, wide: bool = False) -> None:
    from ddpbench.show.console_columns import COMPARISON, Compared

    compared = table[table["compared"]]
    if len(compared):
        title = "B against baseline A, per job (slowest rank, measured steps)" + ("" if wide else "; --wide for more")
        rows = [r for _, r in compared.iterrows()]
        console = table_console(wide)
        console.print(console_table(title, COMPARISON, rows, Compared(compared), wide, console.width))
    rest = table[~table["compared"]]
    for _, r in rest.iterrows():
        why = r["match"] if r["match"] != "both" else f"status A {r['status_a']}, B {r['status_b']}"
        print(printable(f"not compared: {r['job']} [{r['key']}]: {why}"))


def print_validation() -> int:
    """``whatif --validate``: the what-if model beside published scaling, leave-one-source-out
    (:func:`ddpbench.analysis.models.held_out`): one table per quantity (scaling efficiency, with each row's
    band; throughput at a 1 MB bucket cap against 25 MB), the held-out error and the band's coverage per source
    and over all of them, and the constants shipped. Returns the exit code."""
    from rich.console import Console
    from rich.table import Table

    from ddpbench.analysis.models import COSTS as costs
    from ddpbench.analysis.models import EFFICIENCY_QUANTITY, costs_words, held_out, score, validated

    found = validated()

    console = table_console()
    console = console if console.is_terminal else Console(width=220)  # its columns, unsqueezed in a pipe
    order = {"check": 0, "input": 1}
    found = found.assign(order=found["role"].map(lambda r: order.get(r, 2))).sort_values(["order", "source"],
                                                                                         kind="stable")
    reasons = {why: chr(ord("a") + i) for i, why in enumerate(dict.fromkeys(w for w in found["outside"] if w))}
    titles = {EFFICIENCY_QUANTITY: "scaling efficiency (%), published and the model's (held out: fitted without the "
                                   "row's source)",
              "throughput vs 25 MB (%)": "throughput at this bucket cap against 25 MB (%), published and the model's"}
    for quantity, title in titles.items():
        out = Table(title=title)
        for col in ("source", "model", "grads", "batch", "accum.", "GPUs", "against", "system", "net Gbit/s",
                    "aggregation", "published", "model", "band", "error pp", "role", "assumed"):
            out.add_column(col, no_wrap=col != "assumed", min_width=len(col), justify="right" if col in (
                "batch", "accum.", "GPUs", "net Gbit/s", "published", "model", "error pp") else "left")
        for _, r in found[found["quantity"] == quantity].iterrows():
            band = f"{r['low']:.0f}-{r['high']:.0f}" + (" in" if r["inside"] else " out") \
                if r["role"] == "check" and quantity == EFFICIENCY_QUANTITY else "-"
            out.add_row(r["source"], r["model"], r["grad_dtype"], str(r["batch"]), str(r["accumulation"]),
                        str(r["gpus"]), r["against"], r["system"],
                        num(float(r["network_gbit"]), "g") if r["network_gbit"] is not None else "-", r["aggregation"],
                        num(r["published"], ".1f"), num(r["predicted"], ".1f"), band, num(r["error_pp"], "+.1f"),
                        f"outside ({reasons[r['outside']]})" if r["outside"] else r["role"], r["assumed"] or "-")
        console.print(out)
    for why, letter in reasons.items():
        console.print(f"outside ({letter}): {why}", highlight=False)
    result = held_out()
    out = Table(title="leave-one-source-out: each source predicted from the constants fitted to the others")
    for col in ("source", "rows", "mean error pp", "largest pp", "band coverage"):
        out.add_column(col, justify="left" if col == "source" else "right")
    for source in sorted(result.costs):
        held = score(result.table, source)
        if held.rows:
            out.add_row(source, str(held.rows), f"{held.mean_pp:.1f}", f"{held.max_pp:.1f}", f"{held.coverage:.0%}")
    whole = score(result.table)
    out.add_row("all", str(whole.rows), f"{whole.mean_pp:.1f}", f"{whole.max_pp:.1f}", f"{whole.coverage:.0%}")
    console.print(out)
    console.print(f"leave-one-source-out error, scaling efficiency: mean {whole.mean_pp:.1f} pp, largest "
                  f"{whole.max_pp:.1f} pp over {whole.rows} held-out rows of {whole.sources} sources; the band (5th to "
                  f"95th percentile of the other sources' held-out errors of the same kind) covered "
                  f"{whole.coverage:.1%} of them: "
                  + "; ".join(f"{kind} {b.low_pp:+.1f} to {b.high_pp:+.1f} pp ({b.high_pp - b.low_pp:.1f} wide), "
                              f"{b.coverage:.1%} of {b.rows} rows" for kind, b in result.bands.items()),
                  highlight=False, soft_wrap=True)
    buckets = score(result.table, quantity="throughput vs 25 MB (%)")
    if buckets.rows:
        console.print(f"leave-one-source-out error, 1 MB vs 25 MB buckets: mean {buckets.mean_pp:.1f} pp, largest "
                      f"{buckets.max_pp:.1f} pp over {buckets.rows} rows", highlight=False)
    # a figure the folds do not resolve is said in words
    console.print(f"shipped constants, fitted to all {whole.sources} sources: "
                  + costs_words(costs, {}).removeprefix("costs of running distributed: "), highlight=False)
    return 0
