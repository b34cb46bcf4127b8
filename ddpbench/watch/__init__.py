"""Watching a running job: ``python -m ddpbench watch -- COMMAND``.

  collector    the server every watched rank sends its steps to (the wire: :mod:`ddpbench.rank.script.wire`):
               who may connect, each rank's state, its latest rows handed to listeners as they come
  stream       steps.csv, the steps as they arrive: its columns, written whole and at once, into a file
               of its own only, stopped and said on a full disk
  alarms       the calls made as the steps come: the job slower (and its phase), a straggler; alarms.csv
  traced       on an alarm, every rank's trace of its next steps, answered by ``ddpbench traces``
  run          the user's command run as it is, watched: the environment that reaches its ranks, its exit
  windows      a watched run read back from its folder: its steps, alarms, the budget before and after each

The ranks' side (what a rank sends, and how a process the user's launcher starts comes to send it) is
:mod:`ddpbench.rank.script.watched`.
"""
