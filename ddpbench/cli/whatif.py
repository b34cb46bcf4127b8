"""``python -m ddpbench whatif``: what a workload's step would cost on a cluster you describe
(:mod:`ddpbench.analysis.models.whatif`). Model output, not a measurement."""

from __future__ import annotations

from pathlib import Path

from ddpbench.cli.models import check_model_flags
from ddpbench.commandline.parsing import finite_float, whole_numbers
from ddpbench.errors import InputError
from ddpbench.experiment.cost import Cost, with_flags
from ddpbench.show.answers import print_whatif, settings


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
    p.add_argument("--nvls", action="store_true", help="NVLink SHARP in the nodes (H100, NCCL 2.17+)")
    p.add_argument("--target-efficiency", type=finite_float, default=0.9, help="for the largest world size and the "
                   "link rate needed (default: 0.9)")
    p.add_argument("--batch-size", type=int, metavar="N", help="samples per device per step: with a price or "
                   "--train-samples, for the time and cost of training (default with --from: the measured one)")
    p.add_argument("--price-per-device-hour", type=finite_float, metavar="N",
                   help="price of one device for an hour: the cost of training at each world size")
    p.add_argument("--price-per-node-hour", type=finite_float, metavar="N", help="a node's price an hour (default: 0)")
    p.add_argument("--currency", default=None, metavar="TEXT", help="the prices' currency (default: USD)")
    p.add_argument("--train-samples", type=int, metavar="N", help="samples of the run to cost (default: a million)")
    # the settings people train with and the terms that grow with N: ddpbench/analysis/models/terms.py
    p.add_argument("--model-args", default="", metavar="TABLE", help="the model's arguments: '{ layers = 24 }'")
    p.add_argument("--world-sizes", type=whole_numbers, metavar="N,N", help="any world sizes (default: 1, 2 .. 1024)")
    p.add_argument("--grad-dtype", default="fp32", help="gradients' dtype: fp32, or bf16/fp16 (half the bytes)")
    p.add_argument("--accumulation", type=int, default=1, metavar="N", help="micro-steps per all-reduce (default: 1)")
    p.add_argument("--shard", default="none", help="zero1, zero2, zero3 or fsdp: their collectives (default: none)")
    p.add_argument("--input-samples-per-s", type=finite_float, metavar="N", help="a node's input pipeline, samples/s")
    p.add_argument("--rank-spread-pct", type=finite_float, metavar="PCT", help="per-rank step spread (%%)")
    p.add_argument("--half-rate-mb", type=finite_float, metavar="MB", help="a collective's size at half the rate")
    p.add_argument("--oversubscription", type=finite_float, default=1.0, metavar="X", help="beyond --leaf-nodes")
    p.add_argument("--leaf-nodes", type=int, default=1, metavar="N", help="nodes at full rate (default: 1)")
    p.add_argument("--transport", default="rdma", choices=("rdma", "tcp"), help="between nodes (default: rdma)")
    p.add_argument("--validate", action="store_true", help="instead: the model leave-one-source-out on published "
                   "scaling (ddpbench/analysis/models/published_scaling.toml), with its band")
    p.set_defaults(func=command)


#: each number flag's least value and whether that value itself is allowed (None: not given, allowed)
BOUNDS = {"--compute-ms": (0, False), "--bucket-cap-mb": (0, False), "--intra-gbit": (0, False),
          "--inter-gbit": (0, False), "--input-samples-per-s": (0, False), "--intra-latency-us": (0, True),
          "--inter-latency-us": (0, True), "--rank-spread-pct": (0, True), "--half-rate-mb": (0, True),
          "--gpus-per-node": (1, True), "--batch-size": (1, True), "--accumulation": (1, True),
          "--leaf-nodes": (1, True), "--oversubscription": (1, True)}


