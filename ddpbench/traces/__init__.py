"""Any data-parallel job's per-rank PyTorch profiler traces, read and answered (``ddpbench traces``;
docs/traces.md). Importing this package imports nothing: a rank reads its own trace through
:mod:`ddpbench.traces.events` and :mod:`ddpbench.traces.steps` without pandas.

- :mod:`ddpbench.traces.kinds`: the names a trace is read by (kinds of GPU work, the host's causes, PyTorch's ranges)
- :mod:`ddpbench.traces.events`: one rank's file streamed into the columns the analysis needs
- :mod:`ddpbench.traces.keeper`: what is kept of each event, decoded or read from PyTorch's own layout
- :mod:`ddpbench.traces.intervals`: sets of time intervals, vectorised
- :mod:`ddpbench.traces.columns`: the tables' columns, declared once
- :mod:`ddpbench.traces.steps`: one rank's steps, collectives and device breakdown
- :mod:`ddpbench.traces.read`: a folder's files, parsed in parallel (or on Ray) and checked as one job
- :mod:`ddpbench.traces.job`: the ranks together: clocks aligned, the wait for the slowest, collectives' bandwidth
- :mod:`ddpbench.traces.answers`: the loss budget with intervals over steps, and what to change
- :mod:`ddpbench.traces.folder`: a folder, answered: the one path every trace takes
- :mod:`ddpbench.traces.timeline`: a sweep's traced launch as each rank stores it, by the same reader
- :mod:`ddpbench.traces.compare`: two runs of one job, before and after a change, line by line and kernel by kernel
"""
