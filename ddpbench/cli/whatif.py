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
                   "(its gradient tensors give the buckets; default: resnet50), or a large model's layout built on "
                   "the meta device: llama-7b, llama-13b, llama-70b, gpt3-1.3b, gpt3-175b, bart-large")
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
    p.add_argument("--algorithm", default="auto", choices=("auto", "ring", "tree", "hierarchical", "nvls"),
                   help="all-reduce algorithm (auto: the fastest per bucket, as NCCL's tuner picks)")
    p.add_argument("--nvls", action="store_true", help="the nodes' NVSwitch reduces (NVLink SHARP, H100 and "
                   "later with NCCL 2.17+): auto may pick NVLS")
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
    p.add_argument("--model-args", default="", metavar="TABLE", help="keyword arguments of the model's factory, a "
                   "table such as '{ layers = 24, hidden = 1024 }' (reference models and module:function factories)")
    p.add_argument("--world-sizes", type=_sizes, metavar="N,N,...", help="the world sizes to show, any whole "
                   "numbers (default: 1, 2, 4, ... 1024)")
    p.add_argument("--grad-dtype", default="fp32", choices=("fp32", "bf16", "fp16"), help="the dtype gradients "
                   "travel in: bf16 and fp16 halve the bytes (apex O2, Horovod's fp16 compression; default: fp32)")
    p.add_argument("--accumulation", type=int, default=1, metavar="N", help="micro-steps per optimizer step: N "
                   "micro-steps of compute, one all-reduce (default: 1)")
    p.add_argument("--shard", default="none", choices=("none", "zero1", "zero2", "zero3", "fsdp"), help="sharding: "
                   "none (DDP), ZeRO-1 (all-reduce, then all-gather of the parameters), ZeRO-2 (reduce-scatter, "
                   "all-gather), ZeRO-3/FSDP (all-gather in forward and backward, reduce-scatter)")
    p.add_argument("--input-samples-per-s", type=finite_float, metavar="N", help="what a node's input pipeline "
                   "feeds, samples/s shared by its devices: a step is never shorter (needs --batch-size)")
    p.add_argument("--rank-spread-pct", type=finite_float, metavar="PCT", help="the per-rank step's coefficient "
                   "of variation, %%: the expected slowest of N ranks (default: fitted to published scaling; with "
                   "--from: the spread measured between ranks)")
    p.add_argument("--half-rate-mb", type=finite_float, metavar="MB", help="the message size at which a "
                   "collective reaches half its links' rate (default: fitted to published scaling; with --from: "
                   "the measured all_reduce curve's)")
    p.add_argument("--oversubscription", type=finite_float, default=1.0, metavar="RATIO", help="the fabric's "
                   "oversubscription beyond --leaf-nodes nodes: the network's rate is divided by it (default: 1)")
    p.add_argument("--leaf-nodes", type=int, default=1, metavar="N", help="nodes under one leaf switch, at the "
                   "full rate (default: 1)")
    p.add_argument("--transport", default="rdma", choices=("rdma", "tcp"), help="between nodes: rdma, or tcp "
                   "(its share of the rate fitted to published TCP runs; default: rdma)")
    p.add_argument("--validate", action="store_true", help="instead: the model beside published data-parallel "
                   "scaling results (their sources in ddpbench/analysis/models/published_scaling.toml), with its "
                   "held-out error")
    p.set_defaults(func=command)


def _sizes(text: str) -> tuple[int, ...]:
    """argparse's ``type`` for --world-sizes: whole numbers of 1 or more, comma-separated."""
    import argparse

    try:
        sizes = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be whole numbers separated by commas (got {text!r})") from None
    if not sizes or sizes[0] < 1:
        raise argparse.ArgumentTypeError(f"must be whole numbers of 1 or more (got {text!r})")
    return sizes


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
    for flag, value in (("--accumulation", args.accumulation), ("--leaf-nodes", args.leaf_nodes)):
        if value < 1:
            raise InputError("command line", flag, f"must be 1 or more (got {value})")
    for flag, value in (("--rank-spread-pct", args.rank_spread_pct), ("--half-rate-mb", args.half_rate_mb)):
        if value is not None and not value >= 0:
            raise InputError("command line", flag, f"must be 0 or more (got {value:g})")
    if not args.oversubscription >= 1:
        raise InputError("command line", "--oversubscription", f"must be 1 or more (got {args.oversubscription:g})")
    if args.input_samples_per_s is not None:
        if not args.input_samples_per_s > 0:
            raise InputError("command line", "--input-samples-per-s", f"must be a number above 0 (got "
                             f"{args.input_samples_per_s:g})")
        if args.batch_size is None and args.from_dir is None:
            raise InputError("command line", "--batch-size", "is needed with --input-samples-per-s: the samples "
                             "each device takes per step")
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
    from ddpbench.analysis.models import COSTS
    from ddpbench.analysis.models.loso import validated
    from ddpbench.cli.answers import print_validation

    print_validation(validated(), COSTS)
    return 0


