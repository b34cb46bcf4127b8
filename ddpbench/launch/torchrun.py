"""The torchrun launcher: each launch runs ``torchrun`` (torch.distributed.run), standalone on this
machine, or one agent per node meeting in a c10d rendezvous (several machines, or emulated nodes).

torchrun's agent starts the ranks, hosts the c10d rendezvous and sets RANK, LOCAL_RANK,
WORLD_SIZE, MASTER_ADDR and MASTER_PORT, so its ranks run what the spawn launcher's run.
What it adds over spawn is torchrun itself: its rendezvous, its restart policy and its failure
handling, as a job launched by hand would see them.

    torchrun --standalone --nnodes 1 --nproc-per-node N --max-restarts 0 -m ddpbench.rank ...
    torchrun --nnodes 2 --node-rank R --rdzv-backend c10d --rdzv-endpoint H:P --rdzv-id ID ... (per node)

The agent runs in its own session; its workers run in sessions of their own (torchrun starts them
so). The agent dies with the sweep and its workers with the agent, by the kernel's parent-death
signal (``python -m ddpbench.owner SWEEP_PID torch.distributed.run ...``, :mod:`ddpbench.owner`).
Ending a launch SIGTERMs the agent (it stops its workers), then SIGKILLs whatever of the launch is
left, found by its job file on the command line.
The rank that failed first, and how, comes from the agent's failure summary in its log.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ddpbench.launch.base import Launcher, LaunchOutcome
from ddpbench.launch.handback import Stall, collect_outcome, describe_exit, prepare_launch
from ddpbench.launch.processes import TERM_GRACE_S, end_processes, rank_env, wait_for_all
from ddpbench.owner import PARENT_ENV, owned_command
from ddpbench.rank.protocol import ERROR_GLOB, RANK_MODULE, Job

TORCHRUN_MODULE = "torch.distributed.run"
#: after one node's agent fails, how long the others get to see it and stop their workers
AGENT_FAILURE_GRACE_S = 10.0

#: one entry of torchrun's failure summary: "rank : 1 (local_rank: 1)" then "exitcode : -9 (pid: ...)"
_FAILURE = re.compile(r"rank\s*:\s*(\d+)\s*\(local_rank:\s*\d+\)\s*\n\s*exitcode\s*:\s*(-?\d+)")


#: where the summary names the rank that failed first; the ranks above it the agent may have ended itself
_ROOT_CAUSE = "Root Cause (first observed failure)"


def agent_failures(log_text: str) -> dict[int, int | None]:
    """Rank -> exit code of every rank torchrun's agent reported as failed (its ChildFailedError).

    Once one rank fails the agent SIGTERMs the others and lists them as failed too, killed by a
    signal. So only the root cause keeps a signal as its exit code; another rank's signal says the
    agent ended it (None, as for a rank we ended), and its non-zero exit code stays its own.
    """
    others, _, root = log_text.partition(_ROOT_CAUSE)
    root_cause = {int(rank): int(code) for rank, code in _FAILURE.findall(root)}
    if not root_cause:
        return {int(rank): int(code) for rank, code in _FAILURE.findall(log_text)}
    failed = {int(rank): (int(code) if int(code) >= 0 else None) for rank, code in _FAILURE.findall(others)}
    return failed | root_cause


@dataclass(frozen=True)
class Agent:
    """One torchrun agent of a launch: which node it is and how it meets the other nodes' agents.

    One node alone runs ``--standalone``. Several meet through a c10d rendezvous at ``endpoint``,
    hosted by node 0's agent (``is_host`` is said outright: where the hostname resolves to
    127.0.0.1, torchrun cannot tell which node the endpoint is). ``prefix`` runs the agent
    somewhere else (``ip netns exec NS`` for an emulated node).
    """

    node_rank: int = 0
    nnodes: int = 1
    endpoint: str | None = None
    local_addr: str | None = None
    prefix: tuple[str, ...] = ()

    def log_name(self, key: str, repeat: int) -> str:
        node = f".node{self.node_rank}" if self.nnodes > 1 else ""
        return f"{key}-r{repeat}{node}.torchrun.log"


def torchrun_command(spec, job_file: Path, work_dir: Path, agent: Agent = Agent(),
                     run_id: str = "ddpbench") -> list[str]:
    """The command line of ``agent`` for one launch of ``spec`` (its ranks split evenly over the nodes)."""
    cmd = []
    if agent.endpoint is None:
        cmd += ["--standalone", "--nnodes", "1"]
    else:
        cmd += ["--nnodes", str(agent.nnodes), "--node-rank", str(agent.node_rank), "--rdzv-backend", "c10d",
                "--rdzv-endpoint", agent.endpoint, "--rdzv-id", run_id,
                "--rdzv-conf", f"is_host={'true' if agent.node_rank == 0 else 'false'}"]
        if agent.local_addr:
            cmd += ["--local-addr", agent.local_addr]
    cmd += ["--nproc-per-node", str(spec.processes // agent.nnodes), "--max-restarts", str(spec.max_restarts),
            "--monitor-interval", "0.1", "-m", RANK_MODULE, "--job", str(job_file), "--out", str(work_dir)]
    # the agent dies with this process, and its workers with it (ddpbench.owner)
    return [*agent.prefix, *owned_command(TORCHRUN_MODULE, cmd)]


def leftover_ranks(job_file: Path) -> list:
    """Processes of this launch still alive: any whose command line names its job file (which is
    this node's own: another node's agent on the same machine has a job file of its own)."""
    import psutil

    marker = str(job_file)
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if marker in " ".join(proc.info["cmdline"] or []) and proc.pid != os.getpid():
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def run_id(spec, repeat: int) -> str:
    """The rendezvous id of one launch: every node's agent of it names the same one."""
    return f"ddpbench-{spec.key}-r{repeat}"


