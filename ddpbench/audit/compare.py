"""``compare``'s rows (:func:`ddpbench.analysis.history.compare.compare_tables`, as plain dicts) set against
the two folders' own records, re-derived here (:mod:`.figures`).

Per row: whether it was compared (ok in both folders), each side's launch count, mean and median
step (equal within :data:`RELATIVE`: the rows hold unrounded floats), the mean and median ratios
B / A and the throughput change, the ratio's interval (it holds the ratio, and its ends are those of
:func:`~ddpbench.audit.figures.ratio_interval` of B's launch means over A's, within
:data:`RELATIVE`), and the verdict's direction: "slower"
only with B's step longer, "faster" only shorter, and neither where the row's own interval holds 1;
"not significant" not where it excludes 1.
"""

from __future__ import annotations

import math

from ddpbench.audit.checks import Problem
from ddpbench.audit.figures import Figures, ratio_interval

RELATIVE = 1e-3


def _close(quoted, derived) -> bool:
    quoted, derived = float(quoted), float(derived)
    if math.isnan(quoted) or math.isnan(derived):
        return math.isnan(quoted) and math.isnan(derived)
    return abs(quoted - derived) <= RELATIVE * max(abs(derived), 1e-9)


def check_compare(rows, a: Figures, b: Figures) -> list[Problem]:
    """Every way ``rows`` (dicts, one per job: ``compare_tables(...).to_dict("records")``) disagree
    with the folders ``a`` and ``b`` (see the module doc); [] when they agree."""
    out = []
    for row in rows:
        key = row.get("key")

        def bad(what: str, row=row, key=key):
            out.append(Problem("compare", key, f"{row.get('job', key)}: {row.get('verdict')}", what))

        ok_a = key in a.jobs.index and a.rec(key)["status"] == "ok"
        ok_b = key in b.jobs.index and b.rec(key)["status"] == "ok"
        if bool(row.get("compared")) != (ok_a and ok_b):
            where = "both" if ok_a and ok_b else "not both"
            bad(f"compared={row.get('compared')}, but the job is ok in {where} folders")
            continue
        if not (ok_a and ok_b):
            continue
        ra, rb = a.rec(key), b.rec(key)
        for side, r, fig in (("a", ra, a), ("b", rb, b)):
            if int(row.get(f"launches_{side}", -1)) != len(fig.launch_ms[key]):
                bad(f"launches_{side} = {row.get(f'launches_{side}')}, the records hold {len(fig.launch_ms[key])}")
            mean = row[f"mean_ms_{side}"]
            if not (_close(mean, r["step_ms_pooled"]) or _close(mean, r["step_ms"])):
                bad(f"mean_ms_{side} = {row[f'mean_ms_{side}']:.3f}, re-derived {r['step_ms']:.3f}")
            if not _close(row[f"median_ms_{side}"], r["median_ms"]):
                bad(f"median_ms_{side} = {row[f'median_ms_{side}']:.3f}, re-derived {r['median_ms']:.3f}")
        mean_ratio, median_ratio = rb["step_ms"] / ra["step_ms"], rb["median_ms"] / ra["median_ms"]
        pooled_ratio = rb["step_ms_pooled"] / ra["step_ms_pooled"]
        if not (_close(row["mean_ratio"], mean_ratio) or _close(row["mean_ratio"], pooled_ratio)):
            bad(f"mean_ratio = {row['mean_ratio']:.4f}, re-derived {mean_ratio:.4f}")
        if not _close(row["median_ratio"], median_ratio):
            bad(f"median_ratio = {row['median_ratio']:.4f}, re-derived {median_ratio:.4f}")
        change = 100 * (1 / pooled_ratio - 1)
        quoted = row["throughput_change_pct"]
        if not (_close(quoted, change) or _close(quoted, 100 * (1 / mean_ratio - 1))):
            bad(f"throughput_change_pct = {row['throughput_change_pct']:.2f}, re-derived {change:.2f}")
        low, high = float(row.get("mean_ratio_low", math.nan)), float(row.get("mean_ratio_high", math.nan))
        mine = ratio_interval(b.launch_ms[key], a.launch_ms[key])
        if not (_close(low, mine[0]) and _close(high, mine[1])):
            bad(f"interval {low:.4f} to {high:.4f} is not the interval of the launches "
                f"({mine[0]:.4f} to {mine[1]:.4f})")
        elif not math.isnan(low) and not low <= row["mean_ratio"] <= high:
            bad(f"interval {low:.4f} to {high:.4f} does not hold the ratio {row['mean_ratio']:.4f}")
        verdict = row.get("verdict")
        ratio = mean_ratio if not math.isnan(low) or len(a.launch_ms[key]) > 1 < len(b.launch_ms[key]) else median_ratio
        if verdict == "slower" and not ratio > 1 or verdict == "faster" and not ratio < 1:
            bad(f"says {verdict}, but B / A = {ratio:.4f}")
        if not math.isnan(low):
            holds_one = low <= 1 <= high
            if verdict in ("slower", "faster") and holds_one:
                bad(f"says {verdict}, but its interval {low:.4f} to {high:.4f} holds 1")
            if verdict == "not significant" and not holds_one:
                bad(f"says not significant, but its interval {low:.4f} to {high:.4f} excludes 1")
    return out
