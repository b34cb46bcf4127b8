"""A ``tune`` folder's race (``search.json``, written by :mod:`ddpbench.sweep.search`): the
winner, the settings its launches could not tell from it, who went out in which round and why
(:func:`ddpbench.analysis.history.race.standing`), and what it spent.

The file is read as untrusted input (:mod:`ddpbench.files.sidefiles`): a value of the wrong
type costs the section, which then says which file and field, never the report."""

from __future__ import annotations

import math

from ddpbench.analysis.history import standing
from ddpbench.files.sidefiles import SideFileError, field, read_json
from ddpbench.report.page import DASH, ReportContext, Section, html, html_table, num
from ddpbench.results.schema import SEARCH_FILE

TITLE = "The race (tune)"


def read_race(path, root) -> dict:
    """search.json with every value this section uses checked (SideFileError otherwise)."""
    raw = read_json(path, root)
    where = str(path)
    race = {"winner": field(raw, "winner", str, where),
            "winner_samples_per_s": field(raw, "winner_samples_per_s", (int, float), where, optional=True,
                                          default=math.nan),
            "launches": field(raw, "launches", int, where), "grid_launches": field(raw, "grid_launches", int, where),
            "budget": field(raw, "budget", int, where)}
    interval = field(raw, "winner_interval", list, where, optional=True, default=[math.nan, math.nan])
    if len(interval) != 2 or not all(v is None or isinstance(v, (int, float)) and not isinstance(v, bool)
                                     for v in interval):
        raise SideFileError(f"{where}: 'winner_interval' is not a pair of numbers")
    race["winner_interval"] = [math.nan if v is None else float(v) for v in interval]
    race["tied"] = {field(t, "setting", str, f"{where}: tied[{i}]"):
                    field(t, "basis", str, f"{where}: tied[{i}]", optional=True, default="")
                    for i, t in enumerate(field(raw, "tied", list, where))}
    race["candidates"] = [{"setting": field(c, "setting", str, f"{where}: candidates[{i}]"),
                           "launches": field(c, "launches", int, f"{where}: candidates[{i}]"),
                           "samples_per_s": field(c, "samples_per_s", (int, float), f"{where}: candidates[{i}]",
                                                  optional=True, default=math.nan),
                           "out_in_round": field(c, "out_in_round", int, f"{where}: candidates[{i}]", optional=True),
                           "why_out": field(c, "why_out", str, f"{where}: candidates[{i}]", optional=True, default="")}
                          for i, c in enumerate(field(raw, "candidates", list, where))]
    race["same_buckets"] = [{"setting": field(s, "setting", str, f"{where}: same_buckets[{i}]"),
                             "as": field(s, "as", str, f"{where}: same_buckets[{i}]")}
                            for i, s in enumerate(field(raw, "same_buckets", list, where, optional=True, default=[]))]
    return race


def search_section(ctx: ReportContext) -> Section | None:
    path = ctx.results_dir / SEARCH_FILE
    if not path.exists() and not path.is_symlink():
        return None
    try:
        result = read_race(path, ctx.results_dir)
    except SideFileError as err:
        return Section(TITLE, html('<p class="note">{{ why }}; the race is not shown.</p>', why=str(err)))
    tied = result["tied"]
    rows = []
    for c in sorted(result["candidates"], key=lambda c: -(c["samples_per_s"] if c["samples_per_s"] == c["samples_per_s"]
                                                           else 0)):
        rows.append([c["setting"], c["launches"], num(c["samples_per_s"], ".1f"), standing(c, result["winner"], tied)])
    for same in result["same_buckets"]:
        rows.append([same["setting"], "0", DASH, f"not run: predicted to make the same buckets as {same['as']}"])
    low, high = result["winner_interval"]
    return Section(TITLE, html(
        '<p class="what">Fastest: <strong>{{ r.winner }}</strong>, {{ rate }} samples/s (95 % interval {{ low }} to '
        "{{ high }}).{% if tied %} Not told apart from it (their interval against it contains 1): {{ tied }}."
        "{% else %} Every other setting is told apart from it.{% endif %} The race spent {{ r.launches }} launches "
        "where "
        "the whole grid would have spent {{ r.grid_launches }} (budget {{ r.budget }}): settings predicted to "
        "make the same DDP "
        "buckets ran once, and each round the settings significantly slower than the leader went out, or, when none "
        "was, the slower half.</p>\n{{ table }}",
        r=result, rate=num(result["winner_samples_per_s"], ".1f"), low=num(low, ".1f"), high=num(high, ".1f"),
        tied=", ".join(sorted(tied)),
        table=html_table(["setting", "launches", "samples/s", "verdict"], rows, numeric={1, 2})))
