"""The console's answers of ``whatif`` and ``tune``: the what-if model's step, band and cost at each world
size (for a model, or each workload a sweep measured), and the race's verdict. The model beside published
scaling (``whatif --validate``) is one of the console's tables:
:func:`ddpbench.show.console_tables.print_validation`."""

from __future__ import annotations

from ddpbench.show.console import num, table_console

#: the devices whatif names the inter-node rate for (the largest whole nodes up to it where --gpus-per-node is typed)
RATE_AT = 1024


def print_search(result: dict) -> None:
    """tune's verdict: every candidate with its launches and throughput, the winner, the tied, and
    what the race spent against the grid."""
    from rich.table import Table

    from ddpbench.analysis.history import standing

    basis = {t["setting"]: t.get("basis", "") for t in result["tied"]}
    tied = set(basis)
    out = Table(title="the race (samples/s over each setting's launches)")
    for col in ("setting", "launches", "samples/s", "verdict"):
        out.add_column(col, justify="right" if col in ("launches", "samples/s") else "left")
    for c in sorted(result["candidates"], key=lambda c: -(c["samples_per_s"] or 0)):
        out.add_row(c["setting"], str(c["launches"]), num(c["samples_per_s"], ".1f"),
                    standing(c, result["winner"], basis))
    for same in result["same_buckets"]:
        out.add_row(same["setting"], "0", "-", f"not run: predicted to make the same buckets as {same['as']}")
    console = table_console()
    console.print(out)
    low, high = result["winner_interval"]
    console.print(f"fastest: {result['winner']}, {result['winner_samples_per_s']:.1f} samples/s (95 % interval "
                  f"{num(low, '.1f')} to {num(high, '.1f')})"
                  + (f"; not told apart from it: {', '.join(sorted(tied))}" if tied
                     else "; every other setting told apart from it")
                  + f". The race spent {result['launches']} launches; the grid would have spent "
                  f"{result['grid_launches']} (budget {result['budget']}).", highlight=False, soft_wrap=True)


