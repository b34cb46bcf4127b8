"""The command line in tests and benchmarks: ``python -m ddpbench ...`` as a user runs it
(:func:`run_cli`, a new process; :func:`cli_command` for a process started another way), or its
``main()`` here in this process (:func:`run_main`, for a test that must start none). For the fuzz
tests: a work folder of the files a user might pass, valid and not (:func:`make_workdir`), and a probe
in place of the runner that says a command line reached it (:func:`runner_probed`)."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
import warnings
from pathlib import Path

#: the repository's root (a checkout: tests, benchmarks, experiments, docs and reports/examples)
ROOT = Path(__file__).resolve().parents[2]


def cli_command(*args) -> list[str]:
    """The command line ``python -m ddpbench ARGS`` of this interpreter, for ``subprocess``."""
    return [sys.executable, "-m", "ddpbench", *map(str, args)]


def run_cli(*args, cwd=None, timeout=300, env=None, **kw) -> subprocess.CompletedProcess:
    """python -m ddpbench ... in a subprocess, as a user runs it; its output captured as text."""
    env = {**(env or os.environ), "COLUMNS": "160"}
    return subprocess.run(cli_command(*args), cwd=cwd or ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout, **kw)


class _Late(BaseException):
    """Raised in :func:`run_main`'s command when its ``timeout`` has passed (a BaseException, so that
    no ``except Exception`` of the command takes it for one of its own errors)."""


def _late(signum, frame):
    raise _Late


def run_main(*args, cwd=None, env: dict[str, str] | None = None, timeout: float | None = 300
             ) -> subprocess.CompletedProcess:
    """``python -m ddpbench ARGS`` without a new process: the command line's ``main()`` called here,
    in ``cwd`` (the repository's root unless given), its output captured: what :func:`run_cli`
    returns. A ``SystemExit`` (argparse's ``--help`` and bad flags) gives its code; ``env`` is set for
    the call only, and what ``main()`` sets for a whole process (its SIGTERM handler, how warnings
    are shown) is put back after. Past ``timeout`` seconds (None: no limit) the command is stopped
    where it stands (its ``finally`` blocks end what it started) and ``subprocess.TimeoutExpired``
    raised, as :func:`run_cli`'s is: a sweep that hangs fails its test, not the whole run.

    A sweep run here forks its ranks from this process' fork server (started by the first, then kept),
    where :func:`run_cli`'s starts a new interpreter that imports torch and starts a server of its
    own: about 5 s of CPU a sweep on the 2-core VM (benchmarks/measured.md). A test of what a process
    does (signals, exit codes, what it leaves behind, its environment at start) runs the command
    line; one of what a sweep stores can run here."""
    from ddpbench.cli.program import main

    argv = [str(arg) for arg in args]
    stdout, stderr = io.StringIO(), io.StringIO()
    saved = {name: os.environ.get(name) for name in {"COLUMNS", *(env or {})}}
    sigterm, show_warning, here = signal.getsignal(signal.SIGTERM), warnings.showwarning, os.getcwd()
    alarm = signal.signal(signal.SIGALRM, _late) if timeout else None
    os.environ.update({"COLUMNS": "160", **(env or {})})
    os.chdir(cwd or ROOT)
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            if timeout:
                signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                code = main(argv)
            except SystemExit as exit:
                code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
            finally:
                if timeout:
                    signal.setitimer(signal.ITIMER_REAL, 0)
    except _Late:
        raise subprocess.TimeoutExpired(cli_command(*argv), timeout, stdout.getvalue(), stderr.getvalue()) from None
    finally:
        os.chdir(here)
        signal.signal(signal.SIGTERM, sigterm)
        if alarm is not None:
            signal.signal(signal.SIGALRM, alarm)
        warnings.showwarning = show_warning
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return subprocess.CompletedProcess(cli_command(*argv), code, stdout.getvalue(), stderr.getvalue())


def as_from_a_terminal() -> None:
    """``preexec_fn`` of a sweep a test interrupts with SIGINT: Ctrl-C at its default and not blocked, as
    a terminal starts a command. A shell without job control (``cmd &``, ``nohup``, as a CI runner may
    start the suite) starts its children with SIGINT ignored, and Python keeps it ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


#: a valid experiment of the fuzz tests' work folder (:func:`make_workdir`)
VALID = """
name = "fuzz"
[defaults]
model_size = "xs"
steps = 2
[grid]
world_size = [1, 2]
"""

#: files a user might pass: (name, bytes); "missing.toml" and "folder" are made below
FILES = {
    "valid.toml": VALID.encode(),
    "empty.toml": b"",
    "bad.toml": b"[defaults\nsteps = ",
    "latin1.toml": 'name = "caf\xe9"\n'.encode("latin-1"),
    "types.toml": b"[defaults]\nworld_size = 'two'\nbucket_cap_mb = -1\n[grid]\nsteps = []\n",
    "unknown.toml": b"[defaults]\nbogus = 1\n",
    "huge.toml": b"[defaults]\nworld_size = 100000\nbatch_size = 99999999999999999999\n",
}


class Reached(Exception):
    """The command line was valid: the runner was called."""


def make_workdir(root: Path) -> Path:
    """Fill ``root`` with :data:`FILES`, a folder and the repository's experiments (the commands' default
    files): a work folder for command lines a user might type; return it."""
    for name, data in FILES.items():
        (root / name).write_bytes(data)
    (root / "folder").mkdir()
    shutil.copytree(ROOT / "experiments", root / "experiments")  # the commands' default files
    return root


@contextlib.contextmanager
def runner_probed(monkeypatch, workdir: Path):
    """Inside, the runner is a probe that checks what it was given and says the input was accepted
    (:class:`Reached`); the current folder is ``workdir`` (default output folders land there), and
    SIGTERM's handler is put back on leaving (``main()`` installs its own)."""
    from ddpbench.experiment.machine import Machine, oversubscribed

    machine = Machine.here()

    def run_sweep(experiment, out_dir, **kw):
        for spec in experiment.jobs:  # a world size past the cores is allowed, and flagged
            assert oversubscribed(spec, machine) == (spec.device == "cpu"
                                                     and spec.world_size * spec.threads_per_rank > machine.cores)
        raise Reached

    def run_collectives(experiment, out_dir, **kw):
        raise Reached

    monkeypatch.setattr("ddpbench.sweep.runner.run_sweep", run_sweep)
    monkeypatch.setattr("ddpbench.sweep.runner.run_collectives", run_collectives)
    monkeypatch.setattr("ddpbench.report.build.write_report", lambda *a, **k: (_ for _ in ()).throw(Reached()))
    monkeypatch.chdir(workdir)
    term = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, term)


# ---------------------------------------------------------------------------------------------
# what a command left in a folder, read without ddpbench.files.writing (the code the tests check)
# ---------------------------------------------------------------------------------------------

def snapshot(root) -> dict:
    """Every path under ``root`` (links not followed) and what it holds: a test's before and after."""
    found = {}
    for here, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(here, name)
            found[os.path.relpath(path, root)] = (os.readlink(path) if os.path.islink(path) else
                                                  None if os.path.isdir(path) else open(path, "rb").read())
    return found


def folder_marker(folder) -> dict:
    """What a folder's marker (``.ddpbench-folder``) says ({} where it has none or it is no JSON object)."""
    import json

    try:
        found = json.loads((Path(folder) / ".ddpbench-folder").read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def held(folder) -> bool:
    """Whether a writer holds ``folder`` now: its lock (``.ddpbench.lock``) taken, as ``flock`` says, or
    its owner's note (``.ddpbench.owner``) left behind."""
    import fcntl

    if (Path(folder) / ".ddpbench.owner").exists():
        return True
    try:
        fd = os.open(Path(folder) / ".ddpbench.lock", os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False
