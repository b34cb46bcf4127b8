"""Command line: one parser function and one command function per subcommand.

Bad input (experiment files, flags, folders) ends with one line on stderr naming the file or
flag, the key and what is allowed, and exit code 2 -- never a traceback.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import shlex
import signal
import sys
import warnings
from pathlib import Path

from ddpbench.errors import InputError
from ddpbench.launch import LAUNCHERS

DEFAULT_EXPERIMENT = "experiments/quick.toml"
DEFAULT_COLLECTIVES = "experiments/collectives.toml"
EXIT_FAILED = 1  # a job failed or timed out, or results could not be written
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def say_error(text: str) -> None:
    """One line on stderr, whatever the user typed: control characters (a newline in a flag's
    value) and the lone surrogates a non-UTF-8 file name arrives as are written as escapes."""
    sys.stderr.write("".join(c if c.isprintable() else ascii(c)[1:-1] for c in text) + "\n")
    sys.stderr.flush()


class _Parser(argparse.ArgumentParser):
    """argparse, but its errors are one line like every other bad-input error."""

    def error(self, message: str):
        say_error(f"{self.prog}: error: {message} (see {self.prog} --help)")
        self.exit(EXIT_BAD_INPUT)


# ---------------------------------------------------------------------------------------------
# sweep
# ---------------------------------------------------------------------------------------------

def add_sweep(sub) -> None:
    p = sub.add_parser("sweep", help="run every job of an experiment and write the report",
                       description="Run every job of an experiment file, store the results and write the report.")
    p.add_argument("experiment", nargs="?", default=DEFAULT_EXPERIMENT,
                   help=f"experiment TOML file (default: {DEFAULT_EXPERIMENT})")
    p.add_argument("--out", type=Path, help="output folder (default: reports/<experiment name>/)")
    p.add_argument("--resume", action="store_true", help="keep stored results and run only the missing launches")
    p.add_argument("--dry-run", action="store_true", help="list the jobs and exit without running them")
    p.add_argument("--timeout", type=float, metavar="S", help="per-launch timeout in seconds (overrides timeout_s)")
    p.add_argument("--launcher", default="spawn", choices=LAUNCHERS, help="how ranks start (default: spawn)")
    p.add_argument("--nodes", type=int, default=1, metavar="N",
                   help="slurm: nodes a job's ranks are spread over (default: 1)")
    p.add_argument("--partition", help="slurm: the partition to submit to (default: the cluster's default)")
    p.add_argument("--array", action="store_true", help="slurm: submit the launches as job arrays, not one by one")
    p.add_argument("--gpus-per-node", type=int, metavar="N",
                   help="slurm: GPUs on each compute node, for checking CUDA jobs when this machine (a login "
                        "node) has other GPUs or none (default: the GPUs visible here)")
    p.add_argument("--nnodes", type=int, default=1, metavar="N",
                   help="torchrun: machines the sweep runs on; run it on each with its --node-rank (default: 1)")
    p.add_argument("--node-rank", type=int, default=0, metavar="R",
                   help="torchrun: this machine's node rank; node 0 stores the results (default: 0)")
    p.add_argument("--rdzv-endpoint", metavar="HOST:PORT",
                   help="torchrun: where the nodes meet (c10d rendezvous on node 0; needed with --nnodes > 1)")
    p.add_argument("--emulate-nodes", type=int, metavar="N",
                   help="run every job on N emulated nodes on this machine (network namespaces; needs root)")
    p.add_argument("--link", metavar="RATE", help="emulated nodes: each node's link rate, e.g. 1gbit or 100mbit")
    p.add_argument("--link-delay-ms", type=float, metavar="MS",
                   help="emulated nodes: one-way delay added to each link in ms (needs tc's netem)")
    p.add_argument("--no-report", action="store_true", help="store results but do not write the report")
    p.set_defaults(func=cmd_sweep)


def cmd_sweep(args) -> int:
    import dataclasses

    from ddpbench.spec import load_experiment

    launcher = launcher_from(args)
    machine = machine_from(args)
    experiment = load_experiment(args.experiment, machine)
    if args.timeout is not None:
        experiment = dataclasses.replace(experiment, timeout_s=check_timeout(args.timeout))
    experiment = with_emulation(experiment, args)
    out_dir = args.out or Path("reports") / experiment.name
    return run_and_report(experiment, out_dir, args, launcher, machine)


def machine_from(args):
    """This machine, as each node of a job is taken to be (flags checked by :func:`launcher_from`):
    a job over several nodes (torchrun's --nnodes, Slurm's --nodes) runs world_size / nodes ranks,
    and takes as many GPUs, on each. Slurm's compute nodes may have GPUs the login node lacks:
    --gpus-per-node says how many."""
    import dataclasses

    from ddpbench.spec import Machine

    if args.launcher != "slurm":
        return Machine.here(nodes=args.nnodes)
    machine = Machine.here(nodes=args.nodes)
    if args.gpus_per_node is not None:
        machine = dataclasses.replace(machine, cuda_devices=args.gpus_per_node)
    return machine


#: (flag, job field) of the emulated-node flags; a flag sets the field in every job
EMULATION_FLAGS = (("--emulate-nodes", "emulate_nodes"), ("--link", "link"), ("--link-delay-ms", "link_delay_ms"))


def with_emulation(experiment, args):
    """The experiment with the emulated-node flags applied to every job, checked as the file's values are."""
    import dataclasses

    from ddpbench.spec import check_nodes_and_faults, check_value

    fields = {field: check_value(field, getattr(args, field), "command line", flag)
              for flag, field in EMULATION_FLAGS if getattr(args, field) is not None}
    if fields:
        jobs = {}
        for spec in experiment.jobs:
            spec = dataclasses.replace(spec, **fields)
            check_nodes_and_faults(spec, "command line")
            jobs.setdefault(spec.key, spec)
        experiment = dataclasses.replace(experiment, jobs=tuple(jobs.values()))
    return experiment


