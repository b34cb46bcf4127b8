"""Analysis: pure functions over the results tables, DataFrames in, DataFrames (or findings) out.

  summary      one row per job: step times, throughput, speedup, efficiency, serial fraction, phases
  stats        confidence intervals and significance over fresh launches
  budget       what a job lost against its baseline, in lines that sum to it; the rank waited for
  jobs         which settings tell jobs apart: labels, reading order, baselines
  costmodel    the alpha-beta model, fitted to this machine and projected to larger clusters
  diagnosis    the findings in plain words, each quoting the figures it rests on
  compare      two folders job by job, with gates
  collectives  the measured all_reduce curve beside DDP's buckets
  network      jobs on emulated links beside the model of the link; fault recovery
  gpu          jobs that ran on CUDA beside the same job on CPU
  trend        a history store's series: each job at each world size, commit by commit
  changes      change points in those series, with their side (compute or scaling) and phase
  newest       the newest commits against each series' level: the merge gate

Nothing here runs, launches or draws anything.
"""
