"""``python -m ddpbench whatif``: what a workload's step would cost on a cluster you describe
(:mod:`ddpbench.analysis.models.whatif`). Model output, not a measurement."""

from __future__ import annotations

from pathlib import Path

from ddpbench.cli.common import finite_float
from ddpbench.cli.answers import print_whatif
from ddpbench.errors import InputError
from ddpbench.experiment.cost import Cost, with_flags


def add_parser(sub) -> None:
    p = sub.add_parser("whatif", help="model a workload's scaling on a cluster you describe",
                       description="Step time and scaling efficiency of DDP (and master aggregation) for a "
                       "workload on a described cluster, per world size: model output, not a measurement.")
    p.add_argument("--model", default="resnet50", help="what trains: a preset, reference model or factory "
                   "(its gradient tensors give the buckets; default: resnet50)")
    p.add_argument("--model-size", default="s", help="size preset of mlp, cnn and transformer (default: s)")
    p.add_argument("--bucket-cap-mb", type=finite_float, default=25.0, help="DDP's bucket cap (default: 25)")
    p.add_argument("--compute-ms", type=finite_float,
                   help="one device's step alone: forward, backward and optimizer (e.g. a sweep's world-size-1 step)")
    p.add_argument("--from", dest="from_dir", type=Path, metavar="RESULTS",
                   help="instead of --model and --compute-ms: every workload a sweep measured in this folder, "
                   "with its measured world-size-1 step, backward share and DDP's actual buckets")
    p.add_argument("--gpus-per-node", type=int, default=8, help="devices per node (default: 8)")
    p.add_argument("--intra-gbit", type=finite_float, default=2400.0, help="a device's link inside a node, Gbit/s")
    p.add_argument("--inter-gbit", type=finite_float, default=100.0, help="a node's network, all NICs, Gbit/s")
    p.add_argument("--intra-latency-us", type=finite_float, default=3.4, help="latency per all-reduce step inside a "
                   "node (default: NCCL's for NVLink, 3.4; its PCIe figure is 5.7)")
    p.add_argument("--inter-latency-us", type=finite_float, default=14.0, help="latency per all-reduce step between "
                   "nodes (default: NCCL's for the network, 14)")
    p.add_argument("--algorithm", default="auto", choices=("auto", "ring", "tree", "hierarchical"),
                   help="all-reduce algorithm (auto: the fastest per bucket, as NCCL's tuner picks)")
    p.add_argument("--target-efficiency", type=finite_float, default=0.9, help="for the largest world size and the "
                   "link rate needed (default: 0.9)")
    p.add_argument("--batch-size", type=int, metavar="N", help="samples per device per step: with a price or "
                   "--train-samples, for the time and cost of training (default with --from: the measured one)")
    p.add_argument("--price-per-device-hour", type=finite_float, metavar="N",
                   help="price of one device for an hour: the cost of training at each world size")
    p.add_argument("--price-per-node-hour", type=finite_float, metavar="N", help="price of a node for an hour "
                   "besides its devices (default: 0)")
    p.add_argument("--currency", default=None, metavar="TEXT", help="the prices' currency (default: USD)")
    p.add_argument("--train-samples", type=int, metavar="N", help="samples of the training run to cost and time "
                   "(default: a million)")
    p.add_argument("--validate", action="store_true", help="instead: the model beside published data-parallel "
                   "scaling results (their sources in ddpbench/analysis/models/published_scaling.toml), with its "
                   "held-out error")
    p.set_defaults(func=command)


