"""An interrupted command exits 130 with one line, however deep the interrupt landed. CPython ends a
program run by ``python -m`` with SIGINT (exit -2) once a KeyboardInterrupt has left code that
``exec()`` ran from a string, even where the program caught it after: the A/B's Ctrl-C test did so
when the signal landed in scipy.stats' import (hundreds of such strings) as the A/B judged a round."""

import subprocess
import sys
import textwrap

import pytest

from ddpbench.testing import ROOT, as_from_a_terminal

#: ``python -m ddpbench`` (runpy, its module as __main__) with the ``env`` command replaced by one
#: interrupted inside a string exec() runs, in plain code, or inside a string exec() runs and caught by
#: the command itself, which says so and returns 130 (as ``tune`` and ``collectives`` do)
PROGRAM = textwrap.dedent("""
    import runpy, sys
    from ddpbench.cli import env

    def interrupted(args):
        if where == "caught-by-the-command":
            try:
                exec("raise KeyboardInterrupt")
            except KeyboardInterrupt:
                print("interrupted", file=sys.stderr)
                return 130
        if where == "in-exec":
            exec("raise KeyboardInterrupt")
        raise KeyboardInterrupt

    env.command = interrupted
    where = sys.argv[1]
    sys.argv = ["ddpbench", "env"]
    runpy.run_module("ddpbench", run_name="__main__", alter_sys=True)
""")


def run_module(folder, name: str, source: str, *args: str) -> subprocess.CompletedProcess:
    """``python -m name args`` of ``source``, written in ``folder``; Ctrl-C at its default, as from a terminal."""
    (folder / f"{name}.py").write_text(source)
    return subprocess.run([sys.executable, "-m", name, *args], cwd=folder, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                          preexec_fn=as_from_a_terminal)


@pytest.mark.parametrize("where", ["in-exec", "in-code", "caught-by-the-command"])
def test_an_interrupt_caught_by_the_program_exits_130_wherever_it_was_raised(tmp_path, where):
    proc = run_module(tmp_path, "interrupted_program", PROGRAM, where)
    assert proc.returncode == 130, (proc.returncode, proc.stderr)
    assert proc.stderr.strip().splitlines() == ["interrupted"], proc.stderr


def test_cpython_ends_by_sigint_after_an_interrupt_left_an_exec_string(tmp_path):
    """What the program guards against, without ddpbench: caught, and still the process dies by SIGINT."""
    source = "import sys\ntry:\n    exec('raise KeyboardInterrupt')\nexcept KeyboardInterrupt:\n    sys.exit(130)\n"
    assert run_module(tmp_path, "caught", source).returncode == -2
