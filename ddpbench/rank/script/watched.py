"""A rank of a watched run: its steps measured as a script job's are, and sent to ``ddpbench watch``'s collector.

``ddpbench watch -- COMMAND`` runs the user's launch command unchanged, with two things added to the
environment it passes on: :data:`BOOT` first on ``PYTHONPATH`` (its ``sitecustomize`` calls
:func:`arm` in every Python process the launcher starts, as Python's auto-instrumentation tools reach
the processes of a command they did not write), and the collector's address and the run's secret
(:data:`~ddpbench.rank.script.wire.ADDRESS_ENV`, :data:`~ddpbench.rank.script.wire.SECRET_ENV`).

:func:`arm` costs a process that never trains nothing but a look at its environment: it waits for
``torch`` to finish importing (a hook on the import system, removed once it fired), and only then
installs :class:`Watched`, the same patches of DDP, the optimizers and the step as a sweep's script
job (:class:`~ddpbench.rank.script.instrument.Instrument`), with these differences: the script's DDP model is
built as the script asks (no job's settings), any device and backend is taken, and the script is
never stopped: every step is a measured one, every :data:`EVERY`-th is a phase step (a
:class:`~ddpbench.rank.script.plan.Cycle`). A process that builds no DDP model (torchrun's agent, a data
loader's worker) is patched and sends nothing. A phase step's row also says how long the rank's training thread
waited for a CPU that other work held during it (``queued_ms``, :class:`~ddpbench.rank.timing.RunQueue`): what
tells a step slowed by the machine's other load from one slowed by the training itself. In the steps a rank
traces on an alarm, its data phase is a profiler range of its own (:data:`~ddpbench.traces.kinds.INPUT`), so that
the trace's reader answers a slower data phase as the input pipeline where the script's batches leave no
DataLoader range.

The rank connects to the collector when its DDP model is built (its rank is known then), and a
:class:`Sender` thread sends its rows in batches. The rank never waits on the collector: a step's end
puts one row in a bounded queue, and when the queue is full, the connection cannot be made or the
collector goes away, rows are dropped and counted (the count is sent as soon as it can be), and the
run goes on unwatched.
"""

from __future__ import annotations

import atexit
import collections
import gc
import importlib.abc
import importlib.machinery
import math
import os
import select
import socket
import sys
import threading
import time
from pathlib import Path

from ddpbench.rank.script import wire

#: the folder whose ``sitecustomize`` arms every Python process of a watched run
BOOT = Path(__file__).resolve().parent / "watch_boot"
#: a phase step every this many steps (the phase hooks cost a step more than its end does)
EVERY = 10
#: the rows a rank holds for its sender at most; more are dropped and counted
CAPACITY = 4096
#: how often the sender sends what the rank's steps made (seconds)
SEND_EVERY_S = 0.25
#: how long the sender waits to connect, or for a send to go out, before it gives up (seconds)
CONNECT_S, SEND_S = 5.0, 2.0


