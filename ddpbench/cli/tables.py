"""The console's tables: the jobs an experiment holds, the summary of a sweep, the collectives, the
comparison of two folders (rich tables; a pipe gets full-width rows)."""

from __future__ import annotations

from ddpbench.experiment.machine import oversubscribed
from ddpbench.experiment.spec import FIELDS


def table_console():
    """A console for tables: a pipe or log file gets full-width rows, not 80 squeezed columns."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=160)


def num(value, fmt: str) -> str:
    """A figure in a table cell; NaN as "-"."""
    return "-" if value != value else format(value, fmt)


def print_jobs(experiment, machine) -> None:
    from rich.table import Table

    shown = ("strategy", "model", "model_size", "model_args", "script", "script_args", "world_size", "bucket_cap_mb",
             "batch_size", "threads_per_rank", "steps", "repeats")
    # the other fields whose value differs between jobs: without them two rows would read alike
    others = [name for name in FIELDS if name not in shown
              and len({str(getattr(s, name)) for s in experiment.jobs}) > 1]
    table = Table(title=f"{experiment.name}: {len(experiment.jobs)} jobs ({experiment.source})")
    for col in ("key", "strategy", "model", "ws", "bucket MB", "batch/rank", "threads", "steps", "repeats",
                *(["also"] if others else []), "note"):
        table.add_column(col)
    for s in experiment.jobs:
        note = "oversubscribed" if oversubscribed(s, machine) else ""
        also = (" ".join(f"{name}={getattr(s, name)}" for name in others),) if others else ()
        table.add_row(s.key, s.strategy, s.model_label, str(s.world_size), f"{s.bucket_cap_mb:g}",
                      str(s.per_rank_batch), str(s.threads_per_rank), str(s.steps), str(s.repeats), *also, note)
    table_console().print(table)


def print_summary(table) -> None:
    from rich.table import Table

    from ddpbench.analysis.core import EFFICIENCY, EXPOSED_COMM_MS, SAMPLES_PER_S, SPEEDUP, STEP_MS
    from ddpbench.analysis.core import model_name

    if table.empty:
        return
    nodes = "emulate_nodes" in table and bool((table["emulate_nodes"] > 1).any())
    devices = table["device"].nunique() > 1  # CPU jobs beside GPU ones
    gpu = "gpu_peak_allocated_mb" in table and bool(table["gpu_peak_allocated_mb"].notna().any())
    # compute precision and compilation, where any job ran other than fp32 eager
    settings = "precision" in table and bool(((table["precision"] != "fp32") | table["compile"].astype(bool)).any())
    out = Table(title="per job: mean over measured steps (slowest rank), IQR of them; speedup vs world size 1")
    for col in ("strategy", "model", *(("compute",) if settings else ()), *(("device",) if devices else ()), "ws",
                *(("nodes x link",) if nodes else ()),
                "bucket MB", "status", "step ms (mean)", "IQR", "samples/s", "speedup", "eff.", "comm ms", "max MB/step",
                *(("GPU MB",) if gpu else ()), "max |diff|", "flags"):
        out.add_column(col, justify="left" if col in ("strategy", "model", "compute", "device", "status", "flags")
                       else "right")

    for _, r in table.iterrows():
        flags = [f for f in ("oversubscribed", "noisy") if r[f]]
        if r.get("exact") is False:
            flags.append("lossy")
        if r["strategy"] == "dp" and r["device"] == "cpu":
            flags.append("1 replica: CPU baseline")
        strategy = r["strategy"] + (f"+{r['comm_hook']}" if r.get("comm_hook", "none") != "none" else "")
        # communication a step waits for: explicit (after backward) plus what DDP's overlap left exposed
        comm = max(r[EXPOSED_COMM_MS], 0) if r[EXPOSED_COMM_MS] == r[EXPOSED_COMM_MS] else 0.0
        comm += r["comm_ms"] if r["comm_ms"] == r["comm_ms"] else 0.0
        # neither seen (a framework's own loop without a no_sync() baseline): unknown, not nothing
        unseen = r[EXPOSED_COMM_MS] != r[EXPOSED_COMM_MS] and r["comm_ms"] != r["comm_ms"]
        comm = comm if r["status"] == "ok" and not unseen else float("nan")
        link = (f"{r['emulate_nodes']} x {r['link']}" if r["emulate_nodes"] > 1 else "-",) if nodes else ()
        device = (f"{r['backend']}/{r['device']}",) if devices else ()
        memory = (num(r["gpu_peak_allocated_mb"], ",.0f"),) if gpu else ()  # the fullest GPU's peak
        setting = (f"{r['precision']} {'compiled' if r['compile'] else 'eager'}",) if settings else ()
        out.add_row(strategy, model_name(r), *setting, *device, str(r["world_size"]), *link,
                    f"{r['bucket_cap_mb']:g}", r["status"], num(r[STEP_MS], ".2f"), num(r["step_ms_iqr"], ".2f"),
                    num(r[SAMPLES_PER_S], ".1f"), num(r[SPEEDUP], ".2f"), num(r[EFFICIENCY], ".0%"),
                    num(comm, ".2f"), num(r.get("sent_mb_per_step_max", float("nan")), ".1f"), *memory,
                    num(r.get("max_abs_diff", float("nan")), ".1e"), ", ".join(flags))
    table_console().print(out)


def budget_lines(table) -> list[str]:
    """One line per multi-rank job with its loss budget (``loss 47.0 ms over baseline 39.1: contention 23.6,
    ...``); one line saying there is none where the summary lacks the budget's columns."""
    from ddpbench.analysis.core import describe, label_fields, ordered
    from ddpbench.report.budget import (NO_BUDGET_COLUMNS, budget_rows, console_line, has_budget_columns,
                                        multi_rank_jobs)
    from ddpbench.results.sanitize import printable

    if multi_rank_jobs(table).empty:
        return []
    if not has_budget_columns(table):
        return [NO_BUDGET_COLUMNS]
    fields = [*(f for f in label_fields(table) if f != "world_size"), "world_size"]
    return [printable(f"{describe(r, fields, table)}: {console_line(r)}")
            for _, r in ordered(budget_rows(table)).iterrows()]


