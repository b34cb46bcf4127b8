"""The console's answers of ``whatif`` and ``tune``: the what-if model's step and cost at each world
size, the model beside published scaling (``whatif --validate``), and the race's verdict."""

from __future__ import annotations

from ddpbench.cli.console import num, table_console


def print_validation(found, costs) -> None:
    """The what-if model beside published scaling, leave-one-source-out (:mod:`ddpbench.analysis.models.loso`):
    one table per quantity (scaling efficiency, with each row's band; throughput at a 1 MB bucket cap against
    25 MB), the held-out error and the band's coverage per source and over all of them."""
    from rich.console import Console
    from rich.table import Table

    from ddpbench.analysis.models.loso import EFFICIENCY, loso, score

    console = table_console()
    console = console if console.is_terminal else Console(width=220)  # its columns, unsqueezed in a pipe
    order = {"check": 0, "input": 1}
    found = found.assign(order=found["role"].map(lambda r: order.get(r, 2))).sort_values(["order", "source"],
                                                                                         kind="stable")
    reasons = {why: chr(ord("a") + i) for i, why in enumerate(dict.fromkeys(w for w in found["outside"] if w))}
    titles = {EFFICIENCY: "scaling efficiency (%), published and the model's (held out: fitted without the row's "
                          "source)",
              "throughput vs 25 MB (%)": "throughput at this bucket cap against 25 MB (%), published and the model's"}
    for quantity, title in titles.items():
        out = Table(title=title)
        for col in ("source", "model", "grads", "batch", "accum.", "GPUs", "against", "system", "net Gbit/s",
                    "aggregation", "published", "model", "band", "error pp", "role"):
            out.add_column(col, no_wrap=True, min_width=len(col), justify="right" if col in (
                "batch", "accum.", "GPUs", "net Gbit/s", "published", "model", "error pp") else "left")
        for _, r in found[found["quantity"] == quantity].iterrows():
            band = f"{r['low']:.0f}-{r['high']:.0f}" + (" in" if r["inside"] else " out") \
                if r["role"] == "check" and quantity == EFFICIENCY else "-"
            out.add_row(r["source"], r["model"], r["grad_dtype"], str(r["batch"]), str(r["accumulation"]),
                        str(r["gpus"]), r["against"], r["system"],
                        num(float(r["network_gbit"]), "g") if r["network_gbit"] is not None else "-", r["aggregation"],
                        num(r["published"], ".1f"), num(r["predicted"], ".1f"), band, num(r["error_pp"], "+.1f"),
                        f"outside ({reasons[r['outside']]})" if r["outside"] else r["role"])
        console.print(out)
    for why, letter in reasons.items():
        console.print(f"outside ({letter}): {why}", highlight=False)
    result = loso()
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
                  f"95th percentile of the other sources' held-out errors) covered {whole.coverage:.1%} of them",
                  highlight=False)
    buckets = score(result.table, quantity="throughput vs 25 MB (%)")
    if buckets.rows:
        console.print(f"leave-one-source-out error, 1 MB vs 25 MB buckets: mean {buckets.mean_pp:.1f} pp, largest "
                      f"{buckets.max_pp:.1f} pp over {buckets.rows} rows", highlight=False)
    console.print(f"shipped constants, fitted to all {whole.sources} sources: ranks' step spread "
                  f"{costs.rank_spread:.1%}, collectives at half rate at {costs.half_rate_mb:.3g} MB, "
                  f"{costs.allreduce_us:.3g} us per collective, links at {costs.link_share:.0%} of their rate, "
                  f"TCP at {costs.tcp_share:.0%}",
                  highlight=False)


def print_search(result: dict) -> None:
    """tune's verdict: every candidate with its launches and throughput, the winner, the tied, and
    what the race spent against the grid."""
    from rich.table import Table

    tied = {t["setting"] for t in result["tied"]}
    basis = {t["setting"]: t.get("basis", "") for t in result["tied"]}
    out = Table(title="the race (samples/s over each setting's launches)")
    for col in ("setting", "launches", "samples/s", "verdict"):
        out.add_column(col, justify="right" if col in ("launches", "samples/s") else "left")
    for c in sorted(result["candidates"], key=lambda c: -(c["samples_per_s"] or 0)):
        verdict = ("fastest" if c["setting"] == result["winner"] else
                   "tied with the fastest" + (f" (out in round {c['out_in_round']})" if c["out_in_round"] else "")
                   + (f": {basis[c['setting']]}" if basis.get(c["setting"]) else "")
                   if c["setting"] in tied else f"out in round {c['out_in_round']}: {c['why_out']}")
        out.add_row(c["setting"], str(c["launches"]), num(c["samples_per_s"], ".1f"), verdict)
    for same in result["same_buckets"]:
        out.add_row(same["setting"], "0", "-", f"not run: predicted to make the same buckets as {same['as']}")
    console = table_console()
    console.print(out)
    low, high = result["winner_interval"]
    console.print(f"fastest: {result['winner']}, {result['winner_samples_per_s']:.1f} samples/s (95 % interval "
                  f"{num(low, '.1f')} to {num(high, '.1f')})"
                  + (f"; statistically tied with it: {', '.join(sorted(tied))}" if tied else "; nothing tied with it")
                  + f". The race spent {result['launches']} launches; the grid would have spent "
                  f"{result['grid_launches']} (budget {result['budget']}).", highlight=False, soft_wrap=True)