class Sender:
    """A rank's rows, queued by :meth:`put` (never blocking) and sent by a thread of their own."""

    def __init__(self, address: str, secret: str, about: dict, capacity: int = CAPACITY,
                 every_s: float = SEND_EVERY_S):
        self.address, self.secret, self.about = address, secret, about
        self.capacity, self.every_s = capacity, every_s
        self.queue: collections.deque = collections.deque()
        self.dropped = 0  # rows let go: the queue full, or the collector unreachable or gone
        self.sent = 0
        self.alive = True  # False once the collector cannot be reached: rows are counted and dropped
        self.why: str | None = None  # why the collector could not be reached
        self._said: list[str] = []
        self._traced: list[str] = []
        #: what the collector asked of this rank (:func:`ddpbench.rank.script.wire.request`), oldest first
        self.requests: collections.deque = collections.deque()
        self._inbox = bytearray()
        self._told = 0  # the dropped count the collector was last told
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._sock: socket.socket | None = None
        self._thread = threading.Thread(target=self._run, name="ddpbench-watch-sender", daemon=True)
        self._thread.start()

    def put(self, row: tuple) -> None:
        """A step's row (in :data:`~ddpbench.rank.script.wire.STEP_COLUMNS`' order), queued; dropped and counted where
        the queue is full or the collector gone."""
        if not self.alive or len(self.queue) >= self.capacity:
            self.dropped += 1
            return
        self.queue.append(row)

    def traced(self, path: str) -> None:
        """A trace file this rank wrote, as the collector asked."""
        self._traced.append(path)
        self._wake.set()

    def say(self, line: str) -> None:
        """One line about this rank for the collector (why its steps cannot be watched, say)."""
        self._said.append(line)
        self._wake.set()

    def close(self, timeout: float = SEND_S) -> None:
        """Send what is queued and say goodbye (at most ``timeout`` seconds), then end the thread."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)

    # -- the thread ------------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            self._connect()
            while not self._stop.is_set():
                self._wake.wait(self.every_s)
                self._wake.clear()
                self._read()
                self._send()
            self._send()
            self._sock.sendall(wire.frame(wire.BYE, b""))
        except (OSError, wire.Garbage, ValueError) as e:
            self.why = self.why or f"{type(e).__name__}: {e}"
            self.alive = False
            self.dropped += len(self.queue)
            self.queue.clear()
        finally:
            if self._sock is not None:
                self._sock.close()

    def _connect(self) -> None:
        host, _, port = self.address.rpartition(":")
        self._sock = socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_S)
        self._sock.settimeout(CONNECT_S)
        buffer = bytearray()
        while not (frames := wire.split(buffer)):
            got = self._sock.recv(4096)
            if not got:
                raise ConnectionError("the collector closed the connection before its nonce")
            buffer += got
        kind, nonce = frames[0]
        if kind != wire.NONCE or len(nonce) != wire.NONCE_BYTES:
            raise wire.Garbage(f"the collector opened with a {wire.KINDS[kind]} frame, not a nonce")
        self._sock.sendall(wire.hello(self.secret, nonce, self.about))
        self._sock.settimeout(SEND_S)

    def _read(self) -> None:
        """The collector's requests that have come, without waiting for any."""
        while select.select([self._sock], [], [], 0)[0]:
            got = self._sock.recv(65536)
            if not got:
                raise ConnectionError("the collector closed the connection")
            self._inbox += got
        for kind, payload in wire.split(self._inbox):
            if kind == wire.REQUEST:
                self.requests.append(wire.read_note(payload))

    def _send(self) -> None:
        rows = []
        while self.queue and len(rows) < wire.MAX_FRAME // wire.ROW.size:
            rows.append(self.queue.popleft())
        if rows:
            try:
                self._sock.sendall(wire.pack_steps(rows))
            except OSError:
                self.dropped += len(rows)
                raise
            self.sent += len(rows)  # handed to the connection: a collector that dies now loses them uncounted
        if self.dropped != self._told:
            self._told = self.dropped
            self._sock.sendall(wire.note(dropped=self.dropped))
        while self._said:
            self._sock.sendall(wire.note(said=self._said.pop(0)))
        while self._traced:
            self._sock.sendall(wire.note(traced=self._traced.pop(0)))
        if self.queue:  # more than one frame holds: the rest at once
            self._wake.set()


