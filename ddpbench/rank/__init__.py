"""What runs inside a launched process: one rank of one launch.

  protocol     how a rank learns its job, says where it is and hands back one result;
               ``python -m ddpbench.rank`` (:mod:`.__main__`) is every launcher's command
  train        a training rank: process group, model, strategy, timed loop, gather
  recovery     a training rank's side of elastic fault recovery (snapshots, the planted fault)
  equivalence  the single-process training every strategy is checked against
  collectives  a collective micro-benchmark rank: nccl-tests' definitions, the -c check
  timing       per-step phase timers, host clock or CUDA events
  devices      the device a rank takes, and the memory it held
  record       one rank's record, built by every kind of rank from its meters; the meters:
               energy (the machine's energy counters), neighbours (what else the machine ran),
               flops (a step's FLOPs and the matmul rate this machine reaches)
  precision    mixed precision and ``torch.compile`` in a training rank
  affinity     where a rank's process may run (the job's ``cpu_affinity``), and what it saw of it
  trace        a few steps of every rank recorded by PyTorch's profiler, after the timed ones
  forked       a rank forked from a warm server instead of started as a new interpreter
  raytrain     a rank run by Ray Train: the function each worker of a ``--launcher ray`` launch calls
  tensorflow   a TensorFlow rank (``tf-mirrored``, ``tf-multiworker``)
  script       a user's training script measured from outside it (a script job, a watched run): its room

A rank never imports the launchers or the sweep that started it, nor the analysis of what it
measured.
"""
