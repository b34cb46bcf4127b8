"""Sweeps: plan every (spec, repeat) of an experiment and run it through a launcher into the store.

  plan         what a sweep will launch, and where each launch's work folder is
  runner       the one loop: launch, store the record as the launch ends, resume, progress
  progress     the console's progress bar and one line per finished launch
  environment  the environment block stored with every sweep (versions, hardware, git state)
  bisect       the first commit that changed an experiment's step, by a binary search over commits
  worktrees    a commit's sweep in a worktree of its own, in a new process (bisect's measurements)
"""