def _check(args) -> None:
    if args.compute_ms is None and args.from_dir is None:
        raise InputError("command line", "--compute-ms", "is needed: one device's step in ms (or give --from a "
                         "results folder, or --validate)")
    if args.compute_ms is not None and not args.compute_ms > 0:
        raise InputError("command line", "--compute-ms", f"must be a number above 0 (got {args.compute_ms:g})")
    for flag, value, low in (("--bucket-cap-mb", args.bucket_cap_mb, 0.0),
                             ("--intra-gbit", args.intra_gbit, 0.0), ("--inter-gbit", args.inter_gbit, 0.0)):
        if not value > low:  # also false for NaN
            raise InputError("command line", flag, f"must be a number above {low:g} (got {value:g})")
    for flag, value in (("--intra-latency-us", args.intra_latency_us), ("--inter-latency-us", args.inter_latency_us)):
        if not value >= 0:
            raise InputError("command line", flag, f"must be 0 or more microseconds (got {value:g})")
    if args.gpus_per_node < 1:
        raise InputError("command line", "--gpus-per-node", f"must be 1 or more (got {args.gpus_per_node})")
    if not 0 < args.target_efficiency <= 1:
        raise InputError("command line", "--target-efficiency", f"must be above 0 and at most 1 "
                         f"(got {args.target_efficiency:g})")
    if args.batch_size is not None and args.batch_size < 1:
        raise InputError("command line", "--batch-size", f"must be 1 or more samples (got {args.batch_size})")
    args.cost = with_flags(Cost(), {"--price-per-device-hour": args.price_per_device_hour,
                                    "--price-per-node-hour": args.price_per_node_hour, "--currency": args.currency,
                                    "--train-samples": args.train_samples})
    training = args.cost.priced or args.cost.samples is not None
    if training and args.batch_size is None and args.from_dir is None:
        raise InputError("command line", "--batch-size", "is needed for the time and cost of training: the samples "
                         "each device trains per step (or give --from a results folder)")


def validate() -> int:
    from ddpbench.analysis.models import published_table
    from ddpbench.analysis.models import COSTS
    from ddpbench.cli.answers import print_validation

    print_validation(published_table(COSTS), COSTS)
    return 0


def _measured(folder: Path) -> list:
    """The workloads a sweep measured (:func:`ddpbench.analysis.models.costmodel.workloads`)."""
    from ddpbench.results.schema import RESULTS_FILE

    if not (folder / RESULTS_FILE).is_file():
        raise InputError(str(folder), RESULTS_FILE, "not found; give --from a folder written by `ddpbench sweep`")
    from ddpbench.analysis.models import workloads
    from ddpbench.analysis.folder import load

    measured = load(folder, collectives=False)  # loaded and summarised once
    found = workloads(measured.summary, measured.ranks)
    if not found:
        raise InputError(str(folder), "world_size", "no finished DDP job at world size 1 to take the compute from; "
                         "sweep world_size = [1, ...] first")
    return found, measured.summary


def command(args) -> int:
    if args.validate:
        return validate()
    from ddpbench.analysis.models import Cluster, Work

    _check(args)
    cluster = Cluster(args.gpus_per_node, args.intra_gbit, args.inter_gbit, args.intra_latency_us,
                      args.inter_latency_us)
    if args.from_dir is not None:
        from ddpbench.analysis.models import versus_report
        from ddpbench.analysis.diagnosis import cluster_words
        from ddpbench.results.sanitize import printable, without_controls

        found, summary = _measured(args.from_dir)
        for measured in found:
            compute = args.compute_ms if args.compute_ms is not None else measured.compute_ms
            work = Work(compute_ms=compute, bucket_bytes=measured.bucket_bytes, backward_share=measured.backward_share)
            args.batch = args.batch_size or measured.per_rank_batch
            print_whatif(args, f"{printable(measured.label)} as measured in {args.from_dir} (DDP's own buckets at "
                    f"{measured.bucket_cap_mb:g} MB, backward {measured.backward_share:.0%} of the step)", work,
                    cluster)
            print(without_controls(versus_report(measured, compute)))  # it names the stored workload
            job = summary[summary["key"] == measured.job_key] if measured.job_key and "key" in summary else []
            words = cluster_words(job.iloc[0]) if len(job) else ""
            if words:  # this model gives every device the compute alone: what the budget says of that
                print(f"of the loss budget measured at world size {measured.measured_world_size}: {words}")
        return 0
    from ddpbench.experiment.spec import JobSpec, check_value
    from ddpbench.experiment.workloads import check_workloads
    from ddpbench.strategies.ddp import predicted_buckets
    from ddpbench.workloads.catalog import facts

    model = check_value("model", args.model, "command line", "--model")
    size = check_value("model_size", args.model_size, "command line", "--model-size")
    spec = JobSpec(model=model, model_size=size, world_size=1)
    check_workloads([spec], "command line")
    buckets = predicted_buckets(facts(spec).tensor_bytes, args.bucket_cap_mb)
    work = Work(compute_ms=args.compute_ms, bucket_bytes=buckets)  # in DDP's order: the last layers' first
    args.batch = args.batch_size
    # nothing ran: the buckets are predicted (reverse registration order), and said to be
    print_whatif(args, f"{spec.model_label}: predicted layout: {len(buckets)} bucket(s) of at most "
                 f"{args.bucket_cap_mb:g} MB", work, cluster)
    return 0
