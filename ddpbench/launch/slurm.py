"""The Slurm launcher: each launch is one batch job, or with ``array=True`` one task of a job array.

The batch script (kept as ``logs/<key>-r<repeat>.sbatch``) asks for the job's ranks as Slurm
tasks over ``--nodes`` nodes, takes MASTER_ADDR from the first node's NodeAddr (node names need
not resolve), picks a MASTER_PORT the first node reports free, and starts one rank per task
with ``srun``. The rank maps SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID to RANK / WORLD_SIZE /
LOCAL_RANK, and rank 0 hosts the rendezvous store, as in a hand-written Slurm job.

With ``array=True``, :meth:`SlurmLauncher.launch_all` submits one ``sbatch --array`` job per
group of launches that share the srun line's shape (processes, threads per rank, GPUs per node),
kept as ``logs/array-<n>.sbatch``: array task i picks launch i's job file and work folder from
bash arrays and runs the same body, logging to ``logs/array-<job>_<i>.slurm.log``. Each task's
outcome is yielded as soon as the task leaves the queue, so a caller that stores it at once
loses nothing finished when a sweep is interrupted. There the timeout counts per task from when
it was last seen pending: time spent waiting in the queue (behind ``max_parallel`` tasks, or
for a busy cluster) does not count, so a task that never starts is waited for, as Slurm would.

The work folder must be on a file system every node sees (the hand-back is a file), as a
cluster's home or scratch is. A failed job is recorded with Slurm's state and exit code, and
with the rank srun reported first ("task 1: Killed"); past the timeout, or on Ctrl-C, the job
(or the array task, or every array) is cancelled with ``scancel`` so nothing is left running.

A job is owned by the sweep that submitted it, even past a ``kill -9`` of the sweep, which can
cancel nothing: while it waits, the sweep touches ``sweep.alive`` in its work folder every second
(a thread: a slow ``squeue`` does not delay it), and the batch script watches that file in the
background; once it is more than :data:`STALE_S` seconds old, the job cancels itself.
"""

from __future__ import annotations

import contextlib
import math
import re
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

from ddpbench.launch.base import Launch, Launcher, LaunchOutcome
from ddpbench.launch.handback import Stall, collect_outcome, prepare_launch
from ddpbench.rank.protocol import JOB_FILE, RANK_MODULE, Job

POLL_S = 0.5
#: srun's word for how a task ended -> the exit code a signal gives (as subprocess reports it)
_SIGNALS = {"Killed": -9, "Terminated": -15, "Aborted": -6, "Segmentation fault": -11, "Interrupt": -2}
_TASK = re.compile(r"task (\d+): (Killed|Terminated|Aborted|Segmentation fault|Interrupt|"
                   r"Exited with exit code (\d+))")

#: the sweep's heartbeat file, in the work root every launch's work folder is in
HEARTBEAT = "sweep.alive"
#: how often the sweep touches it, and how old it may get before a job cancels itself, seconds
HEARTBEAT_S = 1.0
STALE_S = 10

FREE_PORT = ("import socket; s = socket.socket(); s.bind(('', 0)); print(s.getsockname()[1])")


def task_exits(log_text: str) -> dict[int, int]:
    """Rank -> exit code of every task srun reported as ended badly ("srun: error: n1: task 1: Killed")."""
    exits = {}
    for rank, how, code in _TASK.findall(log_text):
        exits.setdefault(int(rank), int(code) if code else _SIGNALS[how])
    return exits