def print_verdict(table, lines) -> None:
    """After the summary table, on standard output: each job's loss budget, then the verdict's lines."""
    from rich.console import Console

    out = Console(highlight=False, soft_wrap=True)
    budget = budget_lines(table)
    if budget:
        out.print("loss budget (ms per step; ~ within noise):", markup=False)
        for line in budget:
            out.print(f"  {line}", markup=False)
    if lines:
        out.print("verdict:")
        for label, text in lines:
            out.print(f"  {label}: {text}", markup=False)


def print_collectives(table) -> None:
    """Per op and world size: bus bandwidth at the largest size and at its best, and wrong elements."""
    from rich.table import Table

    ok = table[table["status"] == "ok"] if len(table) else table
    if ok.empty:
        return
    out = Table(title="collectives: busbw (GB/s) as nccl-tests defines it; slowest rank, median over iterations")
    for col in ("op", "placement", "ws", "largest size", "time us", "busbw", "best busbw", "at size", "wrong"):
        out.add_column(col, justify="left" if col in ("op", "placement") else "right")
    for (op, placement, ws), part in ok.groupby(["op", "placement", "world_size"], sort=False):
        last = part.loc[part["size_bytes"].idxmax()]
        best = part.loc[part["busbw_gbps"].idxmax()]
        out.add_row(op, placement, str(ws), human_bytes(last["size_bytes"]), f"{last['time_us_median']:.1f}",
                    f"{last['busbw_gbps']:.3f}", f"{best['busbw_gbps']:.3f}", human_bytes(best["size_bytes"]),
                    str(int(part["wrong"].sum())))
    table_console().print(out)


def human_bytes(n) -> str:
    n = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:g} {unit}" if n == int(n) else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def print_comparison(table) -> None:
    from rich.markup import escape
    from rich.table import Table

    from ddpbench.analysis.core import POWER
    from ddpbench.analysis.history import FASTER, SLOWER, ratio_text
    from ddpbench.results.sanitize import printable

    compared = table[table["compared"]]
    if len(compared):
        out = Table(title="B against baseline A, per job (slowest rank, measured steps)")
        detectable = f"detectable at {100 * POWER:.0f}%"
        costed = compared["cost_per_sample_ratio"].notna().any() if "cost_per_sample_ratio" in compared else False
        energy = compared["energy_j_per_sample_ratio"].notna().any() if "energy_j_per_sample_ratio" in compared else False
        for col in ("job", "A median ms", "B median ms", "median B/A", "mean B/A [95% CI]", "throughput",
                    *(["cost/sample B/A"] if costed else []), *(["J/sample B/A"] if energy else []),
                    "verdict", detectable, "method", "note"):
            out.add_column(col, justify="right" if "ms" in col or "B/A" in col or col in ("throughput", detectable)
                           else "left")
        for _, r in compared.iterrows():
            style = {SLOWER: "red", FASTER: "green"}.get(r["verdict"], "")
            verdict = escape(printable(r["verdict"]))
            # stored strings: no terminal escape sequence, no rich markup
            out.add_row(escape(printable(r["job"])), num(r["median_ms_a"], ".3f"), num(r["median_ms_b"], ".3f"),
                        num(r["median_ratio"], ".3f"), escape(printable(ratio_text(r))),
                        num(r["throughput_change_pct"], "+.1f") + " %",
                        *([_ratio_with_interval(r, "cost_per_sample_ratio")] if costed else []),
                        *([num(r["energy_j_per_sample_ratio"], ".3f")] if energy else []),
                        f"[{style}]{verdict}[/{style}]" if style else verdict,
                        num(r["mde_pct"], "+.1f") + " %" if r["mde_pct"] == r["mde_pct"] else "- (1 launch)",
                        escape(printable(r["method"])),
                        escape(printable(r["note"])))
        table_console().print(out)
    rest = table[~table["compared"]]
    for _, r in rest.iterrows():
        why = r["match"] if r["match"] != "both" else f"status A {r['status_a']}, B {r['status_b']}"
        print(printable(f"not compared: {r['job']} [{r['key']}]: {why}"))


def _ratio_with_interval(r, column: str) -> str:
    """``B/A [low, high]``, or the ratio alone without its interval; a dash without it."""
    low, high = r.get(f"{column}_low", float("nan")), r.get(f"{column}_high", float("nan"))
    text = num(r[column], ".3f")
    return f"{text} [{low:.3f}, {high:.3f}]" if low == low and high == high else text


def print_validation(found, costs) -> None:
    """The what-if model beside published scaling (:mod:`ddpbench.analysis.models.validation`): one table
    per quantity (scaling efficiency; throughput at a 1 MB bucket cap against 25 MB)."""
    from rich.console import Console
    from rich.table import Table

    from ddpbench.analysis.models import check_published

    console = table_console()
    console = console if console.is_terminal else Console(width=200)  # its columns, unsqueezed in a pipe
    order = {"check": 0, "calibration": 1, "input": 2}
    found = found.assign(order=found["role"].map(lambda r: order.get(r, 3))).sort_values(["order", "source"], kind="stable")
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
        held = check_published(found, quantity)
        console.print(f"held-out error, {label}: mean {held.mae_pp:.1f} pp, largest {held.max_pp:.1f} pp over "
                      f"{held.points} published points from {held.sources} source(s)", highlight=False)


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
