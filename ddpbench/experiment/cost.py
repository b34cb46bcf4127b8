"""What a device-hour costs, and the training the cost is for: an experiment's ``[cost]`` table, or
the same keys as flags of ``sweep`` and ``report`` (``--price-per-device-hour 2.5``).

Experiment file::

    [cost]
    price_per_device_hour = 2.5     # a GPU's (or, on CPU, a rank's) hour
    price_per_node_hour = 0.0       # optional: what a node costs besides its devices
    currency = "USD"                # optional, default USD
    source = "on-demand list price, region X"   # where the price came from
    date = "2026-11-01"             # when it held
    samples = 1281167               # optional: one training run's samples (time and cost to train)
    deadline_h = 24                 # optional: the hours that run must finish in (needs samples)

Each key is declared once (:data:`KEYS`): its check, its flag and its help text; the sweep stores
the table in its record, so a report shows the price a cost was computed with, its source and
its date. A price is not a measurement: ``report DIR --price-per-device-hour X`` recomputes every
cost from the stored step times.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import re
from dataclasses import dataclass, field

from ddpbench.errors import InputError, shown

CURRENCY = re.compile(r"[A-Za-z$€£¥]{1,8}")


def _key(flag: str, help: str, default=None):
    return field(default=default, metadata={"flag": flag, "help": help})


@dataclass(frozen=True)
class Cost:
    """The price of the hardware a job runs on, where it came from, and the training it is for."""

    price_per_device_hour: float | None = _key(
        "--price-per-device-hour", "price of one device for an hour (a GPU; on CPU, a rank), for cost per sample")
    price_per_node_hour: float = _key("--price-per-node-hour", "price of one node for an hour besides its devices "
                                      "(default: 0)", 0.0)
    currency: str = _key("--currency", "the prices' currency (default: USD)", "USD")
    source: str = _key("--price-source", "where the price came from (stored beside it)", "")
    date: str = _key("--price-date", "when the price held, YYYY-MM-DD (stored beside it)", "")
    samples: int | None = _key("--train-samples", "samples of one training run: its time and cost at each setting")
    deadline_h: float | None = _key("--deadline-h", "hours that training run must finish in: the cheapest setting "
                                    "that meets it (needs --train-samples)")

    @property
    def priced(self) -> bool:
        return self.price_per_device_hour is not None

    def hourly(self, devices: float, nodes: float) -> float:
        """The price of ``devices`` devices on ``nodes`` nodes for an hour (NaN without a price)."""
        if not self.priced:
            return math.nan
        return devices * self.price_per_device_hour + nodes * self.price_per_node_hour

    def to_dict(self) -> dict:
        """What a sweep stores (the keys given, none left at a default that says nothing)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) not in (None, "") or f.name == "currency"}

    def described(self) -> str:
        """The price in words, with its source and date where given."""
        if not self.priced:
            return "no price given"
        text = f"{self.price_per_device_hour:g} {self.currency} a device-hour"
        if self.price_per_node_hour:
            text += f" + {self.price_per_node_hour:g} {self.currency} a node-hour"
        said = ", ".join(x for x in (self.source, self.date) if x)
        return f"{text} ({said})" if said else text


KEYS = tuple(f.name for f in dataclasses.fields(Cost))
FLAGS = {f.metadata["flag"]: f.name for f in dataclasses.fields(Cost)}


def _number(value, source: str, key: str, low: float, high: float, above: bool = False) -> float:
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
    if not ok or not (value > low if above else value >= low) or value > high:
        rule = f"above {low:g}" if above else f"from {low:g}"
        raise InputError(source, key, f"must be a number {rule} to {high:g} (got {shown(value)})")
    return float(value)


def parse_cost(table, source: str, names: dict | None = None) -> Cost:
    """An experiment's ``[cost]`` -> :class:`Cost`; InputError naming the key (``cost.KEY``, or
    ``names[KEY]``: the flags) and what is allowed."""
    names = names or {key: f"cost.{key}" for key in KEYS}
    if not isinstance(table, dict):
        raise InputError(source, "cost", f"must be a table [cost] with some of {', '.join(KEYS)}")
    for key in table:
        if key not in KEYS:
            raise InputError(source, f"cost.{key}", f"unknown key; allowed: {', '.join(KEYS)}")
    values = {k: v for k, v in table.items() if v is not None}
    out = {}
    if "price_per_device_hour" in values:
        out["price_per_device_hour"] = _number(values["price_per_device_hour"], source,
                                               names["price_per_device_hour"], 0, 1e6, above=True)
    if "price_per_node_hour" in values:
        out["price_per_node_hour"] = _number(values["price_per_node_hour"], source, names["price_per_node_hour"],
                                             0, 1e6)
    for key, limit in (("currency", 8), ("source", 200), ("date", 10)):
        if key in values:
            text = values[key]
            if not isinstance(text, str) or len(text) > limit or "\n" in text:
                raise InputError(source, names[key], f"must be a text of at most {limit} characters on one "
                                 f"line (got {shown(text)})")
            out[key] = text.strip()
    if "currency" in out and not CURRENCY.fullmatch(out["currency"]):
        raise InputError(source, names["currency"], f"must be a currency's code or sign, 1 to 8 letters (got "
                         f"{out['currency']!r})")
    if out.get("date"):
        try:
            _dt.date.fromisoformat(out["date"])
        except ValueError:
            raise InputError(source, names["date"], f"must be a date YYYY-MM-DD (got {shown(out['date'])})") from None
    if "samples" in values:
        samples = values["samples"]
        if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= 10**15:
            raise InputError(source, names["samples"], f"must be a whole number of samples from 1 to 10^15 (got "
                             f"{samples!r})")
        out["samples"] = samples
    if "deadline_h" in values:
        out["deadline_h"] = _number(values["deadline_h"], source, names["deadline_h"], 0, 1e6, above=True)
        if "samples" not in out:
            raise InputError(source, names["deadline_h"], f"needs {names['samples']}: the samples of the training run "
                             "that must finish in it")
    if out.get("price_per_node_hour") and "price_per_device_hour" not in out:  # a node's 0 is no price given
        raise InputError(source, names["price_per_node_hour"], f"needs {names['price_per_device_hour']} (0 is not "
                         "a price; give the device's)")
    return Cost(**out)


def with_flags(cost: Cost, given: dict, source: str = "command line") -> Cost:
    """``cost`` with the flags given (flag -> value, None where not given) put over its keys; the
    flags are checked as the keys are, errors naming the flag."""
    chosen = {FLAGS[flag]: value for flag, value in given.items() if value is not None}
    if not chosen:
        return cost
    merged = {**cost.to_dict(), **chosen}
    return parse_cost(merged, source, {name: flag for flag, name in FLAGS.items()})