def _header(spec, name: str, output: Path | str, timeout_s: float, nodes: int, partition: str | None,
            extra: tuple[str, ...] = ()) -> list[str]:
    """The shebang and #SBATCH lines: the spec's ranks as tasks over at most ``nodes`` nodes, and
    on CUDA the GPUs they take on each."""
    tasks = spec.processes
    nodes = max(1, min(nodes, tasks))
    directives = [
        f"--job-name={name}",
        *extra,
        f"--nodes={nodes}",
        f"--ntasks={tasks}",
        f"--ntasks-per-node={math.ceil(tasks / nodes)}",
        *([f"--gpus-per-node={gpus_per_node(spec, nodes)}"] if spec.device == "cuda" else []),
        f"--cpus-per-task={spec.threads_per_rank}",
        f"--time={max(1, math.ceil(timeout_s / 60))}",
        f"--output={output}",
        f"--chdir={Path.cwd()}",
    ] + ([f"--partition={partition}"] if partition else [])
    return ["#!/bin/bash", *(f"#SBATCH {d}" for d in directives), "set -euo pipefail"]


def gpus_per_node(spec, nodes: int) -> int:
    """One GPU per rank on each node (DataParallel: its world size in its one task); every task of
    a node sees them all and takes its local rank's."""
    return math.ceil(spec.world_size / max(1, min(nodes, spec.processes)))


def _run_lines(spec, job: str, out: str) -> list[str]:
    """The body that starts the ranks; ``job`` and ``out`` are shell words (quoted paths or "$var")."""
    threads = spec.threads_per_rank
    python = shlex.quote(sys.executable)
    return [*_watch_lines(out),
            "unset DDPBENCH_PARENT_PID  # the ranks' parent is srun's step, not the sweep",
            "# the first node's address as Slurm knows it (NodeAddr): node names need not resolve",
            'first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
            "MASTER_ADDR=$(scontrol show node \"$first\" | sed -n 's/.*NodeAddr=\\([^ ]*\\).*/\\1/p')",
            "export MASTER_ADDR",
            'echo "ddpbench: nodes $SLURM_JOB_NODELIST, rank 0 at $MASTER_ADDR"',
            f"export MASTER_PORT=$({python} -c {shlex.quote(FREE_PORT)})",
            f"export OMP_NUM_THREADS={threads} MKL_NUM_THREADS={threads} PYTHONUNBUFFERED=1",
            f"srun --kill-on-bad-exit=1 {python} -m {RANK_MODULE} --job {job} --out {out}"]


def _watch_lines(out: str) -> list[str]:
    """The job cancels itself once the sweep's heartbeat (beside the work folder ``out``, a shell
    word) is older than STALE_S seconds: the sweep is gone."""
    return ["# owned by the sweep: it touches $alive every second while it waits; once that stops (the sweep",
            "# was killed), the job cancels itself",
            f"alive=$(dirname {out})/{HEARTBEAT}",
            "( while sleep 2; do",
            '    age=$(( $(date +%s) - $(stat -c %Y "$alive" 2>/dev/null || echo 0) ))',
            f'    if [ "$age" -gt {STALE_S} ]; then scancel "$SLURM_JOB_ID"; exit; fi',
            "  done ) &"]


@contextlib.contextmanager
def heartbeat(path: Path):
    """Touch ``path`` every HEARTBEAT_S seconds while inside (a daemon thread), so that the jobs
    this sweep submitted know it is alive (:func:`_watch_lines`)."""
    stop = threading.Event()

    def beat():
        while not stop.is_set():
            with contextlib.suppress(OSError):
                path.touch()
            stop.wait(HEARTBEAT_S)

    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    thread = threading.Thread(target=beat, name="ddpbench-heartbeat", daemon=True)
    thread.start()
    try:
        yield path
    finally:
        stop.set()
        thread.join()


def batch_script(spec, job_file: Path, work_dir: Path, log_path: Path, timeout_s: float, nodes: int,
                 partition: str | None = None) -> str:
    """The sbatch script of one launch."""
    lines = [*_header(spec, f"ddpbench-{spec.key}", log_path, timeout_s, nodes, partition),
             *_run_lines(spec, shlex.quote(str(job_file)), shlex.quote(str(work_dir)))]
    return "\n".join(lines) + "\n"


