"""A user's training script, measured from outside it: a sweep's script job, or a watched run.

  rank          a script job's rank: the script run as torchrun would run it, its steps timed
  instrument    every hook of one script run: the patched DDP, its forward and backward, the step's end
  steps         the step-end half of the instrument: which optimizer steps make one step
  plan          which kind each step is: a job's plan (warm-up, phases, measured, no-sync), a watched cycle
  patches       what the instrument patches in torch, each piece with its undo
  ddp_settings  the job's DDP settings applied to the script's own, and checked as they ran
  shapes        scripts that spawn their own ranks, their arguments and the world size
  watched       a watched run's rank (``ddpbench watch``): its steps sent to the collector, never in its way
  wire          what a watched rank and the collector say to each other
"""