def check_can_emulate(experiment, args) -> None:
    """Before anything runs: whether this machine can emulate the nodes the jobs ask for."""
    from ddpbench.launch.emulate import emulation_problem

    emulated = [spec for spec in experiment.jobs if spec.emulated]
    if not emulated:
        return
    delay = any(spec.link_delay_ms for spec in emulated)
    problem = emulation_problem(delay=delay)
    if problem:
        netem = delay and "netem" in problem
        if experiment.source == "command line" or any(getattr(args, f, None) is not None for _, f in EMULATION_FLAGS):
            raise InputError("command line", "--link-delay-ms" if netem else "--emulate-nodes", problem)
        raise InputError(experiment.source, "link_delay_ms" if netem else "emulate_nodes", problem)


def launcher_from(args):
    """The launcher the flags ask for; one launcher's own flags with another are an error."""
    from ddpbench.launch import get_launcher

    owned = {"slurm": (("--nodes", args.nodes != 1), ("--partition", args.partition is not None),
                       ("--array", args.array), ("--gpus-per-node", args.gpus_per_node is not None)),
             "torchrun": (("--nnodes", args.nnodes != 1), ("--node-rank", args.node_rank != 0),
                          ("--rdzv-endpoint", args.rdzv_endpoint is not None))}
    for launcher, flags in owned.items():
        for flag, given in flags:
            if given and args.launcher != launcher:
                raise InputError("command line", flag, f"applies to --launcher {launcher} only (got --launcher "
                                 f"{args.launcher})")
    for flag, value in (("--nodes", args.nodes), ("--nnodes", args.nnodes)):
        if not 1 <= value <= 100_000:
            raise InputError("command line", flag, f"must be 1 to 100000 (got {value})")
    if args.gpus_per_node is not None and not 0 <= args.gpus_per_node <= 1024:
        raise InputError("command line", "--gpus-per-node", f"must be 0 to 1024 (got {args.gpus_per_node})")
    if not 0 <= args.node_rank < args.nnodes:
        raise InputError("command line", "--node-rank", f"must be 0 to {args.nnodes - 1} (got {args.node_rank})")
    if args.nnodes > 1 and not re.fullmatch(r"\[?[\w.:-]+\]?:\d{1,5}", args.rdzv_endpoint or ""):
        raise InputError("command line", "--rdzv-endpoint", "must be HOST:PORT, node 0's address and a port its "
                         f"agent can listen on, with --nnodes > 1 (got {args.rdzv_endpoint!r})")
    return get_launcher(args.launcher, nodes=args.nodes if args.launcher == "slurm" else args.nnodes,
                        partition=args.partition, array=args.array, node_rank=args.node_rank,
                        rdzv_endpoint=args.rdzv_endpoint)


