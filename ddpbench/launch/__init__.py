"""How ranks start: every launcher runs the same rank command (``python -m ddpbench.rank``, with the
rank in torchrun's environment variables) behind one interface, :class:`~.base.Launcher`, and
hands back one :class:`~.base.LaunchOutcome` per launch.

  spawn      (default) one process per rank on this machine, started and owned by ddpbench
  torchrun   one ``torchrun --standalone`` per launch, torchrun's agent starting the ranks; or,
             with several nodes, this node's agent of a c10d rendezvous every node's sweep joins
  emulate    emulated nodes: one torchrun agent per network namespace, joined by shaped links
  slurm      one ``sbatch`` job per launch (or job arrays), its ranks started by ``srun``

  can_run    can this run? every refusal of sweep, run and tune before anything starts, in one check
  base       the Launcher interface, a Launch and its LaunchOutcome
  options    which launcher a sweep runs under, from the flags (LauncherOptions)
  handback   a launch's work folder: the job file in, the ranks' hand-back out
  processes  the ranks' environment, a loopback rendezvous store, ending processes
"""