def _watched_class():
    """:class:`Watched`, made once torch has been imported (its base imports nothing of torch at import, but a
    process that never imports torch should not pay for the instrument's modules either)."""
    from ddpbench.experiment.spec import JobSpec
    from ddpbench.rank.script.instrument import Instrument
    from ddpbench.rank.script.plan import Cycle
    from ddpbench.rank.script.steps import BadScript
    from ddpbench.rank.timing import HostClock, RunQueue
    from ddpbench.traces.kinds import INPUT

    class Watched(Instrument):
        """The instrument of a watched rank (module docstring): the script's own DDP settings, any device and
        backend, never stopped; each row handed to the :class:`Sender` once the rank is known."""

        def __init__(self, address: str, secret: str, every: int = EVERY):
            super().__init__(JobSpec(script="watched", script_to_end=True), -1, HostClock(), plan=Cycle(every))
            self.address, self.secret = address, secret
            self.sender: Sender | None = None
            self.profiler = self.tracing = None  # a trace the collector asked for, under way
            self._input = None  # a traced step's data phase as a range (:data:`INPUT`), open until its forward
            self.finished = False
            self.device = self.backend = None
            # the clock's marks are perf_counter_ns: a step's end on the wall clock is this offset on
            self._wall_offset_s = time.time() - time.perf_counter()
            self._marked = self._last_end = self._stepped_at = time.perf_counter()
            # the training thread's wait for a CPU over each phase step (opened by that thread, in :meth:`adopt`):
            # the wait at the step's start, and each phase step's wait in ms until its row is handed over
            self.run_queue: RunQueue | None = None
            self._queue_from: int | None = None
            self._queued: dict[int, float] = {}

        def ddp_arguments(self, asked: dict, accepts) -> tuple[dict, dict]:
            return {}, {}  # DDP as the script builds it

        def check_runs_on(self, device: str, backend: str) -> None:
            self.device, self.backend = device, backend
            if device == "cuda":  # the steps on the GPU's clock (CUDA events), as a script job's on a GPU
                import torch

                from ddpbench.rank.timing import StepTimer, clock_for

                self.timer = StepTimer(clock_for(torch.device("cuda", torch.cuda.current_device())))
                self.host_clock = False

        def second_ddp(self) -> None:
            self.give_up("the script builds a second DistributedDataParallel; ddpbench watches a script that "
                         "trains one DDP model")

        def give_up(self, why: str) -> None:
            """Stop watching this rank (the script trains on, unwatched), and say why."""
            if self.done:
                return
            self.done = True
            self.stop_timing()
            self.detach_step_hooks()
            if self.sender is not None:
                self.sender.say(f"rank {self.rank} is no longer watched: {why}")
            else:
                print(f"ddpbench watch: this process is not watched: {why}", file=sys.stderr)

        def before_optimizer_step(self, optimizer, args, kwargs) -> None:
            if self.ddp is not None and not self.done:
                super().before_optimizer_step(optimizer, args, kwargs)

        def after_optimizer_step(self, optimizer, args, kwargs) -> None:
            if self.ddp is None or self.done:
                return  # no DDP model (yet): not a step of one
            try:
                super().after_optimizer_step(optimizer, args, kwargs)
            except BadScript as e:
                self.give_up(str(e))
            self._stepped_at = time.perf_counter()  # the fast path's last step ends here, whatever the script does next

        def check_batch(self, samples: int) -> None:
            pass  # no job to say what a step's batch should be

        def adopt(self, ddp, settings: dict) -> None:
            import torch.distributed as dist

            self.rank = dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", 0))
            world = dist.get_world_size() if dist.is_initialized() else int(os.environ.get("WORLD_SIZE", 1))
            super().adopt(ddp, settings)
            self.run_queue = RunQueue()
            self.sender = Sender(self.address, self.secret, {
                "rank": self.rank, "world_size": world, "local_rank": int(os.environ.get("LOCAL_RANK", 0)),
                "host": socket.gethostname(), "pid": os.getpid()})
            atexit.register(self.finish)
            # the rank's training ends with its process group: its rows sent and its goodbye said then, where a
            # launcher (Ray, multiprocessing's fork) ends the process without running atexit
            destroy = dist.destroy_process_group

            def destroy_process_group(group=None, *args, **kwargs):
                if group is None:
                    self.finish()
                return destroy(group, *args, **kwargs)

            dist.destroy_process_group = destroy_process_group
            self._undo.insert(0, lambda: setattr(dist, "destroy_process_group", destroy))

        def mark_optimizer(self) -> None:
            super().mark_optimizer()
            self._marked = time.perf_counter()  # where the step ends, if this optimizer is its last

        def end_step(self, at: int | None = None) -> None:
            # a step ends at its last optimizer's mark: the first step's only once its optimizers are known, at
            # the next step's first, so its end is the mark before
            self._last_end = self._marked
            if self._queue_from is not None:
                waited = self.run_queue.waited_ns()
                if waited is not None:
                    self._queued[self.counted] = (waited - self._queue_from) / 1e6
                self._queue_from = None
            super().end_step(at)

        def flush(self) -> None:
            self._last_end = time.perf_counter()  # the fast path's last step ended just now
            super().flush()

        def boundary(self, step: int) -> None:
            self.hand_over()
            self.trace_at(step)
            super().boundary(step)
            if self.run_queue is not None and self.kind == "phases":  # the phase step starts: its wait from here
                self._queue_from = self.run_queue.waited_ns()
            if self.profiler is not None and not self.done:  # a traced step: its data phase a range of its own
                from torch.autograd.profiler import record_function

                self._input = record_function(INPUT).__enter__()

        def before_forward(self, module, args, kwargs):
            self.end_input()
            return super().before_forward(module, args, kwargs)

        def end_input(self) -> None:
            """The traced step's data phase ends (its forward starts, or the trace or the rank's watch ends)."""
            if self._input is not None:
                self._input, opened = None, self._input
                opened.__exit__(None, None, None)

        def trace_at(self, step: int) -> None:
            """Between two steps: a trace the collector asked for started, stepped or ended (module docstring)."""
            while self.sender is not None and self.sender.requests and self.tracing is None:
                asked = self.sender.requests.popleft()
                dense = asked.get("dense") or {}
                if dense:  # the steps an alarm is judged on: every one a phase step
                    first = max(int(dense.get("from_step", step)), step)
                    self.plan.dense(first, first + int(dense.get("steps", 1)) - 1)
                trace = asked.get("trace") or {}
                if trace:
                    first = max(int(trace.get("from_step", step)), step)
                    self.tracing = (first, int(trace.get("steps", 5)), Path(str(trace.get("folder", "."))))
                    self.plan.dense(first, first + self.tracing[1] + 1)  # every traced step's phases too
            if self.tracing is None:
                return
            first, steps, folder = self.tracing
            if step == first:
                self.profiler = start_profiler(self.device, steps, folder / f"rank{self.rank}.json.gz",
                                               self.sender.traced)
            elif self.profiler is not None:
                self.profiler.step()
                if step >= first + steps + 1:
                    self.end_input()
                    self.profiler.stop()
                    self.profiler = self.tracing = None

        def hand_over(self) -> None:
            """The rows made since the last boundary, to the sender: one step's (its end the mark of its last
            optimizer), or a run of measured steps, each after the one before (the fast path's steps are
            contiguous), the last ending at the boundary: each one's end is the last's less the steps after it."""
            rows, self.rows = self.rows, []
            self.step_samples.clear()  # what a job's record keeps, unbounded over a run that does not end
            self.bucket_ms.clear()
            if self.sender is None or not rows:
                return
            end = self._last_end + self._wall_offset_s - sum(row[8] for row in rows) / 1e3
            for row in rows:
                _rank, _kind, step, data, forward, backward, _comm, optimizer, step_ms, ready = row
                end += step_ms / 1e3
                self.sender.put((step, end, step_ms, data, forward, backward, optimizer,
                                 math.nan if ready is None else ready, self._queued.pop(step, math.nan)))
            self._queued.clear()  # a phase step whose row never came (a step the script skipped) holds nothing

        def finish(self) -> None:
            """As the rank's process group or process ends: the measured steps not yet made rows, sent with the
            rest, and goodbye (once)."""
            if self.sender is None or self.finished:
                return
            self.finished = True
            self.end_input()
            if self._fast is not None and self._spans:  # ended at its last optimizer step, not at this teardown
                self._last_end = self._stepped_at
                self.span_rows()
            self.hand_over()
            self.sender.close()
            if self.run_queue is not None:
                self.run_queue.close()
            self.done = True  # no step after this one is watched
            self.detach_step_hooks()
            self.let_go()
            gc.collect()  # DDP freed before the group it holds, as in a script that drops its own

    return Watched