def node_commands(args) -> list[str]:
    """The command each other node of a multi-node torchrun sweep runs: this one, its node rank changed."""
    argv = list(args.argv)
    for i, arg in enumerate(argv):  # drop this node's own --node-rank
        if arg == "--node-rank":
            del argv[i:i + 2]
            break
        if arg.startswith("--node-rank="):
            del argv[i]
            break
    return [shlex.join(["python", "-m", "ddpbench", *argv, "--node-rank", str(rank)])
            for rank in range(1, args.nnodes)]


def check_timeout(seconds: float) -> float:
    if not 1 <= seconds <= 7 * 86400:  # also false for NaN
        raise InputError("command line", "--timeout", f"must be 1 to 604800 seconds (got {seconds:g})")
    return seconds


def run_and_report(experiment, out_dir: Path, args, launcher, machine) -> int:
    from rich.console import Console

    from ddpbench.runner import pending_launches, run_sweep

    console = Console(stderr=True)
    if args.dry_run:
        print_jobs(experiment, machine)
        print_launch_plan(experiment, out_dir, launcher, args)
        return 0
    check_can_emulate(experiment, args)
    check_out_dir(out_dir)
    if args.nnodes > 1 and args.node_rank == 0:
        console.print(f"[bold]{args.nnodes} nodes[/bold]: run on every other node, with {out_dir} on a file "
                      "system all of them see:", highlight=False)
        for command in node_commands(args):
            console.print(f"  {command}", highlight=False, soft_wrap=True)
    console.print(f"[bold]{experiment.name}[/bold]: {len(experiment.jobs)} jobs, "
                  f"{len(pending_launches(experiment, set()))} launches -> {out_dir}/  "
                  f"({machine.cores} cores, {machine.cuda_devices} GPUs)", highlight=False)
    try:
        summary = run_sweep(experiment, out_dir, resume=args.resume, launcher=launcher,
                            machine=machine, console=console)
        if experiment.collectives is not None:
            from ddpbench.runner import run_collectives

            console.print(f"[bold]collectives[/bold]: {len(experiment.collectives.specs)} launch(es) for the "
                          "cost model and the nccl-tests table", highlight=False)
            run_collectives(experiment.collectives, out_dir, resume=args.resume, console=console)
    except KeyboardInterrupt:
        hint = (f"`python -m ddpbench sweep {experiment.source} --out {out_dir} --resume` finishes the rest"
                if Path(experiment.source).is_file() else "run the same command again to measure it")
        console.print(f"[red]interrupted[/red]: finished launches are stored in {out_dir}/; {hint}",
                      highlight=False)
        return EXIT_INTERRUPTED
    if summary.timed_s:
        console.print(f"sweep wall time {summary.wall_s:.1f} s, timed step windows {summary.timed_s:.1f} s "
                      f"(ratio {summary.wall_s / summary.timed_s:.2f}); {summary.already_done} launches were "
                      f"already stored", highlight=False)
    return finish_report(out_dir, console, write=not args.no_report)


def finish_report(out_dir: Path, console, write: bool = True) -> int:
    from ddpbench.analysis import summarize
    from ddpbench.results import load

    table = summarize(load(out_dir))
    print_summary(table)
    if write:
        from ddpbench.report import write_report

        index = write_report(out_dir)
        console.print(f"report: {index}", highlight=False)
    failed = int(table["status"].isin(["failed", "timed_out"]).sum()) if len(table) else 0
    return EXIT_FAILED if failed else 0


