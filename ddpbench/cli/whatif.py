"""``python -m ddpbench whatif``: what a workload's step would cost on a cluster you describe
(:mod:`ddpbench.analysis.models.whatif`). Model output, not a measurement."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from ddpbench.cli.models import check_model_flags
from ddpbench.cli.shared.finish import add_finish_flags, check_finish
from ddpbench.cli.shared.gbatch import add_accumulation_flags, print_step
from ddpbench.cli.shared.parsing import Given, finite_float, whole_numbers
from ddpbench.cli.shared.units import add_memory_flag, check_units
from ddpbench.errors import InputError
from ddpbench.experiment.cost import Cost, with_flags
from ddpbench.show.answers import settings


def add_parser(sub) -> None:
    p = sub.add_parser("whatif", help="model a workload's scaling on a cluster you describe",
                       description="Step time and scaling efficiency of DDP (and master aggregation) for a "
                       "workload on a described cluster, per world size: model output, not a measurement.")
    given = partial(p.add_argument, action=Given)  # a flag that describes a cluster or a setting
    p.add_argument("--model", default="resnet50", help="what trains: a preset, reference model or factory "
                   "(its gradient tensors give the buckets; default: resnet50), or a large model's layout built on "
                   "the meta device: llama-7b, llama-13b, llama-70b, gpt3-1.3b, gpt3-175b, bart-large")
    p.add_argument("--model-size", default="s", help="size preset of mlp, cnn and transformer (default: s)")
    p.add_argument("--bucket-cap-mb", type=finite_float, default=25.0, help="DDP's bucket cap (default: 25)")
    given("--compute-ms", type=finite_float,
                   help="a device's step alone: forward, backward, optimizer (default: none, needed without --from)")
    p.add_argument("--from", dest="from_dir", type=Path, metavar="FOLDER",
                   help="instead of --model and --compute-ms: what a sweep's results folder or a folder of profiler "
                   "traces measured (compute, buckets, spread), projected on the link it measured, or, with any "
                   "cluster flag, on the cluster described (default: none)")
    given("--gpus-per-node", type=int, default=8, help="devices per node; typed, every size is whole nodes of it "
          "(default: 8, a DGX node, and any size)")
    given("--intra-gbit", type=finite_float, default=2400.0, help="a device's link in a node, Gbit/s (default: "
                   "2400, NVLink 3 as in a DGX A100)")
    given("--inter-gbit", type=finite_float, default=100.0, help="a node's network, all NICs, Gbit/s (default: 100, "
                   "one 100 Gbit/s NIC)")
    given("--intra-latency-us", type=finite_float, default=3.4, help="latency per all-reduce step inside a "
                   "node (default: NCCL's for NVLink, 3.4; its PCIe figure is 5.7)")
    given("--inter-latency-us", type=finite_float, default=14.0, help="latency per all-reduce step between "
                   "nodes (default: NCCL's for the network, 14)")
    given("--algorithm", default="auto", choices=("auto", "ring", "tree", "hierarchical", "nvls"),
                   help="all-reduce algorithm (default: auto, the fastest per bucket, as NCCL's tuner picks)")
    given("--nvls", nargs=0, const=True, default=False, help="NVLink SHARP in nodes, H100 (default: off)")
    given("--target-efficiency", type=finite_float, default=0.9, help="for the largest world size and the "
                   "link rate needed (default: 0.9)")
    given("--batch-size", type=int, metavar="N", help="samples per device per step: with a price or "
                   "--samples, for the time and cost of training (default: none; with --from, the measured one)")
    given("--price-per-device-hour", type=finite_float, metavar="N",
                   help="price of one device for an hour: the cost of training at each size (default: none)")
    given("--price-per-node-hour", type=finite_float, metavar="N", help="a node's price an hour (default: 0)")
    given("--currency", default=None, metavar="TEXT", help="the prices' currency (default: USD)")
    add_finish_flags(p)  # the run's work, the floor and the queue: ddpbench/cli/shared/finish.py
    # the settings people train with and the terms that grow with N: ddpbench/analysis/models/terms.py
    p.add_argument("--model-args", default="", metavar="TABLE", help="its arguments: '{ layers = 2 }' (default: none)")
    p.add_argument("--world-sizes", type=whole_numbers, metavar="N,N", help="any world sizes (default: 1, 2 .. 1024; "
                   "with --gpus-per-node typed, 1, 2 .. nodes of it up to 1024 devices)")
    given("--grad-dtype", default="fp32", help="gradients' dtype: fp32, or bf16/fp16 (half the bytes; default: fp32)")
    add_accumulation_flags(p, given)  # --accumulation, or a fixed global batch: ddpbench/cli/shared/gbatch.py
    given("--shard", default="none", help="zero1, zero2, zero3 or fsdp: their collectives and memory (default: none)")
    add_memory_flag(given)  # the device's memory, the sizes in whole nodes: ddpbench/cli/shared/units.py
    given("--input-samples-per-s", type=finite_float, metavar="N", help="a node's input, samples/s (default: no limit)")
    given("--rank-spread-pct", type=finite_float, metavar="PCT", help="ranks' step spread, %% (default: published fit)")
    given("--half-rate-mb", type=finite_float, metavar="MB", help="size at half rate (default: published fit)")
    given("--oversubscription", type=finite_float, default=1.0, metavar="X", help="past --leaf-nodes (default: 1)")
    given("--leaf-nodes", type=int, default=1, metavar="N", help="nodes at full rate (default: 1)")
    given("--transport", default="rdma", choices=("rdma", "tcp"), help="between nodes (default: rdma)")
    p.add_argument("--validate", action="store_true", help="instead: the model leave-one-source-out on published "
                   "scaling (ddpbench/analysis/models/published_scaling.toml), with its band (default: off)")
    p.set_defaults(func=command, given=())


#: flags that ask, not describe a cluster: with --from alone, the target is answered on the link, the rest refused
QUESTIONS = ("target_efficiency", "price_per_device_hour", "price_per_node_hour", "currency", "batch_size",
             "global_batch")
#: flags that describe the device, not the links: with --from alone, answered on the link it measured
ON_THE_LINK = ("device_memory_gb", "optimizer")

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
                                    "--price-per-node-hour": args.price_per_node_hour, "--currency": args.currency})
    check_finish(args)
    training = args.cost.priced or args.amount is not None
    if training and args.batch_size is None and args.from_dir is None and args.global_batch is None:
        raise InputError("command line", "--batch-size", "is needed for the time and cost of training: the samples "
                         "each device trains per step (or give --from a results folder)")
    check_units(args)


def command(args) -> int:
    from ddpbench.analysis.models import COSTS, Cluster, Work, with_inputs

    if args.validate:
        from ddpbench.show.console_tables import print_validation
        return print_validation()
    _check(args)
    if args.from_dir is not None and not set(args.given) - {*QUESTIONS, *ON_THE_LINK}:  # no cluster: the link measured
        if training := ("--samples" if args.amount.samples else "--steps") if args.amount else next(
                (f"--{d.replace('_', '-')}" for d in QUESTIONS[1:] if d in args.given), None):
            raise InputError("command line", training, ("the time to finish" if args.amount else "the cost and batch "
                             "of training") + " is given on a cluster described, with its band, never on one assumed: "
                             "add the cluster it would run on (--gpus-per-node, --inter-gbit, ...) to --from")
        from ddpbench.cli.shared.measured import measured_inputs, print_measured

        pairs, holdout, reproduced = measured_inputs(args.from_dir, args)
        print_measured(args.from_dir, pairs, holdout, reproduced, args.world_sizes,
                       args.target_efficiency if "target_efficiency" in args.given else None, args.device_memory,
                       args.optimizer if "optimizer" in args.given else None)
        return 0
    nvls = ("nvls",) if args.nvls or args.algorithm == "nvls" else ()
    cluster = Cluster(args.gpus_per_node, args.intra_gbit, args.inter_gbit, args.intra_latency_us,
                      args.inter_latency_us, oversubscription=args.oversubscription, leaf_nodes=args.leaf_nodes,
                      transport=args.transport, algorithms=("ring", "tree", "hierarchical", *nvls))
    if args.from_dir is not None:  # what it measured, on the cluster described
        from ddpbench.cli.shared.measured import print_described

        print_described(args, cluster)
        return 0
    from ddpbench.cli.models import whatif_layout
    # nothing ran: the buckets are predicted (reverse registration order, the last layers' first), and said to be
    buckets, ready, said = whatif_layout(args.model, args.model_size, args.model_args, args.bucket_cap_mb)
    work = Work(compute_ms=args.compute_ms, bucket_bytes=buckets, ready=ready, **settings(args, args.batch_size))
    args.batch = args.batch_size
    costs, sources = with_inputs(COSTS, args.rank_spread_pct, args.half_rate_mb)
    print_step(args, said, work, cluster, costs, sources)
    return 0
