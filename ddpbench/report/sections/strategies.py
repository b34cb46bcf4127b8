"""The report's sections that compare aggregation strategies: throughput, communication and traffic,
equivalence with single-process training, memory (when more than one strategy or DDP comm hook ran)."""

from __future__ import annotations

import math

from markupsafe import Markup

from ddpbench.analysis.core import EXPOSED_COMM_MS, STEP_MS, ordered, strategies_vary
from ddpbench.report.many import job_table
from ddpbench.report.page import DASH, ReportContext, Section, html, html_table, num, skipped_note
from ddpbench.report.plots import strategies as ps
from ddpbench.show.budget import exposed_of


def _strategy_table(ctx: ReportContext):
    """The summary with a short label per job (``_label``) and its gradient size (``grad_mb``,
    1 MB = 1e6 bytes, from the launches' ``grad_bytes``)."""
    table = ctx.summary
    grad: dict[str, float] = {}
    if "grad_bytes" in ctx.runs.columns:
        for key, value in zip(ctx.runs["key"], ctx.runs["grad_bytes"]):
            if isinstance(value, (int, float)) and not math.isnan(value):
                grad.setdefault(key, float(value) / 1e6)
    return table.assign(_label=ps.config_labels(table), grad_mb=table["key"].map(grad).astype(float))


def _not_drawn_html(table) -> Markup:
    """Jobs left out of a strategy figure, each with its status and reason."""
    bad = table[table["status"] != "ok"]
    if bad.empty:
        return Markup()
    return html('<p class="note">Jobs that did not finish ok, and why:</p>\n<ul class="note">{% for r in rows %}'
                '<li>{{ r._label }} at world size {{ r.world_size }}: <span class="status-{{ r.status }}">'
                "{{ r.status }}</span> &ndash; {{ r.error }}</li>{% endfor %}</ul>",
                rows=[r.to_dict() for _, r in bad.iterrows()])


def _strategy_section(ctx: ReportContext, title: str, draws, text: Markup, min_size: int = 1,
                      extra=lambda table: Markup(), list_failures: bool = False) -> Section | None:
    """A section of strategy figures: ``draws`` is ((draw, filename), ...), each ``draw(table, path)``;
    ``list_failures``: name every job that did not finish ok with its reason, not only count them."""
    if not strategies_vary(ctx.summary):
        return None
    table = _strategy_table(ctx)
    if not ((table["status"] == "ok") & (table["world_size"] >= min_size)).any():
        return None
    images = [draw(table, ctx.image(name)) for draw, name in draws]
    images = tuple(p for p in images if p is not None)
    if not images:
        return None
    return Section(title, text + extra(table) + (_not_drawn_html(table) if list_failures else skipped_note(ctx)),
                   images)


def strategies_section(ctx: ReportContext) -> Section | None:
    return _strategy_section(
        ctx, "Strategies side by side", ((ps.throughput_by_strategy, "strategies_throughput.png"),),
        Markup('<p class="what">Training throughput of all ranks together (samples per second) for each way of '
        "combining gradients, one bar per world size: the world-size-1 bar is the baseline, and a dotted "
        "outline shows what perfect linear scaling from it would give.</p>"
        '<p class="note">Hatched bars are oversubscribed jobs (more busy threads than cores): they measure '
        "contention for cores, not scaling. A slot that says <em>skipped</em> or <em>failed</em> had no "
        "result; the reasons are listed below.</p>"), list_failures=True)


def _traffic_source_html(source) -> Markup:
    kind = ps.traffic_kind(source)
    if kind == "unknown":
        return DASH
    detail = str(source).split(":", 1)[1].strip() if ":" in str(source) else ""
    return html("<strong>{{ kind }}</strong>{% if detail %}: {{ detail }}{% endif %}", kind=kind, detail=detail)