class TorchrunLauncher(Launcher):
    """``torchrun --standalone`` on this machine, or this machine's node of a multi-node torchrun.

    With ``nnodes`` > 1 every node runs the same sweep with its own ``node_rank`` and the same
    ``rdzv_endpoint``; launch by launch their agents meet at that endpoint. The work folder must be
    on a file system every node sees (as with Slurm): global rank 0, wherever torchrun puts it,
    hands the result back there, and node 0 stores it. The other nodes store nothing
    (``stores_results`` is False); their agents' logs sit next to node 0's.
    """

    name = "torchrun"

    def __init__(self, nnodes: int = 1, node_rank: int = 0, rdzv_endpoint: str | None = None):
        self.nnodes, self.node_rank, self.endpoint = nnodes, node_rank, rdzv_endpoint
        self.stores_results = node_rank == 0
        self.nodes_share_work = nnodes > 1

    def agents(self, spec) -> list[Agent]:
        """The agents this process runs for a launch: this node's only."""
        if self.nnodes == 1:
            return [Agent()]
        return [Agent(self.node_rank, self.nnodes, self.endpoint)]

    def sockets(self) -> dict[str, str] | None:
        """Socket interface variables for the ranks: loopback when alone, the user's own across nodes."""
        return None if self.nnodes == 1 else {}

    def launch(self, spec, repeat: int, work_dir: Path, log_dir: Path, timeout_s: float,
               stall_s: float | None = None) -> LaunchOutcome:
        if not self.stores_results:  # node 0 watches for a stall: its end ends this node's agent too
            return self.follow(spec, repeat, work_dir, log_dir, timeout_s)
        job, job_file = prepare_launch(spec, repeat, work_dir, log_dir, timeout_s, stall_s)
        return run_agents(spec, repeat, job, job_file, work_dir, log_dir, self.agents(spec),
                          rank_env(spec, self.sockets()))

    def follow(self, spec, repeat: int, work_dir: Path, log_dir: Path, timeout_s: float) -> LaunchOutcome:
        """Node > 0: run this node's agent on a job file of its own; node 0 reads the ranks' hand-back."""
        log_dir.mkdir(parents=True, exist_ok=True)
        job_file = work_dir.parent / f"node{self.node_rank}" / f"{spec.key}-r{repeat}.json"
        job_file.parent.mkdir(parents=True, exist_ok=True)
        Job.of(spec, repeat, timeout_s).write(job_file)
        work_dir.mkdir(parents=True, exist_ok=True)
        (agent,) = self.agents(spec)
        procs, timed_out, wall_s = start_and_wait(spec, repeat, job_file, work_dir, log_dir, timeout_s, [agent],
                                                  rank_env(spec, {}))
        code = procs[0].returncode
        status = "timed_out" if timed_out else "ok" if code == 0 else "failed"
        error = None if status == "ok" else f"this node's torchrun {describe_exit(code)}" if code else "timed out"
        return LaunchOutcome(status, error=error, wall_s=wall_s, logs=[str(log_dir / agent.log_name(spec.key, repeat))])


