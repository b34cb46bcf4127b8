from ddpbench.cli import main

# guarded: a process that imports this module (multiprocessing's fork server prepares its children
# from the parent's main module) must not run the command again
if __name__ == "__main__":
    raise SystemExit(main())
