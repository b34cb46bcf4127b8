"""A ``tune`` folder's race (``search.json``, written by :mod:`ddpbench.sweep.search`): the
winner, the settings tied with it, who went out in which round and why, and what it spent."""

from __future__ import annotations

import json

from ddpbench.report.page import ReportContext, Section, esc, html_table, num
from ddpbench.results.schema import SEARCH_FILE



def search_section(ctx: ReportContext) -> Section | None:
    path = ctx.results_dir / SEARCH_FILE
    if not path.is_file():
        return None
    try:
        result = json.loads(path.read_text())
    except (OSError, ValueError):
        return Section("The race (tune)", f'<p class="note">{esc(str(path))} cannot be read.</p>')
    tied = {t["setting"] for t in result["tied"]}
    rows = []
    for c in sorted(result["candidates"], key=lambda c: -(c["samples_per_s"] or 0)):
        verdict = ("fastest" if c["setting"] == result["winner"] else
                   "tied with the fastest" if c["setting"] in tied else f"out in round {c['out_in_round']}: {c['why_out']}")
        rows.append([esc(c["setting"]), esc(c["launches"]), num(c["samples_per_s"], ".1f"), esc(verdict)])
    for same in result["same_buckets"]:
        rows.append([esc(same["setting"]), "0", "&ndash;", esc(f"not run: the same buckets as {same['as']}")])
    low, high = result.get("winner_interval", [float("nan")] * 2)
    tied_text = (f" Statistically tied with it (their interval against it contains 1): {esc(', '.join(sorted(tied)))}."
                 if tied else " Nothing is statistically tied with it.")
    return Section(
        "The race (tune)",
        f'<p class="what">Fastest: <strong>{esc(result["winner"])}</strong>, '
        f"{num(result['winner_samples_per_s'], '.1f')} samples/s (95 % interval {num(low, '.1f')} to "
        f"{num(high, '.1f')}).{tied_text} The race spent "
        f"{result['launches']} launches where the whole grid would have spent {result['grid_launches']} "
        f"(budget {result['budget']}): settings with the same DDP buckets ran once, and each round the "
        "settings significantly slower than the leader went out, or, when none was, the slower half.</p>\n"
        + html_table(["setting", "launches", "samples/s", "verdict"], rows, numeric={1, 2}))
