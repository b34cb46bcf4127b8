"""``whatif``'s answer at a fixed global batch (``--global-batch B --micro-batch b``, or a results folder swept at
one): per size the accumulation ``B / (b x devices)``, the global batch, the optimizer step, its exposed
communication, the samples/s and the efficiency with its band, beside the same job at weak scaling; where the
accumulation reaches 1 and what happens to the batch past it (:mod:`ddpbench.analysis.models.gbatch`)."""

from __future__ import annotations

from ddpbench.errors import InputError


def check(args) -> tuple[int, int, tuple[int, ...]]:
    """(the global batch, the micro-batch, the sizes) of ``args``; one line (:class:`InputError`, exit 2) for a
    batch below 1, a global batch smaller than a micro-batch on each device of the smallest size or not a whole
    number of micro-batches a device at a size below the one where the accumulation reaches 1."""
    from ddpbench.analysis.models import WORLD_SIZES, global_batch_problem

    for flag, value in (("--global-batch", args.global_batch), ("--micro-batch", args.micro_batch)):
        if value < 1:
            raise InputError("command line", flag, f"must be 1 or more (got {value})")
    sizes = tuple(args.world_sizes or WORLD_SIZES)
    found = global_batch_problem(args.global_batch, args.micro_batch, sizes)
    if found:
        raise InputError("command line", "--global-batch", found)
    return args.global_batch, args.micro_batch, sizes


def print_fixed_batch(args, what: str, work, cluster, costs=None, sources: dict | None = None, own=None) -> None:
    """``whatif --global-batch B --micro-batch b``'s answer for one workload (``work``: its compute a micro-step's)
    on ``cluster``: :func:`ddpbench.analysis.models.gbatch.fixed_batch_rows` per size, the band of each efficiency
    (:func:`ddpbench.show.fit.chosen_band`: the published one at each size's own accumulation, or ``own``, a
    folder's own hold-out check's band and why none, where narrower), the size where the accumulation reaches 1,
    what happens to the batch past it, and the largest size shown against the same job at weak scaling."""
    from ddpbench.analysis.models import (
        COSTS,
        band_words,
        costs_words,
        fixed_batch_rows,
        fixed_work,
        full_size,
        own_band_words,
        past_words,
    )
    from ddpbench.show.fit import assumed_words, chosen_band, fit_cell, fit_words, memory_for

    global_batch, micro, sizes = check(args)
    memory = memory_for(args, work)
    checked = memory.device_gb is not None
    costs = costs if costs is not None else COSTS
    print(f"model output at a fixed global batch of {global_batch:,} samples, micro-batches of {micro} a device "
          f"(accumulation = {global_batch:,} / ({micro} x devices), one all-reduce an optimizer step) for {what}: "
          f"{sum(work.bucket_bytes) / 1e6:.1f} MB of gradients (fp32"
          + (f", all-reduced in {work.grad_dtype}" if work.grad_dtype != "fp32" else "") + "), "
          f"{work.compute_ms:.4g} ms of compute a micro-step per device; {cluster.gpus_per_node} devices a node at "
          f"{cluster.intra_gbit:g} Gbit/s, nodes at {cluster.inter_gbit:g} Gbit/s ({cluster.transport})")
    print(costs_words(costs, sources or {}))
    print(band_words())
    print(memory.words())
    assumed = assumed_words(args)
    if assumed:
        print(assumed)
    frame = fixed_batch_rows(work, global_batch, micro, sizes, cluster, costs)
    print("eff.: the throughput against the devices times one device's (the step alone over the step), with its "
          "band (above; at each size's own accumulation); weak "
          f"eff.: the same job keeping one device's accumulation ({int(frame['accumulation'].iloc[0])} micro-steps) "
          "on every device, its global batch growing with them")
    print(f"{'devices':>8} {'accum.':>7} {'global batch':>13} {'step ms':>10} {'compute ms':>11} {'exposed ms':>11} "
          f"{'samples/s':>10} {'eff.':>6} {'band':>9} {'weak eff.':>10}" + (f" {'fits':>5}" if checked else ""))
    mine_band, why = own if own is not None else (None, "")
    bands, used = {}, []
    for _, r in frame.iterrows():
        p = int(r["devices"])
        low_pp, high_pp, by_own = chosen_band(fixed_work(work, global_batch, micro, p), cluster, p, r["efficiency"],
                                              mine_band)
        bands[p], used = (low_pp, high_pp), used + ([p] if by_own else [])
        shown = "-" if p == 1 else (f"{max(100 * r['efficiency'] + low_pp, 0):.0f}-"
                                    f"{min(100 * r['efficiency'] + high_pp, 100):.0f}%")
        print(f"{p:>8} {int(r['accumulation']):>7} {int(r['global_batch']):>13,} {r['step_ms']:>10.1f} "
              f"{r['compute_ms']:>11.1f} {r['exposed_ms']:>11.1f} {r['samples_per_s']:>10.4g} {r['efficiency']:>6.0%} "
              f"{shown:>9} {r['weak_efficiency']:>10.0%}" + (f" {fit_cell(memory, p):>5}" if checked else ""))
    said = fit_words(memory, sizes)
    if said:
        print(said)
    if own is not None:
        print(own_band_words(mine_band, used, why))
    print_fixed_finish(args, frame, global_batch, micro, cluster, memory, bands)
    full = full_size(global_batch, micro)
    print(f"the accumulation reaches 1 at {full:,} devices ({global_batch:,} = {micro} x 1 x {full:,})")
    past = past_words(global_batch, micro, sizes)
    if past:
        print(past)
    last = frame.iloc[-1]
    print(f"at {int(last['devices']):,} devices: {last['efficiency']:.0%} at the fixed global batch against "
          f"{last['weak_efficiency']:.0%} at weak scaling: "
          + ("below it, as each device's compute an optimizer step shrinks while its all-reduce keeps its size"
             if last["efficiency"] < last["weak_efficiency"] else "not below it"))


