"""``whatif --from``'s answer on the link it measured: the report's projection of the same inputs by the same
model (:attr:`ddpbench.analysis.models.Model.projected`, :func:`ddpbench.analysis.models.costmodel.predict`),
of what a results folder or a folder of profiler traces measured (read by the command:
:mod:`ddpbench.cli.shared.measured`), each term of the step with its share, and how far the projection holds
as its check reached (:mod:`ddpbench.analysis.models.holdout`); and a traced job on a cluster described."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

#: the projection's terms, each with its column of :func:`ddpbench.analysis.models.costmodel.predict`; they sum to
#: the step
TERMS = {"compute": "compute_ms", "exposed": "exposed_comm_ms", "rank wait growth": "slowest_growth_ms"}


def print_traced(options, pairs: list, reproduced: dict, cluster) -> None:
    """``whatif --from`` a folder of traces, with a cluster or a setting: what each traced job measured
    (compute, buckets, spread, the half-rate size of its collectives), on the cluster described, with the costs
    fitted to published scaling where the traces measured none. ``options``: whatif's flags, a frozen value
    (:class:`ddpbench.cli.shared.parsing.Options`, its ``batch`` the batch a device takes); ``pairs`` and
    ``reproduced``: what the folder measured, read by the command (:mod:`ddpbench.cli.shared.measured`)."""
    from ddpbench.analysis.models import COSTS, Work, with_inputs
    from ddpbench.files.sanitize import printable
    from ddpbench.show.answers import print_whatif, settings

    for network, workload, link in pairs:
        work = Work(compute_ms=options.compute_ms or workload.compute_ms, bucket_bytes=workload.bucket_bytes,
                    backward_share=workload.backward_share, ready=workload.ready, **settings(options, options.batch))
        half = link.alpha_us / link.beta_us_per_byte / 1e6 if link.beta_us_per_byte > 0 and not link.extreme else None
        spread = reproduced[(network, workload.label)][1]  # where one rank was traced, the published fit's
        measured = {"rank_spread": workload.rank_spread if spread.startswith("measured") else None,
                    "rank_spread_source": f"{spread} of {workload.job_key}",
                    "half_rate_mb": half, "half_rate_source": "the traced all-reduces' times by size (alpha / beta)"}
        costs, sources = with_inputs(COSTS, options.rank_spread_pct, options.half_rate_mb, measured)
        print_whatif(options, printable(f"{workload.label} as traced in {options.from_dir} "
                                        f"({len(workload.bucket_bytes)} all-reduce(s) a step, each ready where the "
                                        "trace launched it)"), work, cluster, costs, sources)


def _check_words(checks: pd.DataFrame, agrees: bool = True) -> list[str]:
    if checks.empty:
        return ["not checked: measured at fewer than 3 world sizes (one alone, one to fit the link to, one to hide), "
                "so nothing past the largest measured is checked"]
    return [f"checked: world size {int(c['hidden_world_size'])} hidden and predicted from {c['from_world_sizes']}: "
            f"{c['predicted_ms']:.4g} ms [{c['low_ms']:.4g} to {c['high_ms']:.4g}] against {c['measured_ms']:.4g} ms "
            f"measured ({c['error_pct']:+.0f} %): {'holds' if c['holds'] else 'does not hold'}"
            + (f", so the projection holds as checked to {int(c['supported_to'])} ranks" if agrees else
               ", but the model does not reproduce every world size measured (above): no projection")
            + (f" (wide: {c['wide_because']})" if c["wide_because"] else "") for _, c in checks.iterrows()]


def print_measured(folder: Path, pairs: list, holdout: pd.DataFrame, reproduced: dict, sizes=None,
                   target: float | None = None, device_memory: tuple[float, str] | None = None,
                   optimizer: str | None = None) -> None:
    """Each workload projected on the link it measured, per world size: the step, each term with its share, the
    efficiency, and whether the world size lies past what the check supports; at each world size it measured, the
    model's step there beside the measurement, and the projection past them only where every one agrees (else one
    line saying what does not match). ``target``: the largest world size shown at that efficiency or better;
    ``device_memory``: (GB, where from) a device holds, against the state of each workload's parameters (their
    gradients as measured, fp32), or None (not checked); ``optimizer``: the one typed, whose state the memory counts,
    or None: the one each workload's jobs trained with (else Adam, the flag's default)."""
    from ddpbench.analysis.models import WORLD_SIZES, Memory, counted_optimizer, mismatch, predict, reproduces
    from ddpbench.files.sanitize import printable

    for network, workload, link in pairs:
        rows, spread = reproduced[(network, workload.label)]
        at = {r.world_size: r for r in rows}
        agrees = reproduces(rows)
        mine = holdout[(holdout["workload"] == workload.label) & (holdout["network"] == network)] \
            if len(holdout) else holdout
        supported = int(mine["supported_to"].min()) if len(mine) else workload.measured_world_size
        print(printable(f"model output for {workload.label} as measured in {folder} ({network}), every rank with a "
                        f"device of its own on the link it measured ({link.name}: alpha {link.alpha_us:.3g} us, "
                        f"{link.gbit_per_s:.3g} Gbit/s): the model of the report's projection"
                        + (", on the same inputs as its report" if workload.ready is None else "")))
        if link.extreme:
            print("the measurements do not tell the link's latency from its bandwidth: anything from this to all "
                  f"latency ({latency_words(link.alpha_if_all_latency_us)} per message) fits them")
        compute = (f"{workload.compute_ms:.4g} ms of compute alone, {workload.compute_multi_ms:.4g} ms with every rank "
                   f"busy at world size {workload.measured_world_size}" if workload.ready is None else
                   f"{workload.compute_ms:.4g} ms a step but its transfer, every rank busy at world size "
                   f"{workload.measured_world_size} (no rank ran alone: the efficiency is against it)")
        print(f"inputs: {compute}; {len(workload.bucket_bytes)} bucket(s), "
              f"{sum(workload.bucket_bytes) / 1e6:.3g} MB, released through the backward pass "
              f"({workload.backward_share:.0%} of the step" + (", each where the trace launched it)" if workload.ready
                                                               else ", bytes standing in for its compute)")
              + f"; ranks' step spread {workload.rank_spread:.1%} ({spread})")
        shown = sorted(set(at) if not agrees else {*(sizes or WORLD_SIZES), *at})
        frame = predict(workload, link, shown)
        print(f"the step is the sum of its terms: {', '.join(TERMS)} (ms, and each one's share of the step); at each "
              "world size measured, the model's step as it was measured (on the measuring machine's cores) beside it")
        print(f"{'devices':>8} {'step ms':>9}" + "".join(f" {name:>16}" for name in TERMS)
              + f" {'eff.':>6} {'measured':>9} {'model there [band]':>26}  checked")
        for _, row in frame.iterrows():
            p = int(row["world_size"])
            cells = "".join(f" {row[column]:>10.2f} {row[column] / row['step_ms']:>5.0%}" for column in TERMS.values())
            there = at.get(p)
            pair = (f" {there.measured_ms:>9.2f} {_band(there):>26}" if there else f" {'':>9} {'':>26}")
            past = ("" if p <= supported else "past the check") if there is None else \
                ("reproduced" if there.holds else "not reproduced") + f" ({there.how})"
            print(f"{p:>8} {row['step_ms']:>9.2f}{cells} {row['efficiency']:>6.0%}{pair}  {past}")
        line = mismatch(rows)
        if line:
            print(line)
        for words in _check_words(mine, agrees):
            print(words)
        gb, source = device_memory or (None, "")
        mine, whence = counted_optimizer(optimizer, workload.optimizer)
        memory = Memory(sum(workload.bucket_bytes) / 4, device_gb=gb, source=source, optimizer=mine,
                        optimizer_source=whence)
        print(memory.words())
        if memory.fits(1) is False:
            print(f"does not fit: {memory.state_gb(1):.3g} GB a device against {gb:g} GB at every size (DDP)")
        if target is not None and agrees:
            print(_largest(frame, target) if memory.fits(1) is not False else
                  f"largest world size shown at {target:.0%} or better on the link it measured: none that fits")


def latency_words(us: float) -> str:
    """A latency in the unit a person reads: us below a millisecond, ms from one, s from a second."""
    return f"{us:.3g} us" if us < 1e3 else f"{us / 1e3:.3g} ms" if us < 1e6 else f"{us / 1e6:.3g} s"


def _band(r) -> str:
    return f"{r.model_ms:.2f}" + (f" [{r.low_ms:.4g} to {r.high_ms:.4g}]" if r.high_ms > r.low_ms else "")


def _largest(frame: pd.DataFrame, target: float) -> str:
    """The largest world size shown whose projected efficiency is at least ``target``."""
    keep = frame[frame["efficiency"] >= target]
    largest = int(keep["world_size"].max()) if len(keep) else None
    return (f"largest world size shown at {target:.0%} or better on the link it measured (--target-efficiency): "
            + (f"{largest}" if largest else "none") + f" of {int(frame['world_size'].max())}")
