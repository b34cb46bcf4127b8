"""A script job's name in a few words: its file's name and its arguments (:func:`script_label`), or among
the jobs of one sweep only the arguments that tell it apart from the others running that script
(:func:`script_labels`). The whole command line stays in the experiment table."""

from __future__ import annotations

import json
import shlex


def script_label(script: str, script_args: str) -> str:
    """A script job's name in a few words: ``train_cnn.py --epochs 3``."""
    name = script.replace("\\", "/").rsplit("/", 1)[-1]
    args = json.loads(script_args) if script_args else []
    return shlex.join([name, *args]) if args else name


def _arg_groups(args: list[str]) -> list[tuple[str, ...]]:
    """A command line's arguments as groups: an option with the values after it (``--epochs 4``), an
    ``--option=value``, or a positional argument before any option."""
    groups: list[list[str]] = []
    for arg in args:
        if arg.startswith("-") and not arg.lstrip("-").replace(".", "", 1).isdigit():
            groups.append([arg])
        elif groups and groups[-1][0].startswith("-") and "=" not in groups[-1][0]:
            groups[-1].append(arg)
        else:
            groups.append([arg])
    return [tuple(g) for g in groups]


def script_labels(jobs) -> dict[tuple[str, str], str]:
    """Each script job's name among the jobs of one sweep, ``jobs`` its (script, script_args) pairs: the
    script's file name and only the arguments that differ between the jobs running that script (the whole
    command line stays in the experiment table). Where two different command lines would read the same
    (the same arguments in another order), both keep their whole :func:`script_label`."""
    pairs = sorted({(str(s), str(a or "")) for s, a in jobs if s})
    by_script: dict[str, list[tuple[str, str]]] = {}
    for script, args in pairs:
        by_script.setdefault(script, []).append((script, args))
    out = {}
    for script, mine in by_script.items():
        groups = {pair: _arg_groups(json.loads(pair[1]) if pair[1] else []) for pair in mine}
        common = set.intersection(*(set(g) for g in groups.values()))
        name = script.replace("\\", "/").rsplit("/", 1)[-1]
        for pair, own in groups.items():
            out[pair] = shlex.join([name, *(arg for g in own if g not in common for arg in g)])
    seen: dict[str, list] = {}
    for pair, label in out.items():
        seen.setdefault(label, []).append(pair)
    for same in seen.values():
        if len({p[1] for p in same}) > 1 or len({p[0] for p in same}) > 1:
            for pair in same:
                out[pair] = script_label(*pair)
    return out