def print_whatif(args, what: str, work, cluster, costs=None, sources: dict | None = None, own=None) -> None:
    """``whatif``'s answer for one workload: the model's step and efficiency at each world size with its band
    (the held-out error on published scaling, leave-one-source-out), whether its state fits a device's memory, and
    with a batch and a price (or a run's samples) the hours and cost of training at each; sizes in whole nodes where
    ``--gpus-per-node`` was typed (:mod:`ddpbench.show.fit`). ``sources``: where the rank spread and the half-rate
    size came from, where not from the published fit; ``own``: for a measured folder, (its own hold-out check's band
    or None, why none), whose band is used where narrower (:func:`ddpbench.show.fit.chosen_band`), said in one line."""
    import math

    from ddpbench.analysis.models import (
        COSTS,
        LIMIT,
        WORLD_SIZES,
        Amount,
        band_words,
        costs_words,
        ddp_step,
        finish_at,
        largest_world_size,
        link_needed,
        master_step,
        why_no_rate,
    )
    from ddpbench.analysis.summary import MILLION
    from ddpbench.show.finish import print_finish
    from ddpbench.show.fit import (
        assumed_words,
        chosen_band,
        fit_cell,
        fit_words,
        largest_words,
        memory_for,
        whole_nodes,
    )

    sizes = getattr(args, "world_sizes", None) or WORLD_SIZES
    per, memory = whole_nodes(args), memory_for(args, work)
    costs = costs if costs is not None else COSTS
    sources = sources or {}
    settings = [f"{work.grad_dtype} gradients"] + ([f"{work.accumulation} micro-steps per optimizer step"]
                                                   if work.accumulation > 1 else [])
    settings += [f"sharded: {work.shard}"] if work.shard != "none" else []
    settings += [f"input pipeline {work.feed_ms:.3g} ms per device batch"] if work.feed_ms else []
    print(f"model output for {what}: {sum(work.bucket_bytes) / 1e6:.1f} MB of gradients (fp32), {work.compute_ms:.4g} "
          f"ms of compute per device, {', '.join(settings)}; {args.gpus_per_node} devices a node at "
          f"{args.intra_gbit:g} Gbit/s, nodes at {args.inter_gbit:g} Gbit/s ({cluster.transport}"
          + (f", {cluster.oversubscription:g}:1 beyond {cluster.leaf_nodes} node(s)" if cluster.oversubscription > 1
             else "") + ")")
    print(costs_words(costs, sources))
    print(band_words())
    print(memory.words())
    assumed = assumed_words(args)
    if assumed:
        print(assumed)
    cost, batch = args.cost, getattr(args, "batch", None)
    amount = getattr(args, "amount", None)
    if amount is None and batch is not None and cost.priced:  # a price alone: the cost of a million samples
        amount = Amount(samples=MILLION)
    steps = [(ddp_step(work, p, cluster, args.algorithm, costs), master_step(work, p, cluster, costs)) for p in sizes]
    # every term the step holds somewhere, each with its share of the step: they sum to it
    shown = [name for name in steps[0][0].terms() if any(step.terms()[name] for step, _ in steps)]
    print(f"the step is the sum of its terms: {', '.join(shown)} (ms, and each one's share of the step)")
    checked = memory.device_gb is not None  # a column of whether each size fits, where the memory is known
    print(f"{'devices':>8}" + (f" {'nodes':>6}" if per > 1 else "") + f" {'step ms':>9}"
          + "".join(f" {name:>15}" for name in shown) + f" {'comm ms':>9} {'eff.':>6} {'band':>11} {'master eff.':>12}"
          + (f" {'state GB':>9} {'fits':>5}" if checked else "") + "  algorithms")
    mine_band, why = own if own is not None else (None, "")
    used = []
    for p, (step, master) in zip(sizes, steps):
        low_pp, high_pp, by_own = chosen_band(work, cluster, p, step.efficiency, mine_band)
        used += [p] if by_own else []
        shown_band = "-" if p == 1 else (f"{max(100 * step.efficiency + low_pp, 0):.0f}-"
                                         f"{min(100 * step.efficiency + high_pp, 100):.0f}%")
        terms = "".join(f" {step.terms()[name]:>9.1f} {step.terms()[name] / step.step_ms:>5.0%}" for name in shown)
        print(f"{p:>8}" + (f" {p // per:>6}" if per > 1 else "") + f" {step.step_ms:>9.1f}{terms} {step.comm_ms:>9.1f} "
              f"{step.efficiency:>6.0%} {shown_band:>11} {master.efficiency:>12.0%}"
              + (f" {memory.state_gb(p):>9.3g} {fit_cell(memory, p):>5}" if checked else "") + f"  {step.algorithms}")
    said = fit_words(memory, sizes)
    if said:
        print(said)
    if own is not None:
        from ddpbench.analysis.models import own_band_words

        print(own_band_words(mine_band, used, why))
    if amount is not None and batch is not None:  # every device trains its batch each micro-step
        rows = []
        for p, (step, _) in zip(sizes, steps):
            nodes = math.ceil(p / cluster.gpus_per_node)
            low_pp, high_pp, _ = chosen_band(work, cluster, p, step.efficiency, mine_band)
            rows.append(finish_at(p, nodes, step.step_ms, step.efficiency, None if p == 1 else
                                  (low_pp, high_pp), amount, batch, work.accumulation,
                                  cost.hourly(p, nodes) if cost.priced else None))
        print_finish(args, rows, cost.currency, f"{amount.words(batch, work.accumulation)}"
                     + (f", at {cost.described()}" if cost.priced else ""), memory)
    target = args.target_efficiency
    largest = largest_world_size(work, cluster, target, args.algorithm, limit=LIMIT, costs=costs, per=per)
    print(f"{largest_words(largest, target, memory, per, LIMIT)}; "
          f"{band_range(work, cluster, target, args, costs, per, memory)}")
    many = per * (RATE_AT // per)  # in whole nodes where they were typed
    needed = link_needed(work, many, cluster, target, args.algorithm, costs)
    print(f"inter-node rate {many} devices need for {target:.0%}: "
          + (f"{needed:.3g} Gbit/s" if needed != float("inf")
             else why_no_rate(work, many, cluster, target, args.algorithm, costs)))


def band_range(work, cluster, target: float, args, costs, per: int = 1, memory=None) -> str:
    """The largest world size at ``target`` as the band reads it: where even its low end reaches the target,
    and where its high end does (a point prediction is no surer than the model's held-out error); each size's band
    conditioned on the step (:func:`ddpbench.analysis.models.band_at`); in whole nodes of ``per`` devices where
    above 1; never a size whose state does not fit ``memory`` (:class:`ddpbench.analysis.models.Memory`)."""
    from ddpbench.analysis.models import LIMIT, largest_within

    low, high = (largest_within(work, cluster, target, end, args.algorithm, costs, per=per) for end in ("low", "high"))
    top = f"{high}" + (" or more (the model's limit)" if high + per > LIMIT else "")
    first = 2 if per == 1 else per
    if memory is not None and memory.fits(high) is False:  # nor any smaller size: the state shrinks with the devices
        return f"within the band, none that fits ({high} at its high end; its state does not fit a device there)"
    if high == 0:  # whole nodes: even one node's band misses it
        return f"within the band, no size reaches it (even its high end misses {target:.0%} at one node, {per})"
    return ("within the band, " + (f"{low} to {top}" if low >= first else
                                   f"no size is sure (its low end misses {target:.0%} at {first}), {top} at its high "
                                   "end"))


def settings(args, batch: int | None) -> dict:
    """The Work fields whatif's flags set: gradient dtype, accumulation, sharding, the input pipeline (the
    node's, for one device's batch)."""
    feed = batch / args.input_samples_per_s * 1e3 if args.input_samples_per_s is not None and batch else 0.0
    return {"grad_dtype": args.grad_dtype, "accumulation": args.accumulation, "shard": args.shard, "feed_ms": feed}


def print_from(options, found, folder, cluster) -> None:
    """``whatif --from``'s answer: each workload the sweep measured, with the rank spread and the all_reduce
    curve it measured (unless given), why it differs from the report's projection, and what the loss budget
    says of a device per rank. ``options``: whatif's flags, a frozen value
    (:class:`ddpbench.cli.shared.parsing.Options`); ``found`` and ``folder``: what the command read
    (:mod:`ddpbench.cli.shared.measured`)."""
    from ddpbench.analysis.diagnosis import cluster_words
    from ddpbench.analysis.models import COSTS, Work, measured_terms, versus_report, with_inputs
    from ddpbench.files.sanitize import printable, without_controls

    summary = folder.summary
    for measured in found:
        compute = options.compute_ms if options.compute_ms is not None else measured.compute_ms
        mine = trained(options, measured).but(batch=options.batch_size or measured.per_rank_batch)  # a device's
        work = Work(compute_ms=compute, bucket_bytes=measured.bucket_bytes, backward_share=measured.backward_share,
                    **settings(mine, mine.batch))
        costs, sources = with_inputs(COSTS, mine.rank_spread_pct, mine.half_rate_mb, measured_terms(folder, measured))
        print_whatif(mine, f"{printable(measured.label)} as measured in {mine.from_dir} (DDP's own buckets at "
                     f"{measured.bucket_cap_mb:g} MB, backward {measured.backward_share:.0%} of the step)", work,
                     cluster, costs, sources, own=folder_band(folder, measured))
        print(without_controls(versus_report(measured, compute)))  # it names the stored workload
        job = summary[summary["key"] == measured.job_key] if measured.job_key and "key" in summary else []
        words = cluster_words(job.iloc[0]) if len(job) else ""
        if words:  # this model gives every device the compute alone: what the budget says of that
            print(f"of the loss budget measured at world size {measured.measured_world_size}: {words}")


def trained(options, measured):
    """``options`` with the optimizer ``measured``'s jobs trained with, where not typed (its memory counts that
    optimizer's state), said where it came from."""
    from ddpbench.analysis.models import counted_optimizer

    typed = options.optimizer if "optimizer" in options.given else None
    optimizer, source = counted_optimizer(typed, measured.optimizer)
    return options.but(optimizer=optimizer, optimizer_source=source) if source else options


def folder_band(folder, measured) -> tuple:
    """(the band of the folder's own hold-out check of ``measured``'s workload on this machine, or None; why none)
    (:func:`ddpbench.analysis.models.own_band`)."""
    from ddpbench.analysis.models import MIN_WORLD_SIZES, own_band

    checks = folder.model.holdout
    mine = checks[(checks["workload"] == measured.label) & (checks["network"] == "this machine")] \
        if len(checks) else checks
    if mine.empty:
        return None, f"not checked: measured at fewer than {MIN_WORLD_SIZES} world sizes (one alone, one to fit the " \
                     "link to, one to hide)"
    return own_band(mine), "its check did not hold"


def print_traces(jobs: list) -> None:
    """``traces``' answer for each job of a trace folder: where its step went (median over steps and its
    interval), what to change, and what the traces cannot tell."""
    import math

    from rich.markup import escape
    from rich.table import Table

    from ddpbench.traces.answers import CONFIDENCE

    console = table_console()
    for job in jobs:
        steps = job.steps["step"].nunique() if len(job.steps) else 0
        out = Table(title=f"{job.name}: {len(job.ranks)} of {job.world_size} ranks, {steps} steps "
                          f"({job.backend or 'backend not named'}, {job.device})")
        for col in ("line", "ms per step", f"{100 * CONFIDENCE:.0f} % interval", "share"):
            out.add_column(col, justify="left" if col == "line" else "right")
        for _, r in job.budget.iterrows():
            if r["untold"]:  # a figure the clocks cannot give: said, never a measured zero
                out.add_row(escape(r["label"]), "-", escape(r["untold"]), "-")
                continue
            interval = "-" if not math.isfinite(r["low_ms"]) else f"{r['low_ms']:.2f} to {r['high_ms']:.2f}"
            out.add_row(escape(r["label"]), num(r["median_ms"], ".2f"), interval, num(100 * r["share"], ".1f") + " %")
        console.print(out)
        console.print(f"clocks: {clock_words(job)}", highlight=False, soft_wrap=True, markup=False)
        for a in job.advice:
            head = "change" if a["sure"] else "cannot tell: the likeliest is"
            console.print(f"{head}: {a['label']}, {a['median_ms']:.2f} ms a step ({100 * a['share']:.1f} %): "
                          f"{a['change']}", highlight=False, soft_wrap=True, markup=False)
        if not job.advice and steps and math.isfinite(job.budget["low_ms"].iloc[0]):
            console.print("nothing to change stands out past its threshold over its whole interval",
                          highlight=False, markup=False)
        for note in job.notes:
            console.print(f"note: {note}", highlight=False, soft_wrap=True, markup=False)


def clock_words(job) -> str:
    """How far the job's ranks' clocks can be compared, in ms as the budget is (the console's and the page's
    words)."""
    clock = job.clock
    if len(job.ranks) < 2:
        return "one rank's trace: no rank's time is compared with another's"
    if clock.get("one_host"):
        return "every trace names one host, so the ranks share its clock"
    if not clock.get("aligned"):
        return (f"not aligned: the ranks ran {clock.get('why')}, so no time of one rank is compared with "
                "another's")
    return (f"aligned on the collectives whose ends coincide (all-reduce, all-gather, reduce-scatter, barrier, "
            f"broadcast): the largest offset between hosts {clock['largest_offset_us'] / 1e3:.3g} ms, the "
            f"residual skew {clock['skew_us'] / 1e3:.3g} ms; a wait within it cannot be told")


def print_trace_comparison(comparisons: list) -> None:
    """``traces --before``: per job, the lines of the step (ms) and the kernels whose interval says they
    moved (µs a step), each figure with its unit, each kernel under a name of its own; above the table,
    the differences between the two jobs it was asked to compare despite (``--compare-anyway``); a folder
    against itself, in one line."""
    import math

    from rich.markup import escape
    from rich.table import Table

    from ddpbench.traces.compare import ANYWAY, DIFFERS

    console = table_console()
    for c in comparisons:
        if "itself" in c:
            console.print(f"before and after: {c['itself']}", highlight=False, markup=False, soft_wrap=True)
            continue
        if c.get("overridden"):
            console.print(f"compared although these are not runs of one job ({ANYWAY}): {'; '.join(c['overridden'])}",
                          highlight=False, markup=False, soft_wrap=True)
        out = Table(title=f"{c['after']} against {c['before']} (medians over steps; the after-minus-before shift "
                          "and its 95 % interval)")
        for col in ("line or kernel", "before", "after", "shift", "interval", "verdict"):
            out.add_column(col, justify="left" if col in ("line or kernel", "verdict") else "right", overflow="fold")
        lines = c["lines"]
        kernels = c["kernels"][c["kernels"]["verdict"] == DIFFERS] if len(c["kernels"]) else c["kernels"]
        for unit, table in (("ms", lines), ("µs", kernels)):
            for _, r in table.iterrows():
                interval = "-" if math.isnan(r["low"]) else f"{r['low']:+.3f} to {r['high']:+.3f} {unit}"
                before, after, shift = (num(r[k], f) + f" {unit}" if math.isfinite(r[k]) else "-"
                                        for k, f in (("before", ".3f"), ("after", ".3f"), ("change", "+.3f")))
                out.add_row(escape(str(r["label"])), before, after, shift, interval, r["verdict"])
        console.print(out)
        console.print("Two runs at two times are two machines: a line no change could move (the input pipeline "
                      "after a change of bucket size) that differs says the machine moved.", highlight=False,
                      markup=False, soft_wrap=True)