def check_out_dir(out_dir: Path) -> None:
    """The output folder must be a folder we can write, and its results file a file."""
    from ddpbench.results import RESULTS_FILE

    if out_dir.exists() and not out_dir.is_dir():
        raise InputError("command line", "--out", f"{out_dir} is a file; give a folder")
    if (out_dir / RESULTS_FILE).exists() and not (out_dir / RESULTS_FILE).is_file():
        raise InputError("command line", "--out", f"{out_dir / RESULTS_FILE} is not a file; give another folder")
    probe = out_dir / f".ddpbench-write-test-{os.getpid()}"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as err:
        raise InputError("command line", "--out", f"cannot write to {out_dir}: {err.strerror}; "
                         "give a folder you can write") from None


def table_console():
    """A console for tables: a pipe or log file gets full-width rows, not 80 squeezed columns."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=160)


def print_jobs(experiment, machine) -> None:
    from rich.table import Table

    from ddpbench.spec import oversubscribed

    table = Table(title=f"{experiment.name}: {len(experiment.jobs)} jobs ({experiment.source})")
    for col in ("key", "strategy", "model", "ws", "bucket MB", "batch/rank", "threads", "steps", "repeats", "note"):
        table.add_column(col)
    for s in experiment.jobs:
        note = "oversubscribed" if oversubscribed(s, machine) else ""
        table.add_row(s.key, s.strategy, f"{s.model}-{s.model_size}", str(s.world_size), f"{s.bucket_cap_mb:g}",
                      str(s.per_rank_batch), str(s.threads_per_rank), str(s.steps), str(s.repeats), note)
    table_console().print(table)


def print_launch_plan(experiment, out_dir: Path, launcher, args) -> None:
    """What --dry-run shows beyond the jobs: the other nodes' commands, or the sbatch scripts."""
    from ddpbench.runner import pending_launches

    if args.nnodes > 1:
        print("run on every other node:" if args.node_rank == 0 else "the other nodes run:")
        for command in node_commands(args):
            print(f"  {command}")
    if args.launcher == "slurm":
        launches = [(spec, repeat, out_dir / ".work" / f"{spec.key}-r{repeat}")
                    for spec, repeat in pending_launches(experiment, set())]
        for name, script in launcher.dry_run_scripts(launches, out_dir / "logs", experiment.timeout_s):
            print(f"# ---- {name}")
            print(script, end="")


def print_summary(table) -> None:
    from rich.table import Table

    if table.empty:
        return
    nodes = "emulate_nodes" in table and bool((table["emulate_nodes"] > 1).any())
    devices = table["device"].nunique() > 1  # CPU jobs beside GPU ones
    gpu = "gpu_peak_allocated_mb" in table and bool(table["gpu_peak_allocated_mb"].notna().any())
    out = Table(title="per job: median over measured steps (slowest rank); speedup vs world size 1")
    for col in ("strategy", "model", *(("device",) if devices else ()), "ws", *(("nodes x link",) if nodes else ()),
                "bucket MB", "status", "step ms", "IQR", "samples/s", "speedup", "eff.", "comm ms", "max MB/step",
                *(("GPU MB",) if gpu else ()), "max |diff|", "flags"):
        out.add_column(col, justify="left" if col in ("strategy", "model", "device", "status", "flags") else "right")

    def num(value, fmt):
        return "-" if value != value else format(value, fmt)  # NaN -> "-"

    for _, r in table.iterrows():
        flags = [f for f in ("oversubscribed", "noisy") if r[f]]
        if r.get("exact") is False:
            flags.append("lossy")
        if r["strategy"] == "dp" and r["device"] == "cpu":
            flags.append("1 replica: CPU baseline")
        strategy = r["strategy"] + (f"+{r['comm_hook']}" if r.get("comm_hook", "none") != "none" else "")
        # communication a step waits for: explicit (after backward) plus what DDP's overlap left exposed
        comm = max(r["exposed_comm_ms"], 0) if r["exposed_comm_ms"] == r["exposed_comm_ms"] else 0.0
        comm += r["comm_ms"] if r["comm_ms"] == r["comm_ms"] else 0.0
        comm = comm if r["status"] == "ok" else float("nan")
        link = (f"{r['emulate_nodes']} x {r['link']}" if r["emulate_nodes"] > 1 else "-",) if nodes else ()
        device = (f"{r['backend']}/{r['device']}",) if devices else ()
        memory = (num(r["gpu_peak_allocated_mb"], ",.0f"),) if gpu else ()  # the fullest GPU's peak
        out.add_row(strategy, f"{r['model']}-{r['model_size']}", *device, str(r["world_size"]), *link,
                    f"{r['bucket_cap_mb']:g}", r["status"], num(r["step_ms_median"], ".2f"), num(r["step_ms_iqr"], ".2f"),
                    num(r["samples_per_s"], ".1f"), num(r["speedup"], ".2f"), num(r["efficiency"], ".0%"),
                    num(comm, ".2f"), num(r.get("sent_mb_per_step_max", float("nan")), ".1f"), *memory,
                    num(r.get("max_abs_diff", float("nan")), ".1e"), ", ".join(flags))
    table_console().print(out)


