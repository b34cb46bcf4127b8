"""Start ranks as forks of a warm server instead of new interpreters (:mod:`ddpbench.rank.forked`).

A launch on this machine used to pay, per rank, a new interpreter and ``import torch`` (about 2 s
of its 8 on two cores). Python's ``multiprocessing`` fork server pays them once: it is started on
the first rank, imports :data:`~ddpbench.rank.forked.PRELOAD` and forks every rank from then on;
it dies with this process (the kernel's parent-death signal, :mod:`ddpbench.owner`), and each rank
with it, whatever ends this process. :class:`ForkedRank` is the part of
``subprocess.Popen``'s interface the launchers use, so a launch handles either kind of rank alike.

The server is started with one thread per math library (OpenMP, MKL, OpenBLAS): numpy's OpenBLAS
would otherwise start a thread pool at import, and a process with threads is not one to fork.
Each rank sets its own thread count (``torch.set_num_threads``) from its job, as before.

GPU launches are forked too. A process whose CUDA driver was initialised cannot hand a working
driver to its forks, so the server never initialises it: torch asks NVML whether a GPU is there
(``PYTORCH_NVML_BASED_CUDA_CHECK``, set while it starts), and each rank makes its own CUDA
context after the fork, as a new interpreter would. A rank that finds itself forked from a
server whose driver was set up after all fails its launch with that reason
(:func:`ddpbench.rank.devices.check_cuda_fork`), never a hang. On an H100 machine a new interpreter's
``import torch`` and ``import torch._dynamo`` (which DDP loads) took 9-10 s of each rank's
start, against 0.4 s for the rank's own CUDA context: the launch's set-up, not the GPU's
steps, was most of a GPU sweep's time. ``DDPBENCH_FORK_SERVER=0`` starts every rank as a new
interpreter (the old way), and so does a process whose server cannot start: its socket is made in
the temp folder, and a ``TMPDIR`` longer than a Unix socket's path may be (about 100 bytes) stops
it; that is said once, as a warning, and the sweep goes on (:func:`start_server`).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
import warnings

#: held while the server starts: the math libraries' thread variables at one, and torch's CUDA check
#: by NVML, which leaves the driver alone, should anything the server imports ask
_SINGLE_THREADED = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                    "PYTORCH_NVML_BASED_CUDA_CHECK": "1"}
_context = None
#: whether the server failed to start in this process (its ranks then start as new interpreters)
_unavailable = False


def enabled() -> bool:
    """Whether ranks are forked: not with ``DDPBENCH_FORK_SERVER=0``, nor once the server failed to start."""
    return os.environ.get("DDPBENCH_FORK_SERVER", "1") != "0" and not _unavailable


#: the devices whose ranks are forked: the CPU, and CUDA GPUs (each rank's context made after its fork)
FORKED_DEVICES = ("cpu", "cuda")


def can_fork(spec) -> bool:
    """Whether a launch's ranks may be forked: those on the CPU or CUDA GPUs (see above)."""
    return getattr(spec, "device", "cpu") in FORKED_DEVICES


def _server():
    global _context
    if _context is None:
        from ddpbench.rank.forked import PRELOAD

        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        _context = context
    return _context


def start_server() -> bool:
    """Start the server now, not with the first rank: a command that will fork ranks calls this as
    it starts, so that the server's imports (torch and the rank's modules: seconds) run beside the
    command's own start (its imports, reading and checking the experiment) rather than before its
    first launch. The first rank then waits only for what is left of them.

    Whether the server runs. Where it cannot start (an ``OSError`` making its socket, as for a
    ``TMPDIR`` too long for one), a warning says so once and every rank of this process starts as
    a new interpreter (:func:`enabled` is False from then on)."""
    global _unavailable
    if _unavailable:
        return False
    from multiprocessing import forkserver

    _server()
    try:
        with _single_threaded_env():
            forkserver.ensure_running()
    except OSError as err:
        import tempfile

        _unavailable = True
        warnings.warn(f"the fork server could not start ({err}; its socket is made in the temp folder "
                      f"{tempfile.gettempdir()}): every rank starts as a new interpreter, which costs each "
                      "launch its imports; a shorter TMPDIR lets it start", RuntimeWarning, stacklevel=2)
        return False
    return True


def stop_server() -> None:
    """End a server :func:`start_server` started for launches that will not be forked (an
    experiment whose jobs all run on GPUs), before any rank was forked from it."""
    import signal
    from multiprocessing import forkserver

    server = forkserver._forkserver
    if server._forkserver_pid is not None:
        os.kill(server._forkserver_pid, signal.SIGKILL)  # it may still be importing: do not wait for that
        server._stop()


def needed(specs) -> bool:
    """Whether any launch of ``specs`` would be forked (fork server on, a CPU or CUDA launch)."""
    return enabled() and any(can_fork(spec) for spec in specs)


def _server_env() -> dict[str, str]:
    """What the server starts with: one thread per math library, and its owner (this process, when
    its main thread starts the server: the parent-death signal follows the thread that forked, and
    a short-lived thread would take the server with it when it ends; see :mod:`ddpbench.owner`)."""
    from ddpbench.rank.forked import SERVER_OWNER_ENV

    owned = threading.current_thread() is threading.main_thread()
    return {**_SINGLE_THREADED, SERVER_OWNER_ENV: str(os.getpid()) if owned else ""}


@contextlib.contextmanager
def _single_threaded_env():
    wanted = _server_env()
    saved = {k: os.environ.get(k) for k in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class ForkedRank:
    """One rank forked by the server, running ``argv`` (``--job J --out D``) with exactly ``env``,
    its output in ``log_path``. Like ``Popen``: ``pid``, ``poll()``, ``wait()``; the rank leads its
    own process group (``os.killpg(rank.pid, ...)``). ``sentinel``: a descriptor readable once the
    rank has exited (the server writes its exit status there), which the launcher waits on."""

    def __init__(self, argv: list[str], env: dict[str, str], log_path: str, target=None):
        from ddpbench.rank.forked import run_rank

        context = _server()
        # ``target``: what the child runs instead of a rank, with the same arguments (tests)
        self._process = context.Process(target=target or run_rank, args=(list(argv), dict(env), str(log_path)))
        with _single_threaded_env():  # the server starts with the first rank, and inherits this
            self._process.start()
        self.pid = self._process.pid
        self.sentinel = self._process.sentinel

    def poll(self) -> int | None:
        return self._process.exitcode

    def wait(self, timeout: float | None = None) -> int | None:
        self._process.join(timeout)
        return self._process.exitcode


def _nothing() -> None:
    """What :func:`wait_until_warm`'s child runs."""


def wait_until_warm() -> None:
    """Return once the server has finished its imports (starting it if need be): a child that does
    nothing is forked from it and waited for, which the server can answer only after them. An A/B's
    side (:mod:`ddpbench.sweep.paced`) says it is ready only then, so that neither side's first round
    runs beside the other side's imports. At once where the server cannot start."""
    if not start_server():
        return
    child = _server().Process(target=_nothing)
    with _single_threaded_env():
        child.start()
    child.join()