def _shape(spec) -> tuple[int, int, int]:
    """What the #SBATCH and srun lines of a script depend on: launches alike in this can share
    one array."""
    return spec.processes, spec.threads_per_rank, spec.world_size if spec.device == "cuda" else 0


def _bash_array(name: str, paths: list[Path]) -> str:
    return f"{name}=({' '.join(shlex.quote(str(path)) for path in paths)})"


def array_script(items: list[tuple], log_dir: Path, timeout_s: float, nodes: int, partition: str | None,
                 max_parallel: int | None = None) -> str:
    """The sbatch script of a job array whose task i runs launch i of ``items``, a list of
    (spec, job file, work dir); every spec must share its processes, threads per rank and GPUs."""
    if not items:
        raise ValueError("a job array needs at least one launch")
    spec = items[0][0]
    if any(_shape(other) != _shape(spec) for other, _, _ in items):
        raise ValueError("every launch in one job array must share its processes, threads per rank "
                         "and GPUs; group them first")
    array = f"--array=0-{len(items) - 1}" + (f"%{max_parallel}" if max_parallel else "")
    lines = [*_header(spec, "ddpbench-array", f"{log_dir}/array-%A_%a.slurm.log", timeout_s, nodes, partition,
                      (array,)),
             "# this task's launch",
             _bash_array("jobs", [job for _, job, _ in items]),
             _bash_array("outs", [out for _, _, out in items]),
             'job=${jobs[$SLURM_ARRAY_TASK_ID]} out=${outs[$SLURM_ARRAY_TASK_ID]}',
             *_run_lines(spec, '"$job"', '"$out"')]
    return "\n".join(lines) + "\n"


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True)


def queued(job_id: str) -> bool:
    """Whether the job (or array task, "<job>_<i>") is still pending or running."""
    return bool(_run(["squeue", "-h", "-j", job_id, "-o", "%T"]).stdout.strip())


def task_states(job_ids: list[str]) -> dict[str, str] | None:
    """Task id ("<job>_<i>") -> state of every array task of these jobs still in the queue; None
    when slurmctld did not answer (squeue fails outright only on ids it no longer knows at all)."""
    listed = _run(["squeue", "-h", "-r", "-j", ",".join(job_ids), "-o", "%i %T"])
    if listed.returncode and "Invalid job id" not in listed.stderr:
        return None
    return dict(line.split() for line in listed.stdout.splitlines() if line.strip())


def job_state(job_id: str) -> tuple[str, str]:
    """(JobState, ExitCode) as ``scontrol show job`` gives them, e.g. ("FAILED", "1:0")."""
    out = _run(["scontrol", "show", "job", "-o", job_id]).stdout
    fields = dict(item.split("=", 1) for item in out.split() if "=" in item)
    return fields.get("JobState", "UNKNOWN"), fields.get("ExitCode", "?")


def job_outcome(job_id: str, job: Job, work_dir: Path, log_path: Path, logs: list[str], wall_s: float,
                timed_out: bool, processes: int, stalled: bool = False) -> LaunchOutcome:
    """The outcome of a job (or array task) that has left the queue, with Slurm's verdict on a failure;
    ``stalled``: cancelled by the job's stall limit (:class:`~ddpbench.launch.handback.Stall`)."""
    state, code = job_state(job_id)
    text = log_path.read_text(errors="replace") if log_path.exists() else ""
    failed = {} if state == "COMPLETED" else task_exits(text)
    exits = {rank: 0 if state == "COMPLETED" else failed.get(rank) for rank in range(processes)}
    outcome = collect_outcome(work_dir, job, exits, wall_s, timed_out, logs, stalled)
    if outcome.status != "ok" and not timed_out:
        outcome.error = f"{outcome.error} [slurm job {job_id} {state}, exit code {code}]"
    return outcome


def _job_file(work_dir: Path) -> Path:
    """Where prepare_launch puts a launch's job file."""
    return (work_dir / JOB_FILE).resolve()


