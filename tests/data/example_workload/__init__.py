"""A workload from outside ddpbench, as a user's package would hold one (see bench.py)."""