def print_fixed_finish(args, frame, global_batch: int, micro: int, cluster, memory, bands: dict) -> None:
    """The time to finish at the fixed global batch (:func:`ddpbench.show.finish.print_finish`) where a run's work
    or a price is given (a price alone: the cost of a million samples): each size's optimizer steps at its own
    accumulation, each figure with the band of its efficiency (``bands``: the table's, points below and above)."""
    import math

    from ddpbench.analysis.models import Amount, finish_at
    from ddpbench.analysis.summary import MILLION
    from ddpbench.show.finish import print_finish

    cost, amount = args.cost, args.amount
    if amount is None and cost.priced:
        amount = Amount(samples=MILLION)
    if amount is None:
        return
    rows = []
    for _, r in frame.iterrows():
        p = int(r["devices"])
        nodes = math.ceil(p / cluster.gpus_per_node)
        rows.append(finish_at(p, nodes, r["step_ms"], r["efficiency"], None if p == 1 else bands[p], amount, micro,
                              int(r["accumulation"]), cost.hourly(p, nodes) if cost.priced else None))
    print_finish(args, rows, cost.currency, amount.fixed_words(global_batch, micro)
                 + (f", at {cost.described()}" if cost.priced else ""), memory)


def print_fixed_from(args, found, folder, cluster) -> None:
    """``whatif --from FOLDER`` with a cluster: each workload swept at a fixed global batch projected at it (or at
    ``--global-batch``), and with ``--global-batch`` each other workload whose per-rank batch is the micro-batch;
    the rest as :func:`ddpbench.show.answers.print_from` gives them. ``args``: whatif's flags as a frozen value
    (:class:`ddpbench.cli.shared.parsing.Options`). One line (exit 2) for a micro-batch the folder did not measure."""
    from ddpbench.analysis.models import COSTS, Work, measured_terms, with_inputs
    from ddpbench.files.sanitize import printable
    from ddpbench.show.answers import folder_band, print_from, settings, trained

    for measured in found:
        global_batch = args.global_batch or measured.global_batch
        if not global_batch:
            print_from(args, [measured], folder, cluster)
            continue
        micro = args.micro_batch or measured.per_rank_batch
        if micro != measured.per_rank_batch:
            raise InputError("command line", "--micro-batch", f"{printable(measured.label)} was measured at "
                             f"{measured.per_rank_batch} samples a micro-step, the compute the projection takes; "
                             f"allowed here: {measured.per_rank_batch}")
        mine = trained(args, measured).but(global_batch=global_batch, micro_batch=micro)
        compute = args.compute_ms if args.compute_ms is not None else measured.compute_ms
        work = Work(compute_ms=compute, bucket_bytes=measured.bucket_bytes, backward_share=measured.backward_share,
                    **settings(args, micro))
        costs, sources = with_inputs(COSTS, args.rank_spread_pct, args.half_rate_mb, measured_terms(folder, measured))
        print_fixed_batch(mine, f"{printable(measured.label)} as measured in {args.from_dir} (DDP's own buckets at "
                          f"{measured.bucket_cap_mb:g} MB, backward {measured.backward_share:.0%} of the step)", work,
                          cluster, costs, sources, own=folder_band(folder, measured))


def refuse_traces(args) -> None:
    """``--global-batch`` with ``--from`` a folder of traces: one line (exit 2), a traced step has no micro-batch
    to accumulate."""
    from ddpbench.results.schema import RESULTS_FILE

    if args.global_batch is not None and not (args.from_dir / RESULTS_FILE).is_file():
        raise InputError("command line", "--global-batch", "takes a workload's micro-step: give --from a results "
                         "folder (a sweep's) or --model with --compute-ms, not a folder of traces")
