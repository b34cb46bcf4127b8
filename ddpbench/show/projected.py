"""``whatif --from``'s answer on the link it measured: the report's projection of the same inputs by the same
model (:attr:`ddpbench.analysis.models.Model.projected`, :func:`ddpbench.analysis.models.costmodel.predict`),
read from a results folder or from a folder of profiler traces (:mod:`ddpbench.analysis.models.fromtrace`),
each term of the step with its share, and how far the projection holds as its check reached
(:mod:`ddpbench.analysis.models.holdout`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ddpbench.errors import InputError

#: the projection's terms, each with its column of :func:`ddpbench.analysis.models.costmodel.predict`; they sum to
#: the step
TERMS = {"compute": "compute_ms", "exposed": "exposed_comm_ms", "rank wait growth": "slowest_growth_ms"}
#: world sizes shown unless given
WORLD_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def measured_inputs(folder: Path) -> tuple[list, pd.DataFrame, str]:
    """What ``folder`` measured, as the projection's inputs: ((network, workload, link), ...), its hold-out
    checks, and what it is (a results folder, else a folder of traces); one line and exit 2 where it is neither."""
    from ddpbench.results.schema import RESULTS_FILE

    if (folder / RESULTS_FILE).is_file():
        from ddpbench.analysis.folder import load

        model = load(folder).model
        if not model.projected:
            raise InputError(str(folder), "world_size", "no finished DDP job at world size 1 and 2 or more to project "
                             "from; sweep world_size = [1, 2, ...] first")
        return list(model.projected), model.holdout, "results"
    if not folder.is_dir():
        raise InputError(str(folder), "--from", "not found: give a results folder or a folder of profiler traces")
    from ddpbench.analysis.models import traced
    from ddpbench.traces.folder import read_folder
    from ddpbench.traces.read import jobs_in

    try:
        found = jobs_in(folder)
    except InputError:
        found = []
    if not found:
        raise InputError(str(folder), RESULTS_FILE, "not found, nor any profiler trace: give --from a folder written "
                         "by `ddpbench sweep` or one of torch.profiler traces")
    pairs = [found for found in map(traced, read_folder(folder)) if found is not None]
    if not pairs:
        raise InputError(str(folder), "traces", "no traced job holds compute and all-reduces to project from")
    return pairs, pd.DataFrame(), "traces"


def print_described(args, cluster) -> None:
    """``whatif --from`` with a cluster or a setting: what a results folder's workloads or a folder of traces'
    jobs measured (compute, buckets, spread, the half-rate size of their collectives), on the cluster described
    with the costs fitted to published scaling where the folder measured none."""
    from ddpbench.results.schema import RESULTS_FILE
    from ddpbench.show.answers import print_from

    if (args.from_dir / RESULTS_FILE).is_file():
        found, folder = measured_workloads(args.from_dir)
        print_from(args, found, folder, cluster)
        return
    from ddpbench.analysis.models import COSTS, Work, with_inputs
    from ddpbench.results.sanitize import printable
    from ddpbench.show.answers import print_whatif, settings

    pairs, _, _ = measured_inputs(args.from_dir)
    for _, workload, link in pairs:
        args.batch = args.batch_size
        work = Work(compute_ms=args.compute_ms or workload.compute_ms, bucket_bytes=workload.bucket_bytes,
                    backward_share=workload.backward_share, ready=workload.ready, **settings(args, args.batch))
        half = link.alpha_us / link.beta_us_per_byte / 1e6 if link.beta_us_per_byte > 0 and not link.extreme else None
        measured = {"rank_spread": workload.rank_spread,
                    "rank_spread_source": f"measured between the traced ranks of {workload.job_key}",
                    "half_rate_mb": half, "half_rate_source": "the traced all-reduces' times by size (alpha / beta)"}
        costs, sources = with_inputs(COSTS, args.rank_spread_pct, args.half_rate_mb, measured)
        print_whatif(args, printable(f"{workload.label} as traced in {args.from_dir} ({len(workload.bucket_bytes)} "
                                     "all-reduce(s) a step, each ready where the trace launched it)"), work, cluster,
                     costs, sources)


def measured_workloads(folder: Path) -> tuple[list, object]:
    """The workloads a sweep measured (:func:`ddpbench.analysis.models.costmodel.workloads`) and the folder, for a
    cluster ``whatif --from`` describes."""
    from ddpbench.analysis.folder import load
    from ddpbench.analysis.models import workloads

    measured = load(folder)  # loaded and summarised once, with its all_reduce curve
    found = workloads(measured.summary, measured.ranks)
    if not found:
        raise InputError(str(folder), "world_size", "no finished DDP job at world size 1 to take the compute from; "
                         "sweep world_size = [1, ...] first")
    return found, measured


def _check_words(checks: pd.DataFrame) -> list[str]:
    if checks.empty:
        return ["not checked: measured at fewer than 3 world sizes (one alone, one to fit the link to, one to hide), "
                "so nothing past the largest measured is checked"]
    return [f"checked: world size {int(c['hidden_world_size'])} hidden and predicted from {c['from_world_sizes']}: "
            f"{c['predicted_ms']:.4g} ms [{c['low_ms']:.4g} to {c['high_ms']:.4g}] against {c['measured_ms']:.4g} ms "
            f"measured ({c['error_pct']:+.0f} %): {'holds' if c['holds'] else 'does not hold'}, so the projection "
            f"holds as checked to {int(c['supported_to'])} ranks"
            + (f" (wide: {c['wide_because']})" if c["wide_because"] else "") for _, c in checks.iterrows()]


def print_measured(folder: Path, pairs: list, holdout: pd.DataFrame, sizes=None) -> None:
    """Each workload projected on the link it measured, per world size: the step, each term with its share, the
    efficiency, and whether the world size lies past what the check supports."""
    from ddpbench.analysis.models import predict
    from ddpbench.results.sanitize import printable

    sizes = sorted(set(sizes or WORLD_SIZES))
    for network, workload, link in pairs:
        mine = holdout[(holdout["workload"] == workload.label) & (holdout["network"] == network)] \
            if len(holdout) else holdout
        supported = int(mine["supported_to"].min()) if len(mine) else workload.measured_world_size
        print(printable(f"model output for {workload.label} as measured in {folder} ({network}), every rank with a "
                        f"device of its own on the link it measured ({link.name}: alpha {link.alpha_us:.3g} us, "
                        f"{link.gbit_per_s:.3g} Gbit/s a byte): the model of the report's projection"
                        + (", on the same inputs as its report" if workload.ready is None else "")))
        if link.extreme:
            print("the measurements do not tell the link's latency from its bandwidth: anything from this to all "
                  f"latency ({link.alpha_if_all_latency_us:.3g} us a message) fits them")
        compute = (f"{workload.compute_ms:.4g} ms of compute alone, {workload.compute_multi_ms:.4g} ms with every rank "
                   f"busy at world size {workload.measured_world_size}" if workload.ready is None else
                   f"{workload.compute_ms:.4g} ms of compute a step with every rank busy at world size "
                   f"{workload.measured_world_size} (no rank ran alone: the efficiency is against it)")
        print(f"inputs: {compute}; {len(workload.bucket_bytes)} bucket(s), "
              f"{sum(workload.bucket_bytes) / 1e6:.3g} MB, released through the backward pass "
              f"({workload.backward_share:.0%} of the step" + (", each where the trace launched it)" if workload.ready
                                                               else ", bytes standing in for its compute)")
              + f"; ranks' step spread {workload.rank_spread:.1%} (measured between them)")
        frame = predict(workload, link, sizes)
        print(f"the step is the sum of its terms: {', '.join(TERMS)} (ms, and each one's share of the step)")
        print(f"{'devices':>8} {'step ms':>9}" + "".join(f" {name:>16}" for name in TERMS) + f" {'eff.':>6}  checked")
        for _, row in frame.iterrows():
            cells = "".join(f" {row[column]:>10.2f} {row[column] / row['step_ms']:>5.0%}" for column in TERMS.values())
            past = "" if row["world_size"] <= supported else "past the check"
            print(f"{int(row['world_size']):>8} {row['step_ms']:>9.2f}{cells} {row['efficiency']:>6.0%}  {past}")
        for words in _check_words(mine):
            print(words)
