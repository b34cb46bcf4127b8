"""The report's figures, one module per topic; :mod:`.common` holds what they share.

  common       colours, markers, legends, axes: what every figure shares; canvas: its Agg canvas
  memo         what several figures and sections derive from one table, derived once a report
  scaling      throughput, efficiency and Karp-Flatt's serial fraction against world size
  jobs         each job's step in parts, step time against bucket size, memory
  budget       the loss budget as a waterfall, a panel per multi-rank job
  data         how long each step waited for its data, by loader workers
  strategies   gradient-aggregation strategies side by side
  frameworks   each framework's cost against raw DDP
  collectives  the collective micro-benchmarks: bus bandwidth by size
  network      throughput and communication against an emulated link's rate
  projection   the cost model's projection to larger clusters
  timeline     one traced step as it happened, a row per rank and thread
  compare      a comparison's step time ratios with their intervals
  trend        a history's job against commits
  traces       a trace folder's budget per rank
  watch        a watched run's steps and alarms
"""
