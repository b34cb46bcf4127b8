"""The console's answers of ``whatif`` and ``tune``: the what-if model's step and cost at each world
size, the model beside published scaling (``whatif --validate``), and the race's verdict."""

from __future__ import annotations

from ddpbench.cli.console import num, table_console


def print_validation(found, costs) -> None:
    """The what-if model beside published scaling (:mod:`ddpbench.analysis.models.validation`): one table
    per quantity (scaling efficiency; throughput at a 1 MB bucket cap against 25 MB)."""
    from rich.console import Console
    from rich.table import Table

    from ddpbench.analysis.models import check_published

    console = table_console()
    console = console if console.is_terminal else Console(width=200)  # its columns, unsqueezed in a pipe
    order = {"check": 0, "calibration": 1, "input": 2}
    found = found.assign(order=found["role"].map(lambda r: order.get(r, 3))).sort_values(["order", "source"],
                                                                                         kind="stable")
    reasons = {why: chr(ord("a") + i) for i, why in enumerate(dict.fromkeys(w for w in found["outside"] if w))}
    titles = {"scaling efficiency (%)": "scaling efficiency (%), published and the model's",
              "throughput vs 25 MB (%)": "throughput at this bucket cap against 25 MB (%), published and the model's"}
    for quantity, title in titles.items():
        out = Table(title=title)
        for col in ("source", "model", "batch", "GPUs", "system", "net Gbit/s", "aggregation", "bucket MB",
                    "published", "model", "error pp", "role"):
            out.add_column(col, no_wrap=True, min_width=len(col), justify="right" if col in (
                "batch", "GPUs", "net Gbit/s", "bucket MB", "published", "model", "error pp") else "left")
        for _, r in found[found["quantity"] == quantity].iterrows():
            out.add_row(r["source"], r["model"], str(r["batch"]), str(r["gpus"]), r["system"],
                        num(float(r["network_gbit"]), "g") if r["network_gbit"] is not None else "-", r["aggregation"],
                        num(float(r["bucket_cap_mb"]), "g") if r["bucket_cap_mb"] is not None else "-",
                        num(r["published"], ".1f"), num(r["predicted"], ".1f"), num(r["error_pp"], "+.1f"),
                        f"outside ({reasons[r['outside']]})" if r["outside"] else r["role"])
        console.print(out)
    for why, letter in reasons.items():
        console.print(f"outside ({letter}): {why}", highlight=False)
    console.print(f"constants, fitted once to the {int((found['role'] == 'calibration').sum())} calibration rows: "
                  f"{costs.step_share:.1%} of the compute per step, {costs.allreduce_us:g} us per all-reduce, "
                  f"links at {costs.link_share:.0%} of their rate", highlight=False)
    for quantity, label in (("scaling efficiency (%)", "scaling efficiency"),
                            ("throughput vs 25 MB (%)", "1 MB vs 25 MB buckets")):
        for later, which in ((False, "the first sources"), (True, "the sources added after the model was fixed")):
            held = check_published(found, quantity, later=later)
            if held.points:
                console.print(f"held-out error, {label}, {which}: mean {held.mae_pp:.1f} pp, largest "
                              f"{held.max_pp:.1f} pp over {held.points} published points from {held.sources} "
                              "source(s)", highlight=False)


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


def print_whatif(args, what: str, work, cluster) -> None:
    """``whatif``'s answer for one workload: the model's step and efficiency at each world size, and with a
    batch and a price (or a run's samples) the hours and cost of training at each."""
    import math

    from ddpbench.analysis.summary import MILLION
    from ddpbench.analysis.models import COSTS, ddp_step, largest_world_size, link_needed, master_step

    print(f"model output for {what}: {sum(work.bucket_bytes) / 1e6:.1f} MB of gradients, {work.compute_ms:.4g} ms "
          f"of compute per device; {args.gpus_per_node} devices a node at {args.intra_gbit:g} Gbit/s, nodes at "
          f"{args.inter_gbit:g} Gbit/s")
    print(f"with the costs of running distributed fitted to published scaling: {COSTS.step_share:.1%} of the compute "
          f"per step, {COSTS.allreduce_us:g} us per all-reduce, links at {COSTS.link_share:.0%} of their rate "
          f"(its held-out error: python -m ddpbench whatif --validate)")
    cost, batch = args.cost, getattr(args, "batch", None)
    training = batch is not None and (cost.priced or cost.samples is not None)
    samples = cost.samples or MILLION
    if training:
        print(f"training {samples:,} samples at {batch} per device per step, at {cost.described()}")
    money = f"{cost.currency} to train" if cost.priced else ""
    print(f"{'devices':>8} {'step ms':>9} {'comm ms':>9} {'exposed':>9} {'eff.':>6} {'master eff.':>12}"
          + (f" {'hours':>10}" if training else "") + (f" {money:>14}" if training and cost.priced else "")
          + "  algorithms")
    for p in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024):
        step, master = ddp_step(work, p, cluster, args.algorithm), master_step(work, p, cluster)
        extra = ""
        if training:  # every device trains its batch each step: the run takes samples / (p x batch) steps
            hours = samples / (p * batch) * step.step_ms / 3.6e6
            extra = f" {hours:>10.3g}"
            if cost.priced:
                extra += f" {cost.hourly(p, math.ceil(p / cluster.gpus_per_node)) * hours:>14.3g}"
        print(f"{p:>8} {step.step_ms:>9.1f} {step.comm_ms:>9.1f} {step.exposed_ms:>9.1f} {step.efficiency:>6.0%} "
              f"{master.efficiency:>12.0%}{extra}  {step.algorithms}")
    target = args.target_efficiency
    largest = largest_world_size(work, cluster, target, args.algorithm, limit=1 << 16)
    print(f"largest power-of-two world size at {target:.0%} or better: {largest}"
          + (" (or more: the model's limit)" if largest == 1 << 16 else ""))
    needed = link_needed(work, 1024, cluster, target, args.algorithm)
    print(f"inter-node rate 1024 devices need for {target:.0%}: "
          + (f"{needed:.3g} Gbit/s" if needed != float("inf") else "none is enough (latency or the per-step cost "
             "alone is too much)"))
