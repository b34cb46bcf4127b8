"""What the commands share of the command line, below the commands themselves (:mod:`ddpbench.cli`): how a command
ends (:mod:`.exits`), how its flags are parsed and typed (:mod:`.parsing`), the flags one another leaves without
effect (:mod:`.unused`), whatif's flags of the work and the queue (:mod:`.finish`), whatif's flags of how
gradients accumulate (:mod:`.gbatch`), whatif's units: the device's memory, whole nodes, the model's limit
(:mod:`.units`), the output folder a command writes (:mod:`.folders`), what whatif reads of
a measured folder before it is shown (:mod:`.measured`), and what ``sweep``, ``run`` and ``tune`` share: the run
from the command line (:mod:`.running`), its options (:mod:`.run_options`) and what a multi-node run tells the
other nodes (:mod:`.nodes`); whether it can run is :mod:`ddpbench.launch.can_run`'s one check."""
