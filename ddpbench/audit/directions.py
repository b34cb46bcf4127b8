"""Direction words set against the re-derived figures: "N % faster/slower than" (the setting named
before the number against the one after "than", by bucket cap, or "A ms against B ms"), "faster/
slower: Nx the throughput", "slower than ...: +N %", a rank that "computes N % slower than the other
ranks", a serial fraction that "rises/falls from A to B". "No faster or slower" says neither."""

from __future__ import annotations

import re

import numpy as np

from ddpbench.audit import parse
from ddpbench.audit.figures import Figures
from ddpbench.audit.pool import alike_but_cap
from ddpbench.audit.problem import Claim, Problem

_THAN = re.compile(rf"({parse.NUMBER}) ?% (faster|slower)(?:(?: per step)? than ([^,;(:]+))?")
_AGAINST = re.compile(rf"({parse.NUMBER}) ?ms[^,;]{{0,30}}? (?:against|vs) (?:this job's )?({parse.NUMBER}) ?ms")
_THROUGHPUT = re.compile(rf"\b(faster|slower)\b[^.:]{{0,60}}: ({parse.NUMBER})x")
_SIGNED = re.compile(rf"\b(?<!significantly )(faster|slower) than [^:]*: ([-+]{parse.NUMBER}) ?%")
_RANKS = re.compile(rf"({parse.NUMBER}) ?% (faster|slower) than the other ranks")
_TREND = re.compile(rf"\b(rises|falls) from ({parse.NUMBER}) to ({parse.NUMBER})")


def _caps_groups(fig: Figures, keys) -> list[list]:
    """Jobs among ``keys`` (those above world size 1) alike in every setting but the bucket cap."""
    groups: dict = {}
    for k in keys:
        if fig.rec(k)["world_size"] > 1:
            groups.setdefault(alike_but_cap(fig, k), []).append(k)
    return list(groups.values())


def _caps(segment: str) -> set:
    return {float(c) for c in re.findall(r"(\d+(?:\.\d+)?)(?=,| and| MB)", segment)}


def _at_caps(fig: Figures, caps: set) -> set:
    """The jobs (ok or not) that ran one of ``caps``: found by one lookup a cap (made once a folder)."""
    if "jobs by cap" not in fig.memo:
        by_cap: dict = {}
        for key, cap in zip(fig.jobs.index, fig.jobs["bucket_cap_mb"].astype(float)):
            by_cap.setdefault(float(cap), set()).add(key)
        fig.memo["jobs by cap"] = by_cap
    return set().union(*(fig.memo["jobs by cap"].get(c, set()) for c in caps))


def _faster_by_caps(fig: Figures, keys, before: str, after: str):
    """For each setting group holding both sets of caps: (subject's mean step, the other's)."""
    mine, theirs = _caps(before), _caps(after)
    named = _at_caps(fig, mine | theirs)  # a sentence names a few caps of the many its jobs ran
    out = []
    for group in _caps_groups(fig, [k for k in keys if k in named]):
        a = [k for k in group if float(fig.rec(k)["bucket_cap_mb"]) in mine]
        b = [k for k in group if float(fig.rec(k)["bucket_cap_mb"]) in theirs]
        if a and b and not set(a) & set(b):
            out.append((np.mean([t for k in a for t in fig.launch_ms[k]]),
                        np.mean([t for k in b for t in fig.launch_ms[k]])))
    return out


NEITHER = re.compile(r"faster or slower|slower or faster")


def check_directions(fig: Figures, claim: Claim, keys) -> list[Problem]:
    out, text = [], claim.text
    if NEITHER.search(text):
        return out

    def bad(what: str):
        out.append(Problem("direction", claim.job, text, what))

    for m in _THAN.finditer(text):
        word, start = m.group(2), text.rfind(":", 0, m.start())
        if m.group(3) and _caps(m.group(3)):  # "than the default 25 MB": caps against caps (not "the other ranks")
            named = _caps(text[start + 1:m.start()]) | _caps(m.group(3))
            ran = {float(fig.rec(k)["bucket_cap_mb"]) for k in keys if fig.rec(k)["world_size"] > 1}
            if named and ran and not named <= ran:
                caps = ", ".join(f"{c:g}" for c in sorted(named - ran))
                out.append(Problem("job", claim.job, text, f"compares bucket caps {caps} MB that none of its jobs ran"))
                continue
        steps = _faster_by_caps(fig, keys, text[start + 1:m.start()], m.group(3)) if m.group(3) else []
        if steps:
            if not any((a < b) == (word == "faster") for a, b in steps):
                bad(f"says {word}, but its mean step is {steps[0][0]:.1f} ms against {steps[0][1]:.1f} ms")
            continue
        pair = [p for p in _AGAINST.finditer(text[:m.start()])]
        if pair:
            a, b = float(pair[-1].group(1)), float(pair[-1].group(2))
            if a != b and (a < b) != (word == "faster"):
                bad(f"says {word}, but quotes {a} ms against {b} ms")
    for m in _THROUGHPUT.finditer(text):
        x = float(m.group(2))
        if x != 1 and (x > 1) != (m.group(1) == "faster"):
            bad(f"says {m.group(1)} with {m.group(2)}x the throughput")
    for m in _SIGNED.finditer(text):
        if float(m.group(2)) != 0 and (float(m.group(2)) > 0) != (m.group(1) == "slower"):
            bad(f"says {m.group(1)} with a step change of {m.group(2)} %")
    for m in _RANKS.finditer(text):
        if float(m.group(1)) != 0 and (float(m.group(1)) > 0) != (m.group(2) == "slower"):  # 0 %: no direction
            bad(f"a rank that computes longer than the others is slower, not {m.group(2)}")
    for m in _TREND.finditer(text):
        a, b = float(m.group(2)), float(m.group(3))
        if a != b and (b > a) != (m.group(1) == "rises"):
            bad(f"says {m.group(1)} from {a} to {b}")
    return out
