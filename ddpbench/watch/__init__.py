"""Watching a running job: ``python -m ddpbench watch -- COMMAND``.

  collector    the server every watched rank sends its steps to (the wire: :mod:`ddpbench.rank.wire`):
               who may connect, the stream written as it arrives, each rank's state

The ranks' side (what a rank sends, and how a process the user's launcher starts comes to send it) is
:mod:`ddpbench.rank.watched`.
"""