# ---------------------------------------------------------------------------------------------
# run: one job from flags
# ---------------------------------------------------------------------------------------------

def add_run(sub) -> None:
    from ddpbench.spec import FIELDS, allowed_text

    p = sub.add_parser("run", help="run one job given by flags",
                       description="Run one job described by flags (the fields of an experiment's [defaults]).")
    for name, f in FIELDS.items():
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, metavar="V",
                       help=f"{f.metadata['help']}; {allowed_text(name)} (default: {f.default})")
    p.add_argument("--out", type=Path, help="output folder (default: reports/run-<job key>/)")
    p.add_argument("--timeout", type=float, default=600, metavar="S", help="timeout in seconds (default: 600)")
    p.set_defaults(func=cmd_run, resume=False, dry_run=False, launcher="spawn", nodes=1, partition=None,
                   array=False, gpus_per_node=None, nnodes=1, node_rank=0, rdzv_endpoint=None, no_report=False)


def parse_flag(name: str, text: str):
    """Turn a flag's text into a field value; check_value then validates it."""
    from ddpbench.spec import FIELDS

    kind = FIELDS[name].type
    if kind == "bool":
        return {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}.get(text.lower(), text)
    if text == "auto" or kind == "str":
        return text
    try:
        return float(text) if kind == "float" else int(text)
    except ValueError:
        return text


def cmd_run(args) -> int:
    from ddpbench.spec import FIELDS, Experiment, JobSpec, check_value, resolve

    given = {}
    for name in FIELDS:
        text = getattr(args, name)
        if text is not None:
            flag = f"--{name.replace('_', '-')}"
            given[name] = check_value(name, parse_flag(name, text), "command line", flag)
    launcher, machine = launcher_from(args), machine_from(args)
    spec = resolve(JobSpec(**given), machine, "command line")
    experiment = Experiment(name=f"run-{spec.key}", description="one job from the command line",
                            source="command line", timeout_s=check_timeout(args.timeout), jobs=(spec,))
    return run_and_report(experiment, args.out or Path("reports") / experiment.name, args, launcher, machine)


# ---------------------------------------------------------------------------------------------
# report, env, models
# ---------------------------------------------------------------------------------------------

def add_collectives(sub) -> None:
    p = sub.add_parser("collectives", help="collective micro-benchmarks (algbw/busbw as nccl-tests defines them)",
                       description="Time and check collectives at many sizes; flags override the experiment file.")
    p.add_argument("experiment", nargs="?", default=DEFAULT_COLLECTIVES,
                   help=f"collectives TOML file (default: {DEFAULT_COLLECTIVES})")
    p.add_argument("--ops", help="comma-separated: all_reduce,all_gather,reduce_scatter,broadcast,reduce,"
                                 "all_to_all,send_recv")
    p.add_argument("--sizes", help="first:last (e.g. 1K:256M) or a comma-separated list")
    p.add_argument("--factor", type=float, help="size multiplier between steps of first:last (default: 2)")
    p.add_argument("--world-sizes", help="comma-separated, e.g. 2,4")
    p.add_argument("--backend", help="gloo or nccl")
    p.add_argument("--iters", type=int, help="timed iterations per size")
    p.add_argument("--warmup", type=int, help="untimed iterations per size")
    p.add_argument("--out", type=Path, help="output folder (default: reports/<name>/; a sweep's folder works too)")
    p.add_argument("--timeout", type=float, metavar="S", help="per-launch timeout in seconds")
    p.add_argument("--resume", action="store_true", help="skip the world sizes already stored")
    p.add_argument("--no-report", action="store_true", help="store results but do not write the report")
    p.set_defaults(func=cmd_collectives)


