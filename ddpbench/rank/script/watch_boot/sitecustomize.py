"""Put first on ``PYTHONPATH`` by ``ddpbench watch``: every Python process of the watched command arms
the watch (:func:`ddpbench.rank.script.watched.arm`), then imports the ``sitecustomize`` this one hides."""

import sys

try:
    from ddpbench.rank.script.watched import arm, chain_sitecustomize
except ImportError as e:  # another interpreter than ddpbench's: its processes train unwatched, and say so
    print(f"ddpbench watch: {sys.executable} cannot import ddpbench ({e}); its processes are not watched",
          file=sys.stderr)
else:
    chain_sitecustomize()
    arm()
