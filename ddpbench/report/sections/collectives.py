"""The report's sections of the collective micro-benchmarks: bus bandwidth against size, the
nccl-tests table with its correctness check, and DDP's buckets on the measured all_reduce curve."""

from __future__ import annotations

import math

import pandas as pd
from markupsafe import Markup

from ddpbench.analysis.core import EXPOSED_COMM_MS, describe, line_fields
from ddpbench.analysis.models import ddp_buckets_vs_allreduce
from ddpbench.report.page import ReportContext, Section, html, html_table, num
from ddpbench.report.plots import collectives as pc
from ddpbench.report.sections.overview import reused_note


def _coll_setting(row, several: bool) -> str:
    """'world size 2' plus backend/device (and threads per rank) where launches differ in them."""
    text = f"world size {row['world_size']}"
    return text + (f", {row['backend']}/{row['device']}, {row['threads_per_rank']} thread(s) per rank"
                   if several else "")


def _one_rank_note(rows) -> Markup:
    """Why busbw is 0 at world size 1, when any row is at world size 1 (else nothing)."""
    if rows is None or rows.empty or not (rows["world_size"] == 1).any():
        return Markup()
    return Markup('<p class="note">At world size 1 no byte crosses a link: the factors 2(n&minus;1)/n and '
            "(n&minus;1)/n are 0 at n = 1, so the busbw of all_reduce, all_gather, reduce_scatter and all_to_all "
            "is 0 there, as nccl-tests prints it; the time is what the op costs on one rank alone (a local copy, "
            "or nothing). send_recv needs a peer and is not run at world size 1.</p>")


#: how bus bandwidth is defined, under the figure or the sentence that stands for it
BUSBW_NOTE = Markup(
        '<p class="note">As nccl-tests defines them: algbw = S / t for a message of S bytes (the whole '
        "array) taking t seconds, and busbw = algbw &times; a factor that makes it comparable across "
        "world sizes n and with the link's peak: 2(n&minus;1)/n for all_reduce; (n&minus;1)/n for "
        "all_gather, reduce_scatter and all_to_all; 1 for broadcast, reduce and send_recv. t is the "
        "slowest rank's time per iteration, median over the timed iterations (for send_recv, half of a "
        "rank 0 &rarr; rank 1 &rarr; rank 0 round trip). Sizes on the x axis count K = 1024 and "
        "M = 1024<sup>2</sup> bytes.</p>")


#: what tells one line of the bus bandwidth figure from another: its panel (the op), its setting, its placement
BUSBW_LINE = ("op", "backend", "device", "threads_per_rank", "world_size", "placement")


def collectives_busbw_section(ctx: ReportContext) -> Section | None:
    rows = pc.measured(ctx.collectives)
    if rows is None or rows.empty:
        return None
    lines = rows[[f for f in BUSBW_LINE if f in rows]].astype(str).drop_duplicates()
    if len(lines) == 1:  # one line (the default sweep's all_reduce curve): the table below says the same
        only = lines.iloc[0]
        what = html('<p class="what">One operation at one setting was measured ({{ op }}, world size {{ ws }}, '
                    "{{ place }}): its bus bandwidth (GB/s, 10<sup>9</sup> bytes per second) at each message size "
                    "is the <em>busbw</em> column of the nccl-tests table below; no figure draws that one line. "
                    "A figure compares operations, world sizes and placements where more than one was measured "
                    "(<code>python -m ddpbench collectives</code> measures every operation).</p>",
                    op=only.get("op", "?"), ws=only.get("world_size", "?"),
                    place=pc.PLACEMENT_NAMES.get(only.get("placement"), only.get("placement", "?")))
        return Section("Collectives: bus bandwidth", what + BUSBW_NOTE + _one_rank_note(rows)
                       + reused_note(ctx.collectives))
    path = pc.busbw_by_size(ctx.collectives, ctx.image("collectives_busbw.png"))
    if path is None:
        return None
    return Section(
        "Collectives: bus bandwidth",
        Markup('<p class="what">Bus bandwidth (GB/s, 10<sup>9</sup> bytes per second) of each collective against '
        "the message size, one panel per operation, one line per world size and placement (solid, filled "
        "markers: out-of-place; dashed, hollow: in-place). Higher is better; a flat top is the link's "
        "usable bandwidth.</p>") + BUSBW_NOTE + _one_rank_note(rows) + reused_note(ctx.collectives), (path,))