def cmd_collectives(args) -> int:
    from rich.console import Console

    from ddpbench.collectives import parse_collectives
    from ddpbench.runner import run_collectives
    from ddpbench.spec import Machine, read_toml

    path = Path(args.experiment)
    data = read_toml(path)
    flags = {"ops": args.ops, "sizes": args.sizes, "factor": args.factor, "world_sizes": args.world_sizes,
             "backend": args.backend, "iters": args.iters, "warmup": args.warmup, "timeout_s": args.timeout}
    flags = {k: v for k, v in flags.items() if v is not None}
    machine = Machine.here()
    # the file alone must be valid; then the flags over it
    experiment = parse_collectives(data, str(path), default_name=path.stem, machine=None if flags else machine)
    if flags:
        experiment = parse_collectives({**data, **flags}, "command line", default_name=path.stem, machine=machine)
    out_dir = args.out or Path("reports") / experiment.name
    check_out_dir(out_dir)
    console = Console(stderr=True)
    try:
        run_collectives(experiment, out_dir, resume=args.resume, console=console)
    except KeyboardInterrupt:
        console.print(f"[red]interrupted[/red]: finished launches are stored in {out_dir}/", highlight=False)
        return EXIT_INTERRUPTED
    from ddpbench.results import load_collectives

    stored = load_collectives(out_dir)
    # this run's launches (and, with --resume, the ones it found done) decide the table and exit code
    keys = {spec.key for spec in experiment.specs}
    table = stored[stored["key"].isin(keys)] if len(stored) else stored
    print_collectives(table)
    if not args.no_report:
        from ddpbench.report import write_report

        console.print(f"report: {write_report(out_dir)}", highlight=False)
    if table.empty:
        return 1
    bad = (table["status"] != "ok").any() or ("wrong" in table and (table["wrong"].fillna(0) > 0).any())
    return 1 if bad else 0


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


def add_report(sub) -> None:
    p = sub.add_parser("report", help="write index.html and plots from stored results",
                       description="Regenerate the report from a results folder alone.")
    p.add_argument("results", type=Path, help="folder holding results.jsonl")
    p.add_argument("--out", type=Path, help="where to write the report (default: the results folder)")
    p.set_defaults(func=cmd_report)


def cmd_report(args) -> int:
    from ddpbench.results import RESULTS_FILE

    if not (args.results / RESULTS_FILE).is_file():
        raise InputError(str(args.results), RESULTS_FILE, "not found; give a folder written by `ddpbench sweep`")
    from ddpbench.report import write_report

    if args.out is not None:
        check_out_dir(args.out)
    index = write_report(args.results, args.out)
    print(index)
    return 0


def add_compare(sub) -> None:
    p = sub.add_parser("compare", help="compare two results folders job by job (B against baseline A)",
                       description="Match the jobs of two results folders by their settings and report B's step "
                                   "time against A's, with significance over launches; optionally fail on a "
                                   "regression. Exit code 1 when a --fail-on gate fails, 2 for bad input.")
    p.add_argument("baseline", type=Path, metavar="A", help="baseline results folder")
    p.add_argument("candidate", type=Path, metavar="B", help="candidate results folder")
    p.add_argument("--fail-on", action="append", default=[], metavar="STAT:THRESHOLD",
                   help="fail (exit 1) when a job of B is slower than in A by more than the threshold beyond "
                        "noise (the whole 95%% interval over launches past it): median:5%%, mean:10%% (mean step "
                        "= inverse throughput), median:2ms, or median:0.002 (a bare number is seconds, as in "
                        "pytest-benchmark's --benchmark-compare-fail); repeatable")
    p.add_argument("--out", type=Path, help="where to write compare.csv, index.html, ratios.png "
                                            "(default: B/compare)")
    p.set_defaults(func=cmd_compare)