def _measured(folder: Path) -> list:
    """The workloads a sweep measured (:func:`ddpbench.analysis.models.costmodel.workloads`)."""
    from ddpbench.results.schema import RESULTS_FILE

    if not (folder / RESULTS_FILE).is_file():
        raise InputError(str(folder), RESULTS_FILE, "not found; give --from a folder written by `ddpbench sweep`")
    from ddpbench.analysis.models import workloads
    from ddpbench.analysis.folder import load

    measured = load(folder)  # loaded and summarised once, with its all_reduce curve
    found = workloads(measured.summary, measured.ranks)
    if not found:
        raise InputError(str(folder), "world_size", "no finished DDP job at world size 1 to take the compute from; "
                         "sweep world_size = [1, ...] first")
    return found, measured


def _costs(args, measured=None):
    """The costs of running distributed: the published fit, with the rank spread and the half-rate size
    given on the command line, else measured in the folder (``measured``: :func:`_measured_terms`), and
    where each came from."""
    from dataclasses import replace

    from ddpbench.analysis.models import COSTS

    costs, sources = COSTS, {}
    spread = args.rank_spread_pct / 100 if args.rank_spread_pct is not None else None
    half = args.half_rate_mb
    if spread is not None:
        sources["rank_spread"] = "given"
    elif measured and measured.get("rank_spread") is not None:
        spread, sources["rank_spread"] = measured["rank_spread"], measured["rank_spread_source"]
    if half is not None:
        sources["half_rate_mb"] = "given"
    elif measured and measured.get("half_rate_mb") is not None:
        half, sources["half_rate_mb"] = measured["half_rate_mb"], measured["half_rate_source"]
    if spread is not None:
        costs = replace(costs, rank_spread=spread)
    if half is not None:
        costs = replace(costs, half_rate_mb=half)
    return costs, sources


def _settings(args, batch: int | None) -> dict:
    """The Work fields the flags set: gradient dtype, accumulation, sharding, the input pipeline."""
    feed = 0.0
    if args.input_samples_per_s is not None and batch:
        feed = batch / args.input_samples_per_s * 1e3  # the node's pipeline, for one device's batch
    return {"grad_dtype": args.grad_dtype, "accumulation": args.accumulation, "shard": args.shard, "feed_ms": feed}


def command(args) -> int:
    if args.validate:
        return validate()
    from ddpbench.analysis.models import Cluster, Work

    _check(args)
    cluster = Cluster(args.gpus_per_node, args.intra_gbit, args.inter_gbit, args.intra_latency_us,
                      args.inter_latency_us, oversubscription=args.oversubscription, leaf_nodes=args.leaf_nodes,
                      transport=args.transport,
                      algorithms=("ring", "tree", "hierarchical", "nvls") if args.nvls or args.algorithm == "nvls"
                      else ("ring", "tree", "hierarchical"))
    if args.from_dir is not None:
        from ddpbench.analysis.models import versus_report
        from ddpbench.analysis.models.measured import measured_terms
        from ddpbench.analysis.diagnosis import cluster_words
        from ddpbench.results.sanitize import printable, without_controls

        found, folder = _measured(args.from_dir)
        summary = folder.summary
        for measured in found:
            compute = args.compute_ms if args.compute_ms is not None else measured.compute_ms
            args.batch = args.batch_size or measured.per_rank_batch
            work = Work(compute_ms=compute, bucket_bytes=measured.bucket_bytes, backward_share=measured.backward_share,
                        **_settings(args, args.batch))
            costs, sources = _costs(args, measured_terms(folder, measured))
            print_whatif(args, f"{printable(measured.label)} as measured in {args.from_dir} (DDP's own buckets at "
                    f"{measured.bucket_cap_mb:g} MB, backward {measured.backward_share:.0%} of the step)", work,
                    cluster, costs, sources)
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

    from ddpbench.analysis.models import presets

    model_args = check_value("model_args", args.model_args, "command line", "--model-args")
    if args.model in presets.PRESETS:  # a large model's layout, built on the meta device
        try:
            tensors = presets.tensor_bytes(args.model, model_args)
        except KeyError as err:
            raise InputError("command line", "--model-args", f"{args.model} has no {err.args[0]}; it takes "
                             f"{', '.join(k for k in presets.PRESETS[args.model] if k != 'kind')}") from None
        label = args.model + (f"({model_args})" if model_args else "")
    else:
        model = check_value("model", args.model, "command line", "--model")
        size = check_value("model_size", args.model_size, "command line", "--model-size")
        spec = JobSpec(model=model, model_size=size, model_args=model_args, world_size=1)
        check_workloads([spec], "command line")
        tensors, label = facts(spec).tensor_bytes, spec.model_label
    buckets = predicted_buckets(tensors, args.bucket_cap_mb)
    # in DDP's order: the last layers' first
    work = Work(compute_ms=args.compute_ms, bucket_bytes=buckets, **_settings(args, args.batch_size))
    args.batch = args.batch_size
    costs, sources = _costs(args)
    # nothing ran: the buckets are predicted (reverse registration order), and said to be
    print_whatif(args, f"{label}: predicted layout: {len(buckets)} bucket(s) of at most "
                 f"{args.bucket_cap_mb:g} MB", work, cluster, costs, sources)
    return 0