def _coll_failures_html(coll) -> Markup:
    """Collective launches that did not finish, each with its status and error."""
    if coll is None or coll.empty or "status" not in coll.columns:
        return Markup()
    bad = coll[coll["status"] != "ok"].drop_duplicates("key")
    if bad.empty:
        return Markup()
    return html('<p class="note">Collective launches that did not finish, and why:</p>\n<ul class="note">'
                "{% for r in rows %}<li>{{ r.key }} (world size {{ r.world_size }}, {{ r.backend }}/{{ r.device }}): "
                '<span class="status-{{ r.status }}">{{ r.status }}</span> &ndash; <code class="err">{{ r.error }}'
                "</code></li>{% endfor %}</ul>", rows=[r.to_dict() for _, r in bad.iterrows()])


NCCL_COLUMNS = ("time (us)", "algbw (GB/s)", "busbw (GB/s)", "#wrong", "p10 / p90 time (us)")


#: a table's rows, in one rendering (a fragment per cell would be a Jinja rendering each: a thousand a page)
NCCL_ROWS = (
    "{% for row in rows %}{% if not loop.first %}\n{% endif %}<tr>"
    "{% if many %}<td><code>{{ row.key }}</code></td>{% endif %}"
    '<td class="num">{{ row.size }}</td><td class="num">{{ row.r.count }}</td><td>{{ row.r.dtype }}</td>'
    '<td>{{ row.r.redop }}</td><td class="num">{{ row.r.root }}</td>'
    "{% for p in row.places %}{% if p is none %}{% for _ in columns %}<td class=\"num\">&ndash;</td>{% endfor %}"
    '{% else %}<td class="num">{{ p.time }}</td><td class="num">{{ p.algbw }}</td><td class="num">{{ p.busbw }}</td>'
    '<td class="num{% if p.bad %} wrong{% endif %}">{{ p.wrong }}</td><td class="num">{{ p.p10 }} / {{ p.p90 }}</td>'
    "{% endif %}{% endfor %}</tr>{% endfor %}")


def _placement_cells(row) -> dict | None:
    """What the five cells of one placement show (nccl-tests' four, then p10 / p90); None where it was
    not run (dashes)."""
    if row is None:
        return None
    wrong = row["wrong"]
    bad = isinstance(wrong, (int, float)) and not math.isnan(float(wrong)) and wrong > 0
    return {"time": num(row["time_us_median"], ".1f"), "algbw": num(row["algbw_gbps"], ".3g"),
            "busbw": num(row["busbw_gbps"], ".3g"), "bad": bad, "wrong": wrong if bad else num(wrong, ".0f"),
            "p10": num(row["time_us_p10"], ".1f"), "p90": num(row["time_us_p90"], ".1f")}