def start_profiler(device: str | None, steps: int, path: Path, done):
    """torch.profiler over the next ``steps`` steps after one of warm-up (CPU, and CUDA on a GPU), written to
    ``path`` (Chrome trace JSON, gzipped where it ends ``.gz``, as ``ddpbench traces`` reads) and ``done(path)``
    called once written."""
    import torch

    activities = [torch.profiler.ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)

    def written(profiler) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        profiler.export_chrome_trace(str(path))
        done(str(path))

    profiler = torch.profiler.profile(activities=activities, on_trace_ready=written,
                                      schedule=torch.profiler.schedule(wait=0, warmup=1, active=steps, repeat=1))
    profiler.start()
    return profiler


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls ``then()`` once the module ``name`` has finished importing, and takes itself off the import
    system. The module's own loader does the import (its spec's loader is the one the import system found,
    its ``exec_module`` wrapped on that instance alone), so that what reads the loader (resources, the
    module's source) finds it as it would."""

    def __init__(self, name: str, then):
        self.name, self.then = name, then

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        from importlib.util import find_spec

        spec = find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        original, then = spec.loader.exec_module, self.then

        def exec_module(module):
            original(module)
            then()

        spec.loader.exec_module = exec_module
        return spec


def arm(environ=os.environ) -> bool:
    """In a process of a watched run (the collector's address in ``environ``), :class:`Watched` installed once
    torch has been imported; elsewhere nothing. Whether it armed."""
    address, secret = environ.get(wire.ADDRESS_ENV), environ.get(wire.SECRET_ENV)
    if not address or not secret:
        return False

    def install() -> None:
        try:
            _watched_class()(address, secret).install()
        except Exception as e:  # never in the way of training: a rank that cannot be watched trains unwatched
            print(f"ddpbench watch: this process is not watched ({type(e).__name__}: {e})", file=sys.stderr)

    if "torch" in sys.modules:
        install()
    else:
        sys.meta_path.insert(0, _AfterImport("torch", install))
    return True


def is_boot(entry: str) -> bool:
    """Whether a ``sys.path`` entry is a watch's boot folder: :data:`BOOT`, or another copy of ddpbench's on the
    path (a source tree on ``PYTHONPATH`` beside an installed one), which would import this one's again."""
    path = Path(entry or ".").resolve()
    return path == BOOT or path.parts[-4:] == BOOT.parts[-4:]


def chain_sitecustomize() -> None:
    """Import the ``sitecustomize`` that :data:`BOOT`'s hides (one later on ``sys.path``, not a watch's own), if
    there is one."""
    import importlib.util

    mine = sys.modules.pop("sitecustomize", None)
    path = [p for p in sys.path if not is_boot(p)]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)
    elif mine is not None:
        sys.modules["sitecustomize"] = mine
