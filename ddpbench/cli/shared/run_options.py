"""What the command line asks of a run, for ``sweep``, ``run`` and ``tune`` alike: the launcher
flags, made from :class:`~ddpbench.launch.options.LauncherOptions`' fields, and
:class:`SweepOptions`, everything but the experiment itself."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from ddpbench.errors import InputError
from ddpbench.launch.options import LAUNCHERS, LauncherOptions


@dataclass(frozen=True)
class SweepOptions:
    """How the command line asked for an experiment to run (everything but the experiment itself)."""

    out_dir: Path
    #: the command that runs it (``sweep`` or ``run``), for what it may refuse (:mod:`ddpbench.launch.can_run`)
    command: str = "sweep"
    resume: bool = False
    #: with resume: run launches that failed or timed out again
    retry_failed: bool = False
    dry_run: bool = False
    write_report: bool = True
    launcher: LauncherOptions = field(default_factory=LauncherOptions)
    #: the arguments as typed: node 0 of a multi-node sweep prints every other node's command
    argv: tuple[str, ...] = ()
    #: whether the emulated-node flags were given (then a machine that cannot emulate names them)
    emulation_flags: bool = False
    #: another sweep writing the folder: wait for it (else stop with one line)
    wait: bool = False
    #: write into a folder that holds files ddpbench did not write
    force: bool = False
    #: one side of an A/B: the descriptors its rounds are asked on and said done on (:mod:`ddpbench.sweep.paced`)
    paced: tuple[int, int] | None = None
    #: the summary's every column, at full width (else at most ddpbench.show.console.NARROW columns)
    wide: bool = False
    #: the verdict in sentences after its answer table
    verbose: bool = False


def add_launcher_flags(parser) -> None:
    """One flag per field of :class:`LauncherOptions`, with its help text."""
    for f in dataclasses.fields(LauncherOptions):
        meta = {"help": f.metadata["help"]}
        if f.metadata["metavar"]:
            meta["metavar"] = f.metadata["metavar"]
        if f.name == "launcher":  # not given: the experiment file's, else spawn (launcher_options)
            meta["choices"] = LAUNCHERS
        if f.metadata["kind"] is bool:
            parser.add_argument(LauncherOptions.flag(f.name), action="store_true", **meta)
        else:
            kind = f.metadata["kind"]
            parser.add_argument(LauncherOptions.flag(f.name), type=None if kind is str else kind,
                                default=None if f.name == "launcher" else f.default, **meta)


def launcher_options(args, file_launcher: str | None = None, source: str | None = None) -> LauncherOptions:
    """The launcher flags of parsed ``args``, checked. Without --launcher, the experiment file's
    ``launcher`` (``file_launcher``, read from ``source``), else spawn."""
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(LauncherOptions)}
    chosen = given["launcher"] or file_launcher or "spawn"
    options = LauncherOptions(**{**given, "launcher": chosen})
    if given["launcher"] is None and file_launcher is not None:
        try:
            return options.check()
        except InputError as err:
            if err.key != "--launcher":
                raise
            raise InputError(source, "launcher", err.message) from None
    return options.check()
