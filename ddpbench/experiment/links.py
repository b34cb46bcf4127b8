"""Links: the network an experiment names, as rates (tc's words) and as profiles to project onto.

* a job's ``link`` (emulated nodes): a rate in tc's words, ``"1gbit"``, ``"100mbit"`` (SI units:
  1gbit = 10^9 bit/s), or ``"none"`` for an unshaped link (:data:`LINK_RATE`, :func:`rate_bits`);
* an experiment's ``[[links]]``: named profiles the report's cost model projects onto, each a rate
  in Gbit/s and a latency per message in microseconds (:func:`parse_links`).
"""

from __future__ import annotations

import re

from ddpbench.errors import InputError, shown

#: a link rate in tc's words (SI units: 1gbit = 10^9 bit/s), or "none" for an unshaped link
LINK_RATE = re.compile(r"none|\d+(\.\d+)?(kbit|mbit|gbit|tbit)", re.IGNORECASE)
_RATE = re.compile(r"(\d+(?:\.\d+)?)(kbit|mbit|gbit|tbit)", re.IGNORECASE)
_UNIT = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12}  # tc's units are SI
LINK_KEYS = ("name", "gbit_per_s", "latency_us")


def rate_bits(rate: str) -> float:
    """tc's rate text ("1gbit", "100mbit") in bits per second; ValueError if it is not one."""
    match = _RATE.fullmatch(rate.strip())
    if not match:
        raise ValueError(f"not a link rate: {rate!r}")
    return float(match.group(1)) * _UNIT[match.group(2).lower()]


def parse_links(value, source: str) -> tuple[dict, ...]:
    """Validate an experiment's ``[[links]]``: each a name, a rate in Gbit/s and a latency in us."""
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise InputError(source, "links", "must be an array of tables [[links]], each with name, gbit_per_s "
                         "and latency_us")
    links = []
    for index, link in enumerate(value):
        where = f"links[{index}]"
        for key in link:
            if key not in LINK_KEYS:
                raise InputError(source, f"{where}.{key}", f"unknown key; allowed: {', '.join(LINK_KEYS)}")
        for key in LINK_KEYS:
            if key not in link:
                raise InputError(source, f"{where}.{key}", "is missing; a link needs name (text), gbit_per_s "
                                 "(link rate, Gbit/s) and latency_us (per message, microseconds)")
        name = link["name"]
        if not isinstance(name, str) or not 1 <= len(name) <= 60:
            raise InputError(source, f"{where}.name", f"must be a text of 1 to 60 characters (got {shown(name)})")
        for key, low, high in (("gbit_per_s", 1e-3, 1e5), ("latency_us", 0, 1e6)):
            number = link[key]
            if isinstance(number, bool) or not isinstance(number, (int, float)) or not low <= number <= high:
                raise InputError(source, f"{where}.{key}", f"must be a number from {low:g} to {high:g} "
                                 f"(got {shown(number)})")
        links.append({"name": name, "gbit_per_s": float(link["gbit_per_s"]), "latency_us": float(link["latency_us"])})
    return tuple(links)
