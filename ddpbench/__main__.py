import sys

from ddpbench import gc_pause

# off while the command's modules import (and, for a report, to its end): ddpbench.gc_pause
gc_pause.pause()

from ddpbench.cli.program import main  # noqa: E402

# guarded: a process that imports this module (multiprocessing's fork server prepares its children
# from the parent's main module) must not run the command again
if __name__ == "__main__":
    # the program itself (python -m ddpbench, or runpy with alter_sys as ddpbench.owner runs it), not code
    # that runs this module otherwise and goes on after it: a command may end the process as it returns
    # (ddpbench.cli.program.exit_now)
    raise SystemExit(main(exit_at_once=sys.modules["__main__"].__dict__ is globals()))
