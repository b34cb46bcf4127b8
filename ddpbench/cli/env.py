"""``python -m ddpbench env``: the environment block stored with every sweep, as JSON."""

from __future__ import annotations

import json


def add_parser(sub) -> None:
    p = sub.add_parser("env", help="print the environment block stored with every sweep",
                       description="Print the environment block (versions, hardware, git state) as JSON.")
    p.set_defaults(func=command)


def command(args) -> int:
    from ddpbench.sweep.environment import collect_env

    print(json.dumps(collect_env(), indent=2))
    return 0
