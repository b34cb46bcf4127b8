"""The command line: one module per command (``add_parser`` and ``command``), :mod:`.program` to parse
and end them, :mod:`.sweeping` (with :mod:`.sweep_options` and :mod:`.sweep_checks`) for what
``sweep``, ``run`` and ``tune`` share. A command parses its flags into options, calls the stage
that does the work, and prints what :mod:`ddpbench.show` makes (the console's tables and answers);
what the commands share lives in :mod:`.common`.

``ddpbench.cli:main`` is the console script's entry point.
"""

from ddpbench.cli.program import main

__all__ = ["main"]
