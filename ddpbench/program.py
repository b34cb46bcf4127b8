"""The program's earlier path, kept for environments installed before the command line moved into one
room (their ``ddpbench`` script names ``ddpbench.program:main``): the program is :mod:`ddpbench.cli.program`."""

from ddpbench.cli.program import COMMANDS, build_parser, exit_now, main  # noqa: F401