def _nccl_table(part) -> Markup:
    """One op at one setting as nccl-tests prints it: size, count, type, redop, root, then
    out-of-place and in-place columns; one row per (launch, size)."""
    launches = list(dict.fromkeys(part["key"]))
    lead = (["launch"] if len(launches) > 1 else []) + ["size (B)", "count (elements)", "type", "redop", "root"]
    width = len(NCCL_COLUMNS)
    head = html('<tr>{% for h in lead %}<th rowspan="2">{{ h }}</th>{% endfor %}<th colspan="{{ width }}">out-of-place'
                '</th><th colspan="{{ width }}">in-place</th></tr>\n<tr>{% for h in columns %}<th>{{ h }}</th>'
                "{% endfor %}</tr>", lead=lead, width=width, columns=NCCL_COLUMNS * 2)
    rows = []
    for (key, size), found in _by_launch_and_size(part).items():
        by_place = {r["placement"]: r for r in found}
        rows.append({"key": key, "size": int(size), "r": found[0],
                     "places": [_placement_cells(by_place.get("out")), _placement_cells(by_place.get("in"))]})
    body = html(NCCL_ROWS, rows=rows, many=len(launches) > 1, columns=NCCL_COLUMNS)
    wrong = int(part["wrong"].fillna(0).astype(float).gt(0).sum())
    avg = float(part["busbw_gbps"].astype(float).mean())
    return html("<table>\n<thead>{{ head }}</thead>\n<tbody>\n{{ body }}\n</tbody>\n</table>\n"
                '<p class="note">Average bus bandwidth: {{ avg }} GB/s; {% if wrong %}<span class="wrong-note">'
                "{{ wrong }} measurement(s) with wrong elements</span>{% else %}no wrong elements{% endif %}.</p>",
                head=head, body=body, avg=num(avg, ".3g"), wrong=wrong)


def _by_launch_and_size(part) -> dict:
    """``part``'s rows as plain dicts, grouped by (launch, size) in the order they first appear, rows
    with no launch or size left out: ``part.groupby(["key", "size_bytes"], sort=False)``, read once
    rather than a Series per row (hundreds of rows on the default sweep's page)."""
    groups: dict = {}
    for row in part.to_dict("records"):
        key, size = row["key"], row["size_bytes"]
        if pd.isna(key) or pd.isna(size):
            continue
        groups.setdefault((key, size), []).append(row)
    return groups


def collectives_table_section(ctx: ReportContext) -> Section | None:
    coll = ctx.collectives
    if coll is None or coll.empty or "status" not in coll.columns:
        return None
    rows = pc.measured(coll)
    failures = _coll_failures_html(coll)
    if rows is None or rows.empty:
        return Section("Collectives: nccl-tests table", failures) if failures else None
    rows = rows.sort_values(["world_size", "backend", "device", "threads_per_rank", "size_bytes"], kind="stable")
    setting = ["world_size", "backend", "device", "threads_per_rank"]
    several = len(rows[setting[1:]].astype(str).drop_duplicates()) > 1
    parts = []
    for number, op in enumerate(pc.ops_in_order(rows)):
        mine = rows[rows["op"] == op]
        wrong = int(mine["wrong"].fillna(0).astype(float).gt(0).sum())
        tables = [(_coll_setting(part.iloc[0], several), _nccl_table(part))
                  for _, part in mine.groupby(setting, sort=False)]
        sizes = sorted(set(int(w) for w in mine["world_size"]))
        parts.append(html('<details{% if open %} open{% endif %}><summary>{{ op }} (world size {{ sizes }})'
                          '{% if wrong %} &ndash; <span class="wrong-note">{{ wrong }} with wrong elements</span>'
                          "{% endif %}</summary>\n{% for setting, table in tables %}<h4>{{ op }}, {{ setting }}</h4>\n"
                          "{{ table }}\n{% endfor %}</details>", open=number == 0, op=op,
                          sizes=", ".join(map(str, sizes)), wrong=wrong, tables=tables))
    return Section(
        "Collectives: nccl-tests table",
        Markup('<p class="what">Every measurement in nccl-tests&rsquo; layout, one table per operation and world '
        "size (click an operation to open it). <em>time</em> is the slowest rank&rsquo;s median over the "
        "timed iterations, <em>p10 / p90</em> the 10th and 90th percentiles of the same; <em>#wrong</em> "
        "counts the elements, over all ranks, that differed from the expected result in a checked run "
        "after the timed ones (nccl-tests&rsquo; <code>-c</code>), red when any did. An op with a single "
        "placement shows &ndash; in the other.</p>") + _one_rank_note(rows) + failures + Markup("\n")
        + Markup("\n").join(parts))


