"""How ranks start: every launcher runs the same rank command (``python -m ddpbench.rank``, with the
rank in torchrun's environment variables) behind one interface, :class:`~.base.Launcher`, and
hands back one :class:`~.base.LaunchOutcome` per launch.

  spawn      (default) one process per rank on this machine, started and owned by ddpbench
  torchrun   one ``torchrun --standalone`` per launch, torchrun's agent starting the ranks; or,
             with several nodes, this node's agent of a c10d rendezvous every node's sweep joins
  emulate    emulated nodes: one torchrun agent per network namespace, joined by shaped links
  slurm      one ``sbatch`` job per launch (or job arrays), its ranks started by ``srun``
  raytrain   each launch's ranks as Ray Train workers (``--launcher ray``); ray_cluster: the Ray cluster
             it runs on (started here, or an existing one); ray_driver: the driver process of one
             launch; ray_address: an existing cluster as a user names it (``traces --ray ADDRESS``)
  kubeflow   Kubeflow's PyTorchJob, on paper: each launch's manifest (``--dry-run``), nothing submitted
  queue      when a job of each size would start on a Slurm cluster (``sbatch --test-only``)
  forked     ranks forked from a warm server instead of started as new interpreters

  can_run    can this run? every refusal of sweep, run and tune before anything starts, in one check
  base       the Launcher interface, a Launch and its LaunchOutcome
  options    which launcher a sweep runs under, from the flags (LauncherOptions)
  handback   a launch's work folder: the job file in, the ranks' hand-back out
  processes  the ranks' environment, a loopback rendezvous store, ending processes
"""
