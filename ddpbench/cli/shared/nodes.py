"""What a sweep's dry run prints beyond its jobs, and what a multi-node sweep tells the other nodes: each
other node's command line, and the scripts the launcher would submit."""

from __future__ import annotations

import shlex


def node_commands(argv, nnodes: int) -> list[str]:
    """The command each other node of a multi-node torchrun sweep runs: this one, its node rank changed."""
    argv = list(argv)
    for i, arg in enumerate(argv):  # drop this node's own --node-rank
        if arg == "--node-rank":
            del argv[i:i + 2]
            break
        if arg.startswith("--node-rank="):
            del argv[i]
            break
    return [shlex.join(["python", "-m", "ddpbench", *argv, "--node-rank", str(rank)])
            for rank in range(1, nnodes)]


def print_launch_plan(experiment, options) -> None:
    """What --dry-run shows beyond the jobs (``options``: the sweep's SweepOptions): the other nodes'
    commands, and what the launcher would submit (Slurm's sbatch scripts)."""
    from ddpbench.sweep.plan import LOG_DIR, pending_launches

    launch = options.launcher
    if launch.nnodes > 1:
        print("run on every other node:" if launch.node_rank == 0 else "the other nodes run:")
        for command in node_commands(options.argv, launch.nnodes):
            print(f"  {command}")
    launches = pending_launches(experiment.jobs, set(), options.out_dir)
    for name, script in launch.make_launcher().dry_run_scripts(launches, options.out_dir / LOG_DIR,
                                                               experiment.timeout_s):
        print(f"# ---- {name}")
        print(script, end="")