#: task ids 0-999 per array, under Slurm's default MaxArraySize (1001)
MAX_ARRAY = 1000


class SlurmLauncher(Launcher):
    name = "slurm"

    def __init__(self, nodes: int = 1, partition: str | None = None, array: bool = False,
                 max_parallel: int | None = None):
        self.nodes = nodes
        self.partition = partition
        self.submits_arrays = array
        self.max_parallel = max_parallel

    def _batch(self, spec, repeat: int, work_dir: Path, log_dir: Path, timeout_s: float) -> tuple[Path, Path, str]:
        """(script path, log path, script text) of one launch as its own job."""
        log_path = (log_dir / f"{spec.key}-r{repeat}.slurm.log").resolve()
        text = batch_script(spec, _job_file(work_dir), work_dir.resolve(), log_path, timeout_s, self.nodes,
                            self.partition)
        return log_dir / f"{spec.key}-r{repeat}.sbatch", log_path, text

    def _arrays(self, launches: list[Launch], log_dir: Path, timeout_s: float) -> list[tuple[Path, list, str]]:
        """(script path, its launches, script text) of each job array: one per shape of launch
        (at most MAX_ARRAY tasks each), in the order the shapes first come."""
        groups: dict[tuple, list] = {}
        for launch in launches:
            groups.setdefault(_shape(launch.spec), []).append(launch)
        chunks = [group[i:i + MAX_ARRAY] for group in groups.values() for i in range(0, len(group), MAX_ARRAY)]
        return [(log_dir / f"array-{n}.sbatch", chunk,
                 array_script([(spec, _job_file(work_dir), work_dir.resolve()) for spec, _, work_dir in chunk],
                              log_dir.resolve(), timeout_s, self.nodes, self.partition, self.max_parallel))
                for n, chunk in enumerate(chunks)]

    def dry_run_scripts(self, launches: list[Launch], log_dir: Path, timeout_s: float) -> list[tuple[str, str]]:
        """(file name, script text) of every script a sweep of ``launches`` would submit (one job a
        launch, or ``launch_all``'s arrays); nothing is written or submitted."""
        if self.submits_arrays:
            scripts = self._arrays(launches, log_dir, timeout_s)
        else:
            scripts = [self._batch(spec, repeat, work_dir, log_dir, timeout_s) for spec, repeat, work_dir in launches]
        return [(path.name, text) for path, _, text in scripts]

    def launch(self, spec, repeat: int, work_dir: Path, log_dir: Path, timeout_s: float,
               stall_s: float | None = None) -> LaunchOutcome:
        job, _ = prepare_launch(spec, repeat, work_dir, log_dir, timeout_s, stall_s)
        script, log_path, text = self._batch(spec, repeat, work_dir, log_dir, timeout_s)
        script.write_text(text)
        log_path.unlink(missing_ok=True)
        with heartbeat(work_dir.resolve().parent / HEARTBEAT):
            return self._submit_and_wait(spec, job, work_dir, script, log_path, timeout_s)

    def _submit_and_wait(self, spec, job: Job, work_dir: Path, script: Path, log_path: Path,
                         timeout_s: float) -> LaunchOutcome:
        start = time.monotonic()
        submitted = _run(["sbatch", "--parsable", str(script)])
        if submitted.returncode:
            return LaunchOutcome("failed", error=f"sbatch failed: {submitted.stderr.strip()[:300]}",
                                 wall_s=time.monotonic() - start, logs=[str(script)])
        job_id = submitted.stdout.strip().split(";")[0]
        timed_out, stall = False, Stall(work_dir, job)
        try:
            deadline = start + timeout_s
            while queued(job_id):
                if time.monotonic() > deadline or stall():
                    timed_out = True
                    break
                time.sleep(POLL_S)
        except BaseException:  # Ctrl-C, SIGTERM: leave nothing running
            self._cancel(job_id)
            raise
        if timed_out:
            self._cancel(job_id)
        return job_outcome(job_id, job, work_dir, log_path, [str(log_path), str(script)],
                           time.monotonic() - start, timed_out, spec.processes, stall.fired)

    def launch_all(self, launches: list[Launch], log_dir: Path, timeout_s: float, stall_s: float | None = None):
        """Run ``launches`` as tasks of job arrays (``array=True``), all submitted at once, and yield
        each with its outcome as it ends. Closing the generator early (``contextlib.closing``), or
        any exception, cancels every array still queued or running.
        """
        if not self.submits_arrays:
            yield from super().launch_all(launches, log_dir, timeout_s, stall_s)  # one at a time: launch()
        with contextlib.ExitStack() as beats:
            for root in sorted({launch.work_dir.resolve().parent for launch in launches}):
                beats.enter_context(heartbeat(root / HEARTBEAT))
            yield from self._submit_arrays(launches, log_dir, timeout_s, stall_s)

    def _submit_arrays(self, launches: list[Launch], log_dir: Path, timeout_s: float, stall_s: float | None):
        tasks = {}  # task id -> (launch, its job, its log, its script)
        job_ids: list[str] = []
        try:
            for script, chunk, text in self._arrays(launches, log_dir, timeout_s):
                jobs = [prepare_launch(spec, repeat, work_dir, log_dir, timeout_s, stall_s)[0]
                        for spec, repeat, work_dir in chunk]
                script.write_text(text)
                submitted = _run(["sbatch", "--parsable", str(script)])
                if submitted.returncode:
                    for launch in chunk:
                        yield launch, LaunchOutcome(
                            "failed", error=f"sbatch failed: {submitted.stderr.strip()[:300]}", logs=[str(script)])
                    continue
                job_id = submitted.stdout.strip().split(";")[0]
                job_ids.append(job_id)
                for i, (launch, job) in enumerate(zip(chunk, jobs)):
                    log_path = (log_dir / f"array-{job_id}_{i}.slurm.log").resolve()
                    tasks[f"{job_id}_{i}"] = (launch, job, log_path, script)
            yield from self._wait_tasks(tasks, timeout_s)
        except BaseException:  # Ctrl-C, SIGTERM, the caller stopping early: leave nothing running
            for job_id in job_ids:
                self._cancel(job_id)
            raise

    def _wait_tasks(self, tasks: dict, timeout_s: float):
        """Poll the array tasks in ``tasks``; yield (launch, outcome) for each as it leaves the
        queue, or once cancelled for running past ``timeout_s`` since it was last seen pending, or
        for its stall limit (:class:`~ddpbench.launch.handback.Stall`)."""
        started = dict.fromkeys(tasks, time.monotonic())  # moves on while a task is pending
        stalls = {task_id: Stall(launch.work_dir, job) for task_id, (launch, job, _, _) in tasks.items()}
        while tasks:
            time.sleep(POLL_S)
            states = task_states(sorted({task_id.split("_")[0] for task_id in tasks}))
            if states is None:  # slurmctld did not answer: ask again
                continue
            now = time.monotonic()
            for task_id in list(tasks):
                state = states.get(task_id)
                if state == "PENDING":
                    started[task_id] = now
                elif state is None or now > started[task_id] + timeout_s or stalls[task_id]():
                    timed_out = state is not None
                    if timed_out:
                        self._cancel(task_id)
                    launch, job, log_path, script = tasks.pop(task_id)
                    yield launch, job_outcome(task_id, job, launch.work_dir, log_path, [str(log_path), str(script)],
                                              time.monotonic() - started[task_id], timed_out, launch.spec.processes,
                                              timed_out and stalls[task_id].fired)

    @staticmethod
    def _cancel(job_id: str) -> None:
        _run(["scancel", job_id])
        for _ in range(60):
            if not queued(job_id):
                return
            time.sleep(POLL_S)
