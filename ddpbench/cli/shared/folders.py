"""The output folder a command writes: its ``--wait`` and ``--force``, and the claim a run holds on it
(:mod:`ddpbench.files.writing`); its check before anything runs is :func:`ddpbench.launch.can_run.check_out_dir`."""

from __future__ import annotations

import contextlib
from pathlib import Path

from ddpbench.cli.shared.exits import say_error


def add_folder_flags(parser, writer: str | None = None) -> None:
    """--wait and --force of every command that writes a folder, their help as the writers' contract has
    them (:mod:`ddpbench.files.writing`): ``writer`` None for a sweep's results folder (``sweep``,
    ``run``, ``tune``, ``collectives``: refused at once where another command holds it), else the
    command that writes a page folder of its own (``traces``: a short writer, which waits a while)."""
    from ddpbench.files.writing import RESULTS, WAIT_S

    if writer is None:
        wait = (f"if another command is writing the output folder ({RESULTS.writers}, or a report of it), wait "
                "for it to end instead of stopping")
        force = "write into an output folder that holds files ddpbench did not write"
    else:
        wait = (f"if another command is writing the output folder, wait for it to end however long it takes "
                f"(without --wait a short one, such as another {writer}, is waited for up to {WAIT_S:g} s, and a "
                "sweep or an ab is refused at once)")
        force = (f"write into an output folder that holds files ddpbench did not write, or another run's {writer} "
                 f"output (only the files {writer} writes are replaced)")
    parser.add_argument("--wait", action="store_true", help=wait)
    parser.add_argument("--force", action="store_true", help=force)


@contextlib.contextmanager
def claimed_out_dir(out_dir: Path, args, console=None):
    """Hold ``out_dir`` for this command's sweep (one sweep per folder), as ``args.wait`` and
    ``args.force`` say; a line on ``console`` while it waits."""
    from ddpbench.files.writing import claimed

    def waiting(running: str) -> None:
        text = f"waiting for {out_dir}: another writer ({running}) holds it"
        if console is not None:
            console.print(text, highlight=False)
        else:
            say_error(text)

    with claimed(out_dir, wait=getattr(args, "wait", False), force=getattr(args, "force", False),
                 writer=getattr(args, "flags_of", "") or "sweep", on_wait=waiting):
        yield out_dir