def _check(args) -> None:
    check_model_flags(args)
    if args.nvls and args.algorithm not in ("auto", "nvls"):
        raise InputError("command line", "--nvls", f"does nothing with --algorithm {args.algorithm}: NVLS is an "
                         "algorithm, taken with --algorithm auto (where fastest) or nvls; drop one of them")
    if args.compute_ms is None and args.from_dir is None:
        raise InputError("command line", "--compute-ms", "is needed: one device's step in ms (or give --from a "
                         "results folder, or --validate)")
    for flag, (low, inclusive) in BOUNDS.items():
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is not None and not (value >= low if inclusive else value > low):  # also false for NaN
            raise InputError("command line", flag, f"must be {low:g} or more (got {value:g})" if inclusive
                             else f"must be a number above {low:g} (got {value:g})")
    from ddpbench.analysis.models import GRAD_BYTES, SHARDS

    for flag, value, allowed in (("--grad-dtype", args.grad_dtype, GRAD_BYTES), ("--shard", args.shard, SHARDS)):
        if value not in allowed:
            raise InputError("command line", flag, f"must be one of {', '.join(allowed)} (got {value!r})")
    if not 0 < args.target_efficiency <= 1:
        raise InputError("command line", "--target-efficiency", f"must be above 0 and at most 1 "
                         f"(got {args.target_efficiency:g})")
    if args.input_samples_per_s is not None and args.batch_size is None and args.from_dir is None:
        raise InputError("command line", "--batch-size", "is needed with --input-samples-per-s: the samples "
                         "each device takes per step")
    args.cost = with_flags(Cost(), {"--price-per-device-hour": args.price_per_device_hour,
                                    "--price-per-node-hour": args.price_per_node_hour, "--currency": args.currency,
                                    "--train-samples": args.train_samples})
    training = args.cost.priced or args.cost.samples is not None
    if training and args.batch_size is None and args.from_dir is None:
        raise InputError("command line", "--batch-size", "is needed for the time and cost of training: the samples "
                         "each device trains per step (or give --from a results folder)")


def _measured(folder: Path) -> list:
    """The workloads a sweep measured (:func:`ddpbench.analysis.models.costmodel.workloads`)."""
    from ddpbench.results.schema import RESULTS_FILE

    if not (folder / RESULTS_FILE).is_file():
        raise InputError(str(folder), RESULTS_FILE, "not found; give --from a folder written by `ddpbench sweep`")
    from ddpbench.analysis.folder import load
    from ddpbench.analysis.models import workloads

    measured = load(folder)  # loaded and summarised once, with its all_reduce curve
    found = workloads(measured.summary, measured.ranks)
    if not found:
        raise InputError(str(folder), "world_size", "no finished DDP job at world size 1 to take the compute from; "
                         "sweep world_size = [1, ...] first")
    return found, measured


def command(args) -> int:
    from ddpbench.analysis.models import COSTS, Cluster, Work, with_inputs

    if args.validate:
        from ddpbench.show.console_tables import print_validation

        return print_validation()

    _check(args)
    nvls = ("nvls",) if args.nvls or args.algorithm == "nvls" else ()
    cluster = Cluster(args.gpus_per_node, args.intra_gbit, args.inter_gbit, args.intra_latency_us,
                      args.inter_latency_us, oversubscription=args.oversubscription, leaf_nodes=args.leaf_nodes,
                      transport=args.transport, algorithms=("ring", "tree", "hierarchical", *nvls))
    if args.from_dir is not None:
        from ddpbench.show.answers import print_from

        found, folder = _measured(args.from_dir)
        print_from(args, found, folder, cluster)
        return 0
    from ddpbench.cli.models import whatif_layout

    # nothing ran: the buckets are predicted (reverse registration order, the last layers' first), and said to be
    buckets, ready, said = whatif_layout(args.model, args.model_size, args.model_args, args.bucket_cap_mb)
    work = Work(compute_ms=args.compute_ms, bucket_bytes=buckets, ready=ready, **settings(args, args.batch_size))
    args.batch = args.batch_size
    costs, sources = with_inputs(COSTS, args.rank_spread_pct, args.half_rate_mb)
    print_whatif(args, said, work, cluster, costs, sources)
    return 0