def start_and_wait(spec, repeat: int, job_file: Path, work_dir: Path, log_dir: Path, timeout_s: float,
                   agents: list[Agent], env: dict,
                   stalled: Stall | None = None) -> tuple[list[subprocess.Popen], bool, float]:
    """Start every agent, wait until all have exited (a failed one gives the others
    AGENT_FAILURE_GRACE_S to notice) or the timeout (or ``stalled`` says the launch hung); end
    whatever of the launch is left. (the agents, whether the launch timed out, its wall time)."""
    base = {**os.environ, **env}
    base.pop(PARENT_ENV, None)  # the ranks' parent is the agent, which says so (ddpbench.owner)
    start = time.monotonic()
    procs = []
    timed_out = False
    try:
        for agent in agents:
            with open(log_dir / agent.log_name(spec.key, repeat), "wb") as log:
                procs.append(subprocess.Popen(torchrun_command(spec, job_file, work_dir, agent, run_id(spec, repeat)),
                                              env=base, stdin=subprocess.DEVNULL, stdout=log,
                                              stderr=subprocess.STDOUT, start_new_session=True))
        timed_out = wait_for_all(procs, start + timeout_s, AGENT_FAILURE_GRACE_S, stalled)
    finally:
        end_processes(procs)  # SIGTERM: an agent stops its workers; then SIGKILL
        end_leftovers(job_file)
    return procs, timed_out, time.monotonic() - start


def run_agents(spec, repeat: int, job: Job, job_file: Path, work_dir: Path, log_dir: Path, agents: list[Agent],
               env: dict) -> LaunchOutcome:
    """One launch through ``agents`` (all of its nodes' agents that run here), read back as spawn's is."""
    stall = Stall(work_dir, job)
    procs, timed_out, wall_s = start_and_wait(spec, repeat, job_file, work_dir, log_dir, job.timeout_s, agents, env,
                                              stall.watching())
    log_paths = [log_dir / agent.log_name(spec.key, repeat) for agent in agents]
    texts = [path.read_text(errors="replace") for path in log_paths]
    failures = {rank: code for text in texts for rank, code in agent_failures(text).items()}
    logs = [str(path) for path in log_paths]
    codes = [p.returncode for p in procs]
    if any(codes) and not timed_out and not failures and not any(work_dir.glob(ERROR_GLOB)):
        code, text = next((c, t) for c, t in zip(codes, texts) if c)
        last = next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "(empty log)")
        return LaunchOutcome("failed", error=f"torchrun {describe_exit(code)} before any rank "
                             f"reported: {last[:300]}", wall_s=wall_s, logs=logs)
    exits = rank_exits(spec.processes, not any(codes) and not timed_out, failures)
    return collect_outcome(work_dir, job, exits, wall_s, timed_out, logs, stall.fired)


def rank_exits(processes: int, succeeded: bool, failures: dict[int, int | None]) -> dict[int, int | None]:
    """Each rank's exit code as the agents saw it: 0 for all when they succeeded; the failed ranks
    from their summaries (``agent_failures``), and None (ended by an agent or by us) for the rest."""
    if succeeded:
        return {rank: 0 for rank in range(processes)}
    return {rank: failures.get(rank) for rank in range(processes)}


def end_leftovers(job_file: Path) -> None:
    """SIGTERM, then SIGKILL, every process of this launch still alive (``leftover_ranks``)."""
    import psutil

    procs = leftover_ranks(job_file)
    for proc in procs:
        try:
            proc.send_signal(signal.SIGTERM)
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(procs, timeout=TERM_GRACE_S)
    for proc in alive:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=5)
