"""Experiments: TOML files (and the flags over them) -> frozen, validated specs.

  spec         one training job, :class:`~.spec.JobSpec`: its fields, their checks and roles, its key
  script_names a script job's name in a few words, alone or among its sweep's jobs
  machine      the machine a spec is resolved against (``auto`` values, GPUs per node)
  load         an experiment file -> :class:`~.load.Experiment`: the grid expanded into jobs
  collectives  collective micro-benchmark experiments -> :class:`~.collectives.CollectiveSpec` s
  links        link rates and the ``[[links]]`` profiles the report projects onto
  files        reading a TOML file, with one-line errors
  overrides    what the command line's flags change in an experiment
  scripts      jobs that measure a user's training script (``script = "train.py"``) instead of a model
  buckets      before anything runs: which DDP bucket caps of an experiment give the same buckets
  workloads    before anything runs: does every job's workload build, and does its dataset hold a batch
  cost         what a device-hour costs (``[cost]``, or the flags), and the training the cost is for
  host         this machine's fingerprint: the environment fields that tell machines apart

Reading an experiment imports no analysis code; what a strategy refuses is asked of its class
(its module, and torch, are imported then).
"""