def _master_vs_ring(table) -> Markup:
    """One sentence comparing the master's link with a ring rank's, at the largest world size with both."""
    ok = table[(table["status"] == "ok") & (table["world_size"] > 1)]
    for size in sorted(set(ok["world_size"]), reverse=True):
        here = ok[(ok["world_size"] == size) & (ok["comm_hook"] == "none")]
        master, ring = here[here["strategy"] == "master"], here[here["strategy"] == "ring"]
        if len(master) != 1 or len(ring) != 1:
            continue
        m, r = float(master["sent_mb_per_step_max"].iloc[0]), float(ring["sent_mb_per_step_max"].iloc[0])
        if not (math.isfinite(m) and math.isfinite(r) and r > 0):
            continue
        grad = float(master["grad_mb"].iloc[0])
        gradient = (html(": rank 0&rsquo;s link carries (n&minus;1) = {{ n }} times the {{ grad }} MB gradient, a "
                         "ring rank&rsquo;s 2(n&minus;1)/n = {{ share }} times", n=size - 1, grad=num(grad, ".3g"),
                         share=num(2 * (size - 1) / size, ".3g"))
                    if math.isfinite(grad) else "")
        return html('<p class="what">At world size {{ size }} the master&rsquo;s rank 0 sends {{ m }} MB per step, '
                    "{{ ratio }}&times; the {{ r }} MB each rank of the ring sends{{ gradient }}.</p>", size=size,
                    m=num(m, ".3g"), ratio=num(m / r, ".1f"), r=num(r, ".3g"), gradient=gradient)
    return Markup()


def _comm_table(table) -> Markup:
    ok = ordered(table[(table["status"] == "ok") & (table["world_size"] > 1)])
    header = ["configuration", "world size", "comm after backward / step (ms)", "exposed comm (ms)",
              "sent MB, busiest rank", "received MB, busiest rank", "sent MB, median rank", "how known"]
    # an exposed time the launches did not resolve is said so, never quoted (ddpbench.show.budget.exposed_of)
    rows = [[r["_label"], r["world_size"], num(r["comm_ms"], ".2f"),
             exposed_of(r).words or num(r[EXPOSED_COMM_MS], ".2f"),
             num(r["sent_mb_per_step_max"], ".3g"), num(r["recv_mb_per_step_max"], ".3g"),
             num(r["sent_mb_per_step_median"], ".3g"), _traffic_source_html(r["traffic_source"])]
            for _, r in ok.iterrows()]
    return html_table(header, rows, numeric={1, 2, 3, 4, 5, 6})


def communication_section(ctx: ReportContext) -> Section | None:
    return _strategy_section(
        ctx, "Communication per strategy",
        ((ps.comm_time_by_strategy, "strategies_comm_time.png"), (ps.traffic_by_strategy, "strategies_traffic.png")),
        Markup('<p class="what">How long each strategy spends communicating per step (first figure, ms) and how many '
        "megabytes its busiest rank and its median rank send per optimizer step (second figure, 1 MB = "
        "10<sup>6</sup> bytes), at each world size above 1.</p>"
        '<p class="note">Communication after backward or after the optimizer step (master, the hand-written '
        "ring, the explicit all-reduces) is timed directly as <em>comm after backward / step</em>. DDP and "
        "ZeRO all-reduce while backward is still running; what that does not hide is the <em>exposed</em> "
        "part, step time with gradient sync minus step time under <code>no_sync()</code>, drawn pale where its "
        "95 % interval over launches includes 0 or a job ran one launch: not told apart from nothing. "
        "A value marked * "
        "could not be timed apart from compute: FSDP gathers and reduce-scatters inside forward and backward; "
        "ZeRO all-reduces inside backward and broadcasts inside its optimizer step, so it has no "
        "communication-free step to subtract. "
        "Local SGD averages the models only every few steps; its figure is the mean over all steps. "
        "Traffic marked "
        "<strong>measured</strong> was counted as bytes passed to send/recv; <strong>computed</strong> comes "
        "from the algorithm (the backends keep no byte counters); it is drawn dark or light "
        "accordingly.</p>"),
        min_size=2, extra=lambda table: _master_vs_ring(table) + _comm_table(table))


def _flag(value) -> bool | None:
    """True or False (Python's or numpy's), else None (a check that did not run)."""
    return {"True": True, "False": False}.get(str(value))


def _is_exact(row, known: dict) -> bool | None:
    """Whether the job's strategy must match single-process training; from its own check, from a
    failed check's error, or from another job with the same label."""
    if _flag(row["exact"]) is not None:
        return _flag(row["exact"])
    if row["status"] == "failed" and "not equivalent" in str(row["error"]):
        return True
    return known.get(row["_label"])


