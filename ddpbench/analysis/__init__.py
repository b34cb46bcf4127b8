"""Analysis: pure functions over the results tables, DataFrames in, DataFrames (or findings) out.

Five rooms, each a package with a face (its ``__init__``) and each importing only the rooms below
it (import-linter's contract in pyproject.toml):

  history    runs against runs: compare two folders, the regression gate, tune's race, a history
             store's trend, change points and the merge gate (``newest``)
  folder     ``Measured``: a results folder read once, the one facade the report reads it through
  diagnosis  the findings in plain words: each cause and what its fix would recover, the evidence
             of fixes the sweep ran, the loss budget in words, the verdict
  models     the alpha-beta cost model, what-if on a described cluster, parameter layouts and DDP's
             buckets, the check against published scaling, emulated links
  summary    one row per job: step times, throughput, speedup, efficiency, exposed communication,
             the barrier, the loss budget, cost
  core       statistics and power, job grouping and labels, column declarations, thresholds, and
             reading values (the one test of a missing figure)

Code outside the analysis imports a room's face (``from ddpbench.analysis.summary import
summarize``) or ``folder``, never a module inside a room (tests/unit/project/test_layers.py).
Nothing here runs, launches or draws anything.
"""
