"""What the commands share of the command line, below the commands themselves (:mod:`ddpbench.cli`):
how a command ends (:mod:`.exits`), how its flags are parsed and typed (:mod:`.parsing`), the flags one
another leaves without effect (:mod:`.unused`), whatif's flags of how gradients accumulate (:mod:`.gbatch`),
the output folder a command writes (:mod:`.folders`), and what ``sweep``, ``run`` and ``tune`` share: the run
from the command line (:mod:`.running`), its options (:mod:`.run_options`), its checks against this machine
(:mod:`.run_checks`) and what a multi-node run tells the other nodes (:mod:`.nodes`)."""
