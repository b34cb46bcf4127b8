"""The command line in one room, on three floors (pyproject.toml's contract of ``ddpbench.cli``):

* :mod:`.program`: ``python -m ddpbench`` itself, the parser of every command (``COMMANDS``) and what
  ends a command;
* the commands: every other module here, one each, with ``add_parser(sub)`` and ``command(args)``. A
  command parses its flags into options, calls the stage that does the work, and prints what
  :mod:`ddpbench.show` makes (the console's tables and answers): :mod:`.sweep`, :mod:`.run`, :mod:`.tune`,
  :mod:`.collectives`, :mod:`.report`, :mod:`.compare`, :mod:`.ab`, :mod:`.export_benchmark`, :mod:`.history`
  (with its subcommands :mod:`.history_bisect` and :mod:`.history_trend`), :mod:`.traces`, :mod:`.watch`,
  :mod:`.env`, :mod:`.models` and :mod:`.whatif`;
* :mod:`.shared`: what the commands share of the command line (exits, parsing, flags one another leaves
  without effect, the output folder, the run that ``sweep``, ``run`` and ``tune`` share), importing none of
  them.
"""