#: the world sizes ``whatif`` shows unless --world-sizes says
WORLD_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def print_whatif(args, what: str, work, cluster, costs=None, sources: dict | None = None) -> None:
    """``whatif``'s answer for one workload: the model's step and efficiency at each world size with its band
    (the held-out error on published scaling, leave-one-source-out), and with a batch and a price (or a run's
    samples) the hours and cost of training at each. ``sources``: where the rank spread and the half-rate size
    came from, where not from the published fit."""
    import math

    from ddpbench.analysis.summary import MILLION
    from ddpbench.analysis.models import COSTS, ddp_step, largest_world_size, link_needed, master_step
    from ddpbench.analysis.models.loso import BAND

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
    print(f"costs of running distributed: ranks' step spread {costs.rank_spread:.1%} "
          f"({sources.get('rank_spread', 'fitted to published scaling')}), collectives at half their links' rate "
          f"at {costs.half_rate_mb:.3g} MB ({sources.get('half_rate_mb', 'fitted to published scaling')}); fitted "
          f"to published scaling: {costs.allreduce_us:.3g} us per collective, links at {costs.link_share:.0%} of "
          f"their rate, TCP at {costs.tcp_share:.0%}" + (f", {costs.step_share:.1%} of the compute per step (given)"
                                                        if costs.step_share else ""))
    print(f"band: the model's held-out error on published scaling, leave-one-source-out, its 5th to 95th percentile "
          f"({BAND.low_pp:+.1f} to {BAND.high_pp:+.1f} points); it covered {BAND.coverage:.0%} of {BAND.rows} held-out "
          f"rows of {BAND.sources} sources (python -m ddpbench whatif --validate)")
    cost, batch = args.cost, getattr(args, "batch", None)
    training = batch is not None and (cost.priced or cost.samples is not None)
    samples = cost.samples or MILLION
    if training:
        print(f"training {samples:,} samples at {batch} per device per step, at {cost.described()}")
    money = f"{cost.currency} to train" if cost.priced else ""
    print(f"{'devices':>8} {'step ms':>9} {'comm ms':>9} {'exposed':>9} {'eff.':>6} {'band':>11} {'master eff.':>12}"
          + (f" {'hours':>10}" if training else "") + (f" {money:>14}" if training and cost.priced else "")
          + "  algorithms")
    for p in getattr(args, "world_sizes", None) or WORLD_SIZES:
        step = ddp_step(work, p, cluster, args.algorithm, costs)
        master = master_step(work, p, cluster, costs)
        band = "-" if p == 1 else (f"{max(100 * step.efficiency + BAND.low_pp, 0):.0f}-"
                                   f"{min(100 * step.efficiency + BAND.high_pp, 100):.0f}%")
        extra = ""
        if training:  # every device trains its batch each micro-step: samples / (p x batch x micro-steps) steps
            hours = samples / (p * batch * max(work.accumulation, 1)) * step.step_ms / 3.6e6
            extra = f" {hours:>10.3g}"
            if cost.priced:
                extra += f" {cost.hourly(p, math.ceil(p / cluster.gpus_per_node)) * hours:>14.3g}"
        print(f"{p:>8} {step.step_ms:>9.1f} {step.comm_ms:>9.1f} {step.exposed_ms:>9.1f} {step.efficiency:>6.0%} "
              f"{band:>11} {master.efficiency:>12.0%}{extra}  {step.algorithms}")
    target = args.target_efficiency
    largest = largest_world_size(work, cluster, target, args.algorithm, limit=1 << 16, costs=costs)
    print(f"largest world size at {target:.0%} or better: {largest}"
          + (" (or more: the model's limit)" if largest == 1 << 16 else ""))
    needed = link_needed(work, 1024, cluster, target, args.algorithm, costs)
    print(f"inter-node rate 1024 devices need for {target:.0%}: "
          + (f"{needed:.3g} Gbit/s" if needed != float("inf") else "none is enough (latency or the per-step cost "
             "alone is too much)"))
