"""Sweeps: plan every (spec, repeat) of an experiment and run it through a launcher into the store.

  plan         what a sweep will launch, and where each launch's work folder is
  runner       the one loop: launch, store the record as the launch ends, resume, progress
  progress     the console's progress bar and one line per finished launch
  environment  the environment block stored with every sweep (versions, hardware, git state)
  bisect       the first commit that changed an experiment's step, by a binary search over commits
  worktrees    a commit's sweep in a worktree of its own, in a new process (bisect's measurements)
  revisions    the git revisions a user names, checked in one place before anything runs or is filed
  kinds        the kinds of launch a sweep runs, and what the runner's loop asks of each
  measured_once  figures measured once per machine, not once per job (the matmul peak, the collectives
               curve), and the cache that keeps them between sweeps
  checks       the equivalence check where it proves something: once per training it can tell apart
  adaptive     repeats until the interval is tight (``repeats = "auto"``)
  refusals     a refusal stops its job at the first launch: which launches a refused one stands for
  search       ``tune``'s race: settings raced round by round, the losers dropped
  ab           two versions of a training measured in randomized interleaved rounds (``ddpbench ab``)
  paced        one side of the interleaved A/B: a sweep that runs a round when told to
"""