def _verdict(row, exact: bool | None) -> tuple[Markup | str, bool]:
    """(verdict, whether the row is bad)."""
    diff = float(row["max_abs_diff"]) if row["max_abs_diff"] is not None else math.nan
    if row["status"] == "failed" and "not equivalent" in str(row["error"]):
        return html('<strong>NOT equivalent</strong><code class="err">{{ e }}</code>', e=row["error"]), True
    if row["status"] != "ok":
        return html('not checked: <span class="status-{{ s }}">{{ s }}</span>', s=row["status"]), False
    if math.isnan(diff):
        return "not checked (check_steps = 0)", False
    if exact is False:
        return ("matches (although lossy by design)" if diff <= MATCH_DIFF else "differs (lossy by design)"), False
    return ("matches" if diff <= MATCH_DIFF else "matches up to float rounding (within the job's tolerance)"), False


#: a difference at most this large reads as "matches" (float32 rounding over a few steps)
MATCH_DIFF = 1e-6


def equivalence_section(ctx: ReportContext) -> Section | None:
    table = ctx.summary
    if table.empty or "max_abs_diff" not in table.columns:
        return None
    caught = table["error"].astype(str).str.contains("not equivalent", regex=False)
    if not (table["max_abs_diff"].astype(float).notna().any() or caught.any()):
        return None
    table = ordered(_strategy_table(ctx))
    known = {r["_label"]: _flag(r["exact"]) for _, r in table.iterrows() if _flag(r["exact"]) is not None}
    labels = dict(zip(table["key"], table["_label"]))
    header = ["configuration", "world size", "exact or lossy", "max |difference|", "verdict", "check steps"]
    rows, classes = [], []
    borrowed = False
    for _, r in table.iterrows():
        exact = _is_exact(r, known)
        verdict, bad = _verdict(r, exact)
        diff = float(r["max_abs_diff"]) if r["max_abs_diff"] is not None else math.nan
        steps = num(r["check_steps"], ".0f")
        by = r.get("checked_in_job")
        if isinstance(by, str) and r["status"] == "ok":  # another job's check stands for this one's
            borrowed = True
            other = labels.get(by, by)
            verdict = (html("{{ v }} (checked by {{ o }})", v=verdict, o=other) if not math.isnan(diff)
                       else html("checked by {{ o }}", o=other))
            steps = html("{{ s }} (in {{ o }})", s=steps, o=other)
        rows.append([r["_label"], r["world_size"],
                     DASH if exact is None else ("exact" if exact else "lossy"),
                     "0" if diff == 0 else num(diff, ".2e"), verdict, steps])
        classes.append("bad" if bad else "")
    steps = list(table[STEP_MS])
    return Section(
        "Equivalence with single-process training",
        html('<p class="what">Does each strategy train the same model as one process would? After the timed steps '
        "every job trains a fresh model for <em>check steps</em> optimizer steps and compares its parameters "
        "with single-process training on the same global batches (same seed; each step the concatenation of "
        "every rank&rsquo;s batch); the table gives the largest absolute difference of any parameter.</p>"
        '<p class="note"><em>Exact</em> strategies must match up to float rounding (<em>matches</em>: at most '
        "{{ match }}); one that differs by more than the check&rsquo;s tolerance fails its job as "
        "<strong>NOT equivalent</strong>. <em>Lossy</em> ones by design (DDP&rsquo;s fp16, bf16 and PowerSGD "
        "hooks, local SGD) show how far they drift. Jobs that compute in bf16 or fp16 (<code>precision</code>) "
        "are lossy by design too, set against fp32 single-process training: an exact strategy among them "
        "fails only beyond its precision&rsquo;s machine epsilon (bf16 7.8e-3, fp16 9.8e-4).</p>"
        "{% if borrowed %}<p class=\"note\"><em>checked by</em>: a job that differs from an earlier job of its "
        "sweep only in what does not change the check (the bucket size of DDP&rsquo;s built-in all-reduce, which "
        "groups the same elementwise averages differently; the timed steps and repeats) does not run it again: "
        "the earlier job&rsquo;s check, at the same world size, model, data, precision and strategy settings, "
        "stands for it, and its figures are shown.</p>{% endif %}\n{{ table }}",
        match=f"{MATCH_DIFF:g}", borrowed=borrowed, table=job_table(ctx, "equivalence", header, rows,
                                                                   steps, classes, numeric={1, 3, 5})))
