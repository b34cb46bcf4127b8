"""The commands: one module each, with ``add_parser(sub)`` and ``command(args)``. A command parses its
flags into options, calls the stage that does the work, and prints what :mod:`ddpbench.show` makes (the
console's tables and answers). The program that lists them, parses and ends them is
:mod:`ddpbench.program`; what they share of the command line is :mod:`ddpbench.commandline`.
"""