def cmd_compare(args) -> int:
    from rich.console import Console
    from rich.markup import escape

    from ddpbench import compare

    gates = [compare.parse_gate(text) for text in args.fail_on]
    side_a = compare.load_side(args.baseline, "A")
    side_b = compare.load_side(args.candidate, "B")
    if not set(side_a.summary["key"]) & set(side_b.summary["key"]):
        raise InputError("command line", None, f"A ({args.baseline}) and B ({args.candidate}) have no job in "
                         "common (jobs match when every setting is equal); compare folders of the same experiment")
    out_dir = args.out or args.candidate / "compare"
    check_out_dir(out_dir)
    table = compare.compare_tables(side_a.summary, side_a.steps, side_b.summary, side_b.steps)
    results = compare.gate_results(table, gates)
    env_diffs = compare.environment_differences(side_a.sweeps, side_b.sweeps)
    print_comparison(table)
    written = compare.write_comparison(table, results, gates, env_diffs, args.baseline, args.candidate, out_dir)
    out = Console(highlight=False, soft_wrap=True)
    for what, va, vb in env_diffs:
        out.print(f"[yellow]warning[/yellow]: the environments differ in {escape(what)}: A {escape(va)} vs "
                  f"B {escape(vb)}")
    failed = results[results["outcome"] == compare.FAIL]
    if gates:
        names = ", ".join(map(str, gates))
        if len(failed):
            out.print(f"[red]gate failed[/red] ({names}): {failed['key'].nunique()} job(s) slower than a "
                      "threshold beyond noise")
        else:
            out.print(f"[green]gate passed[/green] ({names}): no job is slower than a threshold beyond noise")
        for _, g in results[results["outcome"] != compare.PASS].iterrows():
            out.print(f"  {compare.gate_text(g)}", markup=False)
    out.print(f"report: {written['html']}", markup=False)
    return 1 if len(failed) else 0


def print_comparison(table) -> None:
    from rich.markup import escape
    from rich.table import Table

    from ddpbench.compare import FASTER, SLOWER, ratio_text

    def num(value, fmt):
        return "-" if value != value else format(value, fmt)  # NaN -> "-"

    compared = table[table["compared"]]
    if len(compared):
        out = Table(title="B against baseline A, per job (slowest rank, measured steps)")
        for col in ("job", "A median ms", "B median ms", "median B/A", "mean B/A [95% CI]", "throughput",
                    "verdict", "method", "note"):
            out.add_column(col, justify="right" if "ms" in col or "B/A" in col or col == "throughput" else "left")
        for _, r in compared.iterrows():
            style = {SLOWER: "red", FASTER: "green"}.get(r["verdict"], "")
            out.add_row(escape(r["job"]), num(r["median_ms_a"], ".3f"), num(r["median_ms_b"], ".3f"),
                        num(r["median_ratio"], ".3f"), ratio_text(r), num(r["throughput_change_pct"], "+.1f") + " %",
                        f"[{style}]{r['verdict']}[/{style}]" if style else r["verdict"], escape(r["method"]),
                        escape(r["note"]))
        table_console().print(out)
    rest = table[~table["compared"]]
    for _, r in rest.iterrows():
        why = r["match"] if r["match"] != "both" else f"status A {r['status_a']}, B {r['status_b']}"
        print(f"not compared: {r['job']} [{r['key']}]: {why}")