def _bucket_jobs(ctx: ReportContext):
    """analysis.ddp_buckets_vs_allreduce per device (a CPU job is not put on a GPU curve), with the
    job's ``device`` and a ``_label``; an empty DataFrame when nothing matches."""
    rows = pc.measured(ctx.collectives)
    summary = ctx.summary
    if summary.empty or rows is None or rows.empty or ctx.ranks.empty or "bucket_bytes" not in ctx.ranks:
        return pd.DataFrame()
    frames = []
    for device in dict.fromkeys(summary["device"]):
        part = ddp_buckets_vs_allreduce(summary[summary["device"] == device], ctx.ranks,
                                        rows[rows["device"] == device])
        if len(part):
            frames.append(part.assign(device=device))
    if not frames:
        return pd.DataFrame()
    jobs = pd.concat(frames, ignore_index=True)
    ddp = summary[summary["key"].isin(jobs["key"])]
    fields = line_fields(ddp, but=("bucket_cap_mb", "world_size"))
    labels = {r["key"]: f"{describe(r, fields, ddp)}, ws={r['world_size']}, bucket cap "
                        f"{float(r['bucket_cap_mb']):g} MB" for _, r in ddp.iterrows()}
    return jobs.assign(_label=jobs["key"].map(labels))


def ddp_buckets_section(ctx: ReportContext) -> Section | None:
    jobs = _bucket_jobs(ctx)
    if jobs.empty:
        return None
    path = pc.allreduce_with_buckets(ctx.collectives, jobs, ctx.image("ddp_buckets_allreduce.png"))
    header = ["job", "buckets: count and sizes (MB)", "predicted all_reduce per bucket (ms)",
              "predicted (model of the measured curve): all_reduce per step (ms)", "DDP-logged comm (ms)",
              "exposed comm (ms)", "measured range"]
    rows = []
    for _, r in jobs.iterrows():
        inside = bool(r["inside_measured_range"])
        rows.append([r["_label"], html("{{ n }}: {{ sizes | join(', ') }}", n=r["buckets"],
                                       sizes=[num(v, ".3g") for v in r["bucket_mb"]]),
                     Markup(", ").join(num(v, ".3g") for v in r["predicted_ms"]), num(r["predicted_comm_ms"], ".2f"),
                     num(r["ddp_comm_ms"], ".2f"), num(r[EXPOSED_COMM_MS], ".2f"),
                     "inside the measured range" if inside else
                     Markup('<span class="flag" title="outside the measured sizes: the curve is extended">'
                            "extrapolated</span>")])
    return Section(
        "DDP buckets on the all_reduce curve",
        Markup('<p class="what">Where each DDP job&rsquo;s gradient buckets fall on the all_reduce curve measured at '
        "the same world size and backend: the figure marks every bucket at the time the curve gives for its "
        "size (log-log; the shaded band is the 10th to 90th percentile), and the table adds them up per "
        "training step next to what DDP itself logged.</p>"
        '<p class="note">The prediction adds the buckets&rsquo; all-reduce times one after another, while '
        "DDP&rsquo;s logged comm spans the first bucket&rsquo;s start to the last bucket&rsquo;s end, "
        "including time spent waiting on backward for the next bucket, so logged &ge; predicted is expected. "
        "Between measured sizes the time is interpolated log-log; outside them the nearest segment is "
        "extended (flagged <em>extrapolated</em>). Bucket sizes are in MB of 10<sup>6</sup> bytes; the "
        "figure&rsquo;s axis counts K = 1024 and M = 1024<sup>2</sup>.</p>\n")
        + html_table(header, rows, numeric={2, 3, 4, 5}), (path,) if path is not None else ())
