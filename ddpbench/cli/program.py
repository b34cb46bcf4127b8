"""``python -m ddpbench``, the program: the parser of every command, and what ends a command.

Each command is a module of :mod:`ddpbench.cli` with ``add_parser(sub)`` and ``command(args)``. Bad input
(experiment files, flags, folders) ends with one line on stderr naming the file or flag, the key
and what is allowed, and exit code 2 -- never a traceback. Ctrl-C and SIGTERM stop what runs and
keep what finished (exit 130 and 143); a full disk is one line and exit 1, a folder it may not write
one line and exit 2 (:func:`ddpbench.cli.shared.exits.cannot_write`).
"""

from __future__ import annotations

import argparse
import atexit
import os
import signal
import sys
import warnings
from typing import NoReturn

from ddpbench import gc_pause
from ddpbench.cli import (
    ab,
    collectives,
    compare,
    env,
    export_benchmark,
    history,
    models,
    report,
    run,
    sweep,
    traces,
    tune,
    watch,
    whatif,
)
from ddpbench.cli.shared.exits import EXIT_BAD_INPUT, EXIT_INTERRUPTED, cannot_write, say_error
from ddpbench.cli.shared.parsing import PROG, Parser
from ddpbench.cli.shared.unused import refuse_unused
from ddpbench.errors import InputError

#: the commands, in the order ``--help`` lists them
COMMANDS = (sweep, run, tune, collectives, report, compare, ab, export_benchmark, history, traces, watch, env,
            models, whatif)


def build_parser() -> argparse.ArgumentParser:
    from ddpbench import __version__

    parser = Parser(prog=PROG,
                     description="Scaling analysis for PyTorch data-parallel training.")
    parser.add_argument("--version", action="version", version=f"ddpbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


_signalled: list[int] = []  # the signal that ended the command, for its exit code
_said: set[str] = set()  # warnings already printed


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """Every warning is one plain line on stderr, ``warning: ...``, said once however often it comes (a
    damaged record in a results file names the file and the line, and is read again to resume, to
    summarize, for the report): never Python's format with the source line that raised it. Control
    characters a stored string may carry (matplotlib quotes a glyph it cannot draw) are dropped."""
    from ddpbench.files.sanitize import without_controls
    from ddpbench.results.store import DamagedRecord

    text = " ".join(str(message).split())
    if not issubclass(category, DamagedRecord):
        text = without_controls(text)
    if text not in _said:
        _said.add(text)
        say_error(f"warning: {text}")


def _interrupted_code() -> int:
    """130 for Ctrl-C, 143 for SIGTERM: what a shell reports for a process ended by either."""
    return 128 + _signalled[-1] if _signalled else EXIT_INTERRUPTED


def _raise_interrupt(signum, frame):
    _signalled.append(signum)
    raise KeyboardInterrupt


def main(argv: list[str] | None = None, exit_at_once: bool = False) -> int:
    """Run the command ``argv`` names (default: this process's arguments); its exit code.

    ``exit_at_once``: a command that asks for it (``exit_at_once`` in its parser's defaults), or any
    interrupted one, ends the process as it returns (:func:`exit_now`): ``python -m ddpbench`` as a
    program passes it, code that calls main (or runs the module without ``alter_sys``) does not."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    parser.set_defaults(argv=tuple(argv))  # the command as typed: other nodes are told to run it too
    try:
        args = parser.parse_args(argv)
        # a flag another one leaves without effect
        refuse_unused(getattr(args, "flags_of", ""), getattr(args, "flags_given", frozenset()))
    except InputError as err:  # a flag's type refused its value (an empty folder path), or one that does nothing
        say_error(f"error: {err}")
        return EXIT_BAD_INPUT
    if not getattr(args, "keeps_collector_paused", False):  # a sweep resumes it itself, a report never
        gc_pause.resume()
    # SIGTERM ends a sweep like Ctrl-C: children are stopped, finished results are kept.
    signal.signal(signal.SIGTERM, _raise_interrupt)
    warnings.showwarning = _show_warning
    try:
        code = args.func(args)  # EXIT_INTERRUPTED: the command caught the interrupt itself
    except InputError as err:
        say_error(f"error: {err}")
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # the reader went away (``| head``): nothing more to say, and nothing to say it to. Python's
        # exit flush would fail on the same pipe, so stdout goes to /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader left
    except OSError as err:  # a full disk, a folder it may not write: one line (cannot_write)
        said = cannot_write(err, args)
        if said is None:
            raise
        say_error(said[0])
        return said[1]
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    except Exception as err:
        if not interrupted_by(err):
            raise
        print("interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    # interrupted, whether main or the command caught it: else CPython ends by SIGINT (-2) where the last
    # exec() of a string let it out (tests/processes/cli/test_interrupted_exit.py)
    interrupted = code == EXIT_INTERRUPTED
    code = _interrupted_code() if interrupted else code
    if exit_at_once and (interrupted or getattr(args, "exit_at_once", False)) and _untraced():
        exit_now(code)
    return code


def interrupted_by(err: BaseException | None) -> bool:
    """Whether Ctrl-C (or SIGTERM, raised as it) is what ``err`` came of: the interrupt that lands in the
    import of a C extension (scipy's, imported as a command ends its work) leaves it an ImportError
    ("initialization failed") whose cause is the KeyboardInterrupt."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, KeyboardInterrupt):
            return True
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return False


def _untraced() -> bool:  # coverage and cProfile write what they found at the interpreter's exit, skipped by exit_now
    return sys.gettrace() is None and sys.getprofile() is None


def exit_now(code: int) -> NoReturn:
    """End this process now with ``code``, after most of what its exit would do: the exit handlers run
    (``atexit``: logging's shutdown, multiprocessing's clean-up of the fork server, the sweep's
    :func:`gc.freeze`), stdout and stderr flushed. Without joining threads that are not daemons, nor
    the interpreter's teardown of every module it imported (pandas, matplotlib, scipy: a fifth of a
    second after a report; with torch, a tenth more after a sweep): for a command whose work is done
    or stopped as it returns (its files written and closed, its children reaped)."""
    handlers = getattr(atexit, "_run_exitfuncs", None)  # CPython's; elsewhere the interpreter's own exit
    if handlers is None:
        sys.exit(code)
    handlers()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # the reader went away (``| head``): as main says for it
            code = 141
        except (OSError, ValueError):  # closed, or no such stream: nothing to flush
            pass
    os._exit(code or 0)