def add_export_benchmark(sub) -> None:
    p = sub.add_parser("export-benchmark", help="write a results folder's jobs as a pytest-benchmark JSON file",
                       description="Write every finished training job of a results folder in pytest-benchmark's "
                                   "JSON format (one benchmark per job; rounds are measured steps, slowest rank, "
                                   "in seconds), so `pytest-benchmark compare A.json B.json` shows them. Failed "
                                   "jobs and collective micro-benchmarks are not exported (stderr says so). Gate "
                                   "two sweeps with `ddpbench compare A B --fail-on median:10%`.")
    p.add_argument("results", type=Path, metavar="DIR", help="folder holding results.jsonl")
    p.add_argument("--out", type=Path, required=True, metavar="FILE.json", help="the JSON file to write")
    p.set_defaults(func=cmd_export_benchmark)


def cmd_export_benchmark(args) -> int:
    from ddpbench.export import export_benchmark

    document, notes, path = export_benchmark(args.results, args.out)
    for line in notes:
        print(line, file=sys.stderr)
    count = len(document["benchmarks"])
    print(f"wrote {count} benchmark{'s' if count != 1 else ''} -> {path}; compare with "
          f"`pytest-benchmark compare {path} OTHER.json` (gate two sweeps with "
          f"`python -m ddpbench compare A B --fail-on median:10%`)")
    return 0


def add_env(sub) -> None:
    p = sub.add_parser("env", help="print the environment block stored with every sweep",
                       description="Print the environment block (versions, hardware, git state) as JSON.")
    p.set_defaults(func=cmd_env)


def cmd_env(args) -> int:
    from ddpbench.env import collect_env

    print(json.dumps(collect_env(), indent=2))
    return 0


def add_models(sub) -> None:
    p = sub.add_parser("models", help="list the models and their size presets",
                       description="Parameter counts and gradient sizes of every model preset.")
    p.set_defaults(func=cmd_models)


def cmd_models(args) -> int:
    from ddpbench.models import build_model, count_params, grad_bytes
    from ddpbench.spec import FIELDS, MODEL_SIZES

    print(f"{'model':<12} {'size':<5} {'params':>12} {'grad MB':>9}")
    for model in FIELDS["model"].metadata["choices"]:
        for size in MODEL_SIZES:
            m = build_model(model, size)
            print(f"{model:<12} {size:<5} {count_params(m):>12,} {grad_bytes(m) / 1e6:>9.1f}")
    return 0


# ---------------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    from ddpbench import __version__

    parser = _Parser(prog="python -m ddpbench",
                     description="Scaling analysis for PyTorch data-parallel training.")
    parser.add_argument("--version", action="version", version=f"ddpbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    for add in (add_sweep, add_run, add_collectives, add_report, add_compare, add_export_benchmark, add_env,
                add_models):
        add(sub)
    return parser


_signalled: list[int] = []  # the signal that ended the command, for its exit code
_said: set[str] = set()  # damaged-record warnings already printed


def _show_warning(message, category, filename, lineno, file=None, line=None, _default=warnings.showwarning):
    """A damaged record in a results file is one line that names the file and the line, said once
    however often the file is loaded (to resume, to summarize, for the report)."""
    from ddpbench.results import DamagedRecord

    if issubclass(category, DamagedRecord):
        if str(message) not in _said:
            _said.add(str(message))
            say_error(f"warning: {message}")
    else:
        _default(message, category, filename, lineno, file, line)


def _interrupted_code() -> int:
    """130 for Ctrl-C, 143 for SIGTERM: what a shell reports for a process ended by either."""
    return 128 + _signalled[-1] if _signalled else EXIT_INTERRUPTED


def _raise_interrupt(signum, frame):
    _signalled.append(signum)
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    # SIGTERM ends a sweep like Ctrl-C: children are stopped, finished results are kept.
    signal.signal(signal.SIGTERM, _raise_interrupt)
    warnings.showwarning = _show_warning
    try:
        code = args.func(args)
        return _interrupted_code() if code == EXIT_INTERRUPTED else code
    except InputError as err:
        say_error(f"error: {err}")
        return EXIT_BAD_INPUT
    except OSError as err:
        if err.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
            raise
        # stored records are whole: the store truncates a record it could not finish
        say_error(f"error: cannot write {err.filename or 'the results'}: {err.strerror}; every launch stored "
                  "before is intact; free space and rerun with --resume to finish")
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return _interrupted_code()
