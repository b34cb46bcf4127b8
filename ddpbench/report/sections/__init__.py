"""The report's sections, one module per topic; :data:`ddpbench.report.build.SECTIONS` orders them.

  verdict      the first: the answer table, a row per question
  overview     what was measured where (the header), and one row per job (the summary)
  diagnosis    the findings in plain words, and the causes of lost time
  budget       where each multi-rank job's lost time went, line by line
  scaling      throughput, efficiency and serial fraction against world size; where a step's time goes
  compute      what a model costs in FLOPs and what share of a peak it reached; the data pipeline
  gpu          each CUDA job's device time by phase, its memory, the same job on CPU
  precision    mixed precision and ``torch.compile`` against fp32 eager
  strategies   aggregation strategies compared: throughput, traffic, equivalence, memory
  frameworks   Accelerate and Lightning Fabric beside raw DDP
  collectives  the collective micro-benchmarks and DDP's buckets
  network      emulated links and jobs beyond one machine's network
  timeline     traced jobs: one step's timeline, the traces, exposed communication three ways
  projection   the cost model fitted here, checked against the jobs, projected to larger clusters
  cost         what a sample costs, how long a training takes, the energy per sample
  search       a ``tune`` folder's race
  noise        the last word: which jobs deserve less trust, and what would help
"""
