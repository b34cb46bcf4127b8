"""The checks: each quoted sentence set against the figures re-derived from the stored records.

* **figure** -- every number a sentence quotes (ms, x, %, MB, TFLOP/s, serial fraction, bucket counts,
  world sizes, launch counts, "measured N times") must be, at the precision it is written with, a
  re-derived figure of that unit -- and of the kind its words say ("% parallel efficiency", "% of
  each step", "% faster", "x the throughput of one rank": :func:`family`) -- of the job(s) the
  sentence is about: its job key (with that job's world-size-1 baseline, the jobs that differ from
  it in one setting and those that ran its fix), else the jobs it names by model label, per-rank
  batch, world size, link and strategy.
* **arithmetic** -- a share quoted beside its parts ("27 % of each step (23.4 ms of 86.1 ms)")
  is their quotient, a spread ("(110.3 to 111.4 ms) differ by 1 %") its ends' ratio, within their
  rounding.
* **interval** -- a quoted 95 % interval must hold its point (low <= point <= high) and, where
  the point is a figure with a re-derived interval, *be* that interval at the precision quoted:
  each end within half a last digit of the re-derived end. The intervals are those
  docs/statistics.md defines, re-implemented in :mod:`.figures` from that text: a job's mean step
  (:func:`~.figures.mean_interval`), speedup, efficiency and serial fraction (the ratio of the
  baselines' mean step over the job's, :func:`~.figures.ratio_interval`), a step ratio, change or
  gain between two jobs or two sets of pooled jobs (the same, and its paired variant where the two
  ran in the same rounds: either passes), and the exposed communication time and share
  (:func:`~.figures.mean_difference_interval`, a plain t over the per-launch differences). Every
  interval the diagnosis and the verdict quote is one of these, so none is held to mere containment
  any more; an interval whose point is no figure with a re-derived interval is held only to holding
  its point.
* **direction** (:mod:`.directions`) -- "N % faster/slower than", "faster/slower: Nx the
  throughput", "slower than ...: +N %", "computes N % slower than the other ranks", "rises/falls
  from A to B", each against the figures.
* **comparison** (:mod:`.comparisons`) -- "Nx as fast as OTHER (95 % CI ax to bx)" and "costs Nx as
  much per sample as OTHER" against the records of the two settings the words name (a wrong side of
  1 is a ``direction`` problem, a wrong size a ``figure`` one, a wrong interval an ``interval`` one);
  **retired** -- "N % faster/slower than" between two settings, and a fix's run said "N % faster".
* **basis** -- a sentence that says its fix was measured ("measured to recover", "the sweep
  measured", "it recovered") names a fix the sweep ran: a stored ok job identical to the sentence's
  job but for the fix's fields, at their values; for ``bucket_cap_mb`` one whose *recorded* bucket
  layout is the layout a job of this model recorded at the proposed cap. A sentence that says
  "estimated" or "did not run" names a fix the sweep did not run.
* **contradicted** -- a proposed fix the sweep ran and measured slower (the Welch interval of the
  step ratio lies above 1; with one launch a side, more than 5 % slower).
* **significance** (:mod:`.words`) -- "significant" or "not significant" against the quoted
  interval nearest to the word: it must exclude, or include, no change; **band** -- "scales
  well", "scales moderately to well", "cannot tell how it scales" against the quoted efficiency
  interval (docs/reading-the-report.md's bands); **slowdown** -- a band word beside a speedup whose
  whole interval is below 1, "slows down" beside one above 1; **bound** -- compute- or communication-bound, or
  "cannot tell" which, against the quoted exposed communication interval.
* **efficiency** -- an efficiency above 100 % that no sentence flags, or a scaling verdict that
  quotes one; **statistic** -- a median quoted as the step time; **job** -- a sentence whose job
  key is not a stored job, that names another model, strategy, world size or bucket cap than its
  job's, quotes another job's step as its own, or names a model and batch no stored job has;
  **name** (:mod:`.names`, across the page) -- one named quantity of one job quoted with two values.

Not checked: sentences of the cost model (``kind`` "projection" or "model", or saying "Projected"
or "cost model"): model output, said so; a cause model's estimate of what a fix would recover
(held to its own sentence: :func:`with_estimates`); numbers said to be approximate ("about 5 ms")
or power calculations (:mod:`.parse`).
"""

from __future__ import annotations

import math
import re

import numpy as np

from ddpbench.audit import parse
from ddpbench.audit.budget import COMM, CONTENTION, DATA, OVERHEAD, RESIDUAL, STRAGGLER, SYNC_COMPUTE, check_named_rule
from ddpbench.audit.choices import CHOICE_FIGURE, check_choice, check_gain_low
from ddpbench.audit.comparisons import check_comparisons
from ddpbench.audit.directions import check_directions
from ddpbench.audit.figures import FIELDS, MEASURED_HOW, Figures, ratio_interval
from ddpbench.audit.lookup import Pool
from ddpbench.audit.names import check_names, named_jobs, one_job
from ddpbench.audit.pool import DATASHEET_PEAK, GEMM_PEAK, NAMED_ONLY, label_pattern
from ddpbench.audit.problem import Claim, Problem
from ddpbench.audit.words import (
    check_bands,
    check_bound,
    check_cause,
    check_differ,
    check_significance,
    check_slowdown,
    check_trend,
)

SINGLE_LAUNCH_MARGIN = 0.05
MODEL_KINDS = ("projection", "model")


def is_model_output(claim: Claim) -> bool:
    return claim.kind in MODEL_KINDS or bool(re.search(r"Projected|cost model|model output", claim.text))


def unmatched(fig: Figures, text: str) -> str:
    """What ``text`` names that no stored ok job is (a model label with a per-rank batch or a bucket
    cap no job of that model ran); "" when every name is a stored job's."""
    ok = fig.ok()
    labels = [name for name in ok["label"].unique() if label_pattern(name).search(text)]
    batch = re.search(r"batch (\d+)/rank", text)
    for label in labels:
        mine = ok[ok["label"] == label]
        m = re.search(rf"{re.escape(label)} \(batch (\d+)/rank\)", text)
        if m and not (mine["per_rank_batch"] == int(m.group(1))).any():
            return f"no stored job trains {label} with batch {m.group(1)}/rank"
    if labels and batch and not ok[ok["label"].isin(labels)]["per_rank_batch"].eq(int(batch.group(1))).any():
        return f"no stored job of {', '.join(labels)} has batch {batch.group(1)}/rank"
    caps = {float(n) for n in re.findall(r"\(bucket (\d+(?:\.\d+)?) MB", text)}
    if labels and caps and not caps <= set(ok[ok["label"].isin(labels)]["bucket_cap_mb"].astype(float)):
        return f"no stored job of {', '.join(labels)} ran bucket {', '.join(f'{c:g}' for c in sorted(caps))} MB"
    return ""


#: settings that together say how a job computes (numerics): a twin that differs in both differs once
NUMERICS = ("precision", "compile")


def near_jobs(fig: Figures, key, fields: int = 1, fix: dict | None = None) -> list:
    """``key``, the ok jobs that differ from it in at most ``fields`` settings (precision and compile
    counting as one), the jobs that ran its fix, and the baselines of all of them."""
    mine, ok, settings = fig.jobs.loc[key], fig.ok(), fig.ok_settings()
    columns = [c for c in FIELDS if c not in MEASURED_HOW and c not in NUMERICS]
    differ = sum((settings[c] != str(mine[c])).astype(int) for c in columns)
    differ = differ + (sum((settings[c] != str(mine[c])).astype(int) for c in NUMERICS) > 0).astype(int)
    every = fig.ok_keys()
    keys = [key, *[every[i] for i in np.flatnonzero(np.asarray(differ <= fields)).tolist() if every[i] != key]]
    if fix:  # the fix's runs, also beside other settings that changed with it (DDP at its own cap)
        fixed = ok[differ <= fields + len(fix)]
        for name, value in fix.items():
            fixed = fixed[fixed[name].astype(str) == str(value)] if name in fixed else fixed.iloc[0:0]
        keys = list(dict.fromkeys([*keys, *run_twins(fig, key, fix), *fixed.index]))
    bases = fig.baselines_of([fig.position(k) for k in keys if fig.is_ok(k)])
    return list(dict.fromkeys([*keys, *bases]))


def about(fig: Figures, claim: Claim) -> list:
    if claim.job is not None and claim.job in fig.jobs.index:
        return near_jobs(fig, claim.job, fix=claim.fix_fields)
    return named_jobs(fig, claim.text)


#: the words around a number that say which kind of figure of its unit it is (pool.Entry.family)
FAMILY_AFTER = {"%": [(r"^ ?% parallel efficiency", "efficiency"),
                      # the barrier's rank: "last ... in 75 % of the steps, 0.4 ms after the others' mean (6 % of the
                      # mean step)"
                      (r"^ ?% of the steps, ", "last share"), (r"^ ?% of the mean step\)", "late share"),
                      (r"^ ?% of (?:each |the |a |its )?step", "share"),
                      (r"^ ?% of the GEMM peak", GEMM_PEAK), (r"^ ?% of the datasheet peak", DATASHEET_PEAK),
                      (r"^ ?% of (?:the |its |what was )?(?:loss|lost)", "loss"),
                      (r"^ ?% (?:faster|slower) than the other ranks", STRAGGLER),
                      (r"^ ?% (?:faster|slower|more|less|cheaper|dearer)\b", "change")],
                "x": [(r"^x the throughput of one rank", "speedup"), (r"^x (?:the|its) throughput", "throughput"),
                      # the answer table's scaling row: "0.96x in ws=2 bucket 1 MB, 48 % parallel efficiency"
                      (r"^x in [^,;]*\bws=\d+", "speedup"),
                      (r"^x (?:\S+ )?step time", "step")],
                "ms": [(r"^ ?ms lost\b", "loss"), (r"^ ?ms a step receiving\b", "comm phase"),
                       (r"^ ?ms after the others' mean", "lateness")]}
FAMILY_BEFORE = {"%": [(r"launch-to-launch spread (?:of )?$", "spread"), (r"efficiency (?:is |of )?$", "efficiency"),
                       (r"differ by $", "change"),
                       (r"ms step \($", "share"), (r"a step \($", "share"),
                       # the verdict's lost-time line: "compute slowed by sharing 4.2 ms (9 %": of the loss
                       (r"(?:sharing|beside it|communication|grew|rank|framework) [-+]?\d+(?:\.\d+)? ms \($", "loss")],
                # the loss budget's lines, named by the words only they use (pool.budget_figures)
                "ms": [(r"(?:slowed by sharing|compute ran) $", CONTENTION),
                       (r"(?:beside it|slowed it by another) $", SYNC_COMPUTE), (r"budget counts $", COMM),
                       (r"data wait that grew $", DATA),
                       (r"(?:waiting for the slowest rank|the ranks waited) $", STRAGGLER),
                       (r"optimizer and framework $", OVERHEAD), (r"residual $", RESIDUAL),
                       (r"the baseline's $", "baseline")],
                # a rank's traffic: "Rank 0 moves 161 MB per step, the median rank 54 MB (3.0x)"
                "MB": [(r"\bmoves $", "traffic max"), (r"the median rank $", "traffic median")],
                "x": [(r"MB \($", "traffic")]}


#: the kinds of figure a sentence about one job (its key given) quotes of that job alone
OWN_FAMILIES = ("speedup", "efficiency", "last share", "late share", "lateness")


def family(text: str, q) -> str:
    """The kind of figure ``q`` is, from the words right after and before it ("" when they do not say)."""
    after, before = text[q.end:q.end + 40], text[max(0, q.start - 30):q.start]
    for pattern, name in FAMILY_AFTER.get(q.unit, []):
        if re.search(pattern, after):
            return name
    for pattern, name in FAMILY_BEFORE.get(q.unit, []):
        if re.search(pattern, before):
            return name
    return ""


#: a cause model's estimate of what a fix would recover, stated as such: "estimated (a model, not run)
#: to recover 34.6 ms", "the buckets cause (34.6 ms)", "explains 34.6 ms of it"
ESTIMATE = re.compile(rf"(?:estimated (?:\(a model, not run\) )?to recover|cause \(|explains) ({parse.NUMBER})")


def with_estimates(claim: Claim, pool: Pool) -> Pool:
    """``pool`` with what a sentence may say of the estimates it states: a model's estimate is not in
    the records, so it is held to its own sentence -- its share of the step (and of the exposed
    communication) and what it leaves of the exposed communication must follow from it -- and the
    fix's own settings (``bucket_cap_mb = 1``: 1 MB)."""
    estimates = [(float(v), 0.5 * 10 ** -parse.digits(v)) for v in ESTIMATE.findall(claim.text)]
    fixed = [v for k, v in (claim.fix_fields or {}).items() if k == "bucket_cap_mb"]
    if not estimates and not fixed:
        return pool
    return pool.stating(estimates, fixed)


def _reach(q) -> float:
    """How far from ``q`` a figure may lie and still be ``q`` written at its precision (a little more:
    :meth:`.parse.Number.matches` decides)."""
    return (0.5 * 10 ** -q.digits * (1 + 1e-6) + 1e-9) * (1 + 1e-9) + 1e-12


def check_figures(fig: Figures, claim: Claim, pool: Pool, quoted, judged=frozenset()) -> list[Problem]:
    """Every number ``quoted`` against the pool of re-derived figures of its unit and kind; ``judged``: where
    the comparisons :func:`.comparisons.check_comparisons` held to the two settings they name start."""
    out = []
    bounds = {id(q) for i in parse.intervals(claim.text, quoted) for q in (i.low, i.high)}
    for q in quoted:
        if id(q) in bounds:
            continue
        if q.start in judged:
            continue  # held to the two settings it names: check_comparisons
        kind = family(claim.text, q)
        accepted = {kind, "speedup"} if kind == "throughput" else {kind}
        own = claim.job is not None and kind in OWN_FAMILIES  # a job's own speedup, never a neighbour's

        def accept(e, kind=kind, accepted=accepted, own=own):
            return (e.family in accepted if kind else e.family not in NAMED_ONLY) and (not own or claim.job in e.name)

        if not any(accept(e) and q.matches(e.value, e.slack) for e in pool.near(q.unit, q.value, _reach(q))):
            near = pool.nearest(q.unit, q.value, accept)
            hint = f"; nearest {near.name} = {near.value:.{q.digits + 1}f}" if near else ""
            out.append(Problem("figure", claim.job, claim.text,
                               f"{q.text} {q.unit} is no re-derived figure of the jobs it is about{hint}"))
    return out


N_ = parse.NUMBER
#: "A of B ms a step (C %)" and "C % of each step (A ms of B ms)": C must be A over B
SHARE_AFTER = re.compile(rf"({N_})(?: ms)? of (?:a |the |each )?({N_}) ms(?: a)?(?: step)? \(({N_}) ?%")
SHARE_BEFORE = re.compile(rf"({N_}) ?% of (?:each|the|a) step \(({N_})(?: ms)? of ({N_}) ms")


#: "(110.3 to 111.4 ms) differ by 1 %": the spread of a range is its ends' ratio
SPREAD = re.compile(rf"\(({N_}) to ({N_}) ms\) differ by ({N_}) ?%")
#: "1.64x DDP's step time (58.1 vs 35.5 ms)": a ratio quoted beside its terms
RATIO = re.compile(rf"({N_})x (?:\S+ )?step time \(({N_}) vs ({N_}) ms\)")
#: "114.3 ms a step (mean) against this job's 157.2 ms, 27.2 % faster": a fix's change, |1 - fix / job|
CHANGE = re.compile(rf"({N_}) ms a step \(mean\) against this job's ({N_}) ms(?: \([^)]*\))?, ({N_}) ?% "
                    r"(faster|slower)")


def check_arithmetic(fig: Figures, claim: Claim) -> list[Problem]:
    """A share a sentence quotes beside its parts is their quotient, within their rounding; in a
    sentence about one job, the step it is a share of is that job's own mean step."""
    out = []
    found = [(m.group(1), m.group(2), m.group(3)) for m in SHARE_AFTER.finditer(claim.text)]
    found += [(m.group(2), m.group(3), m.group(1)) for m in SHARE_BEFORE.finditer(claim.text)]
    for m in SPREAD.finditer(claim.text):
        a, b, c = float(m.group(1)), float(m.group(2)), float(m.group(3))
        da, db, dc = (0.5 * 10 ** -parse.digits(m.group(g)) for g in (1, 2, 3))
        if a > 0 and not (100 * ((b - db) / (a + da) - 1) - dc - 1e-9 <= c <= 100 * ((b + db) / max(a - da, 1e-9) - 1)
                          + dc + 1e-9):
            out.append(Problem("arithmetic", claim.job, claim.text,
                               f"{m.group(1)} to {m.group(2)} ms differ by {100 * (b / a - 1):.1f} %, "
                               f"not {m.group(3)} %"))
    for m in RATIO.finditer(claim.text):
        x, a, b = float(m.group(1)), float(m.group(2)), float(m.group(3))
        dx, da, db = (0.5 * 10 ** -parse.digits(m.group(g)) for g in (1, 2, 3))
        if b > 0 and not ((a - da) / (b + db) - dx - 1e-9 <= x <= (a + da) / max(b - db, 1e-9) + dx + 1e-9):
            out.append(Problem("arithmetic", claim.job, claim.text,
                               f"{m.group(2)} vs {m.group(3)} ms is {a / b:.2f}x, not {m.group(1)}x"))
    for m in CHANGE.finditer(claim.text):
        a, b, c = float(m.group(1)), float(m.group(2)), float(m.group(3))
        da, db, dc = (0.5 * 10 ** -parse.digits(m.group(g)) for g in (1, 2, 3))
        ends = [100 * abs(1 - (a + x) / (b + y)) for x in (-da, da) for y in (-db, db) if b + y > 0]
        if ends and not min(ends) - dc - 1e-9 <= c <= max(ends) + dc + 1e-9:
            out.append(Problem("arithmetic", claim.job, claim.text, f"{m.group(1)} against {m.group(2)} ms is "
                               f"{100 * abs(1 - a / b):.1f} % {m.group(4)}, not {m.group(3)} %"))
    for part, whole, share in found:
        a, b, c = float(part), float(whole), float(share)
        da, db, dc = (0.5 * 10 ** -parse.digits(x) for x in (part, whole, share))
        if claim.job in fig.jobs.index:
            r = fig.rec(claim.job)
            if not any(abs(r.get(c_, math.nan) - b) <= db + 1e-9 for c_ in ("step_ms", "step_ms_pooled")):
                out.append(Problem("job", claim.job, claim.text, f"{whole} ms is not the step of job {claim.job} "
                                   f"({r.get('step_ms', math.nan):.1f} ms)"))
        if b <= 0 or a != a or (a < 0 and c == 0):  # a negative part is said as none of it
            continue
        low, high = 100 * (a - da) / (b + db), 100 * (a + da) / max(b - db, 1e-9)
        if not low - dc - 1e-9 <= c <= high + dc + 1e-9:
            out.append(Problem("arithmetic", claim.job, claim.text,
                               f"{share} % is not {part} of {whole} ms ({100 * a / b:.1f} %)"))
    return out


#: "trains 1,000,000 samples within 24 h": a setting said to meet a deadline
DEADLINE = re.compile(rf"trains [\d,]+ samples within ({N_}) h")


def check_deadline(fig: Figures, claim: Claim, keys) -> list[Problem]:
    """A job said to train its run within a deadline does so by the whole interval of its hours."""
    out = []
    for m in DEADLINE.finditer(claim.text):
        limit = float(m.group(1))
        # the job said to meet it is the one named right before "trains" (its world size, where the
        # sentence's jobs differ in it)
        named = re.findall(r"\bws=(\d+)", claim.text[:m.start()])
        mine = [k for k in keys if not named or int(fig.rec(k)["world_size"]) == int(named[-1])]
        for k in mine:
            high = fig.rec(k).get("hours_high", math.nan)
            if not high <= limit:
                out.append(Problem("deadline", k, claim.text, f"its hours reach {high:.3g} by their interval's high "
                                   f"end, not within {m.group(1)} h"))
    return out


def check_intervals(fig: Figures, claim: Claim, pool: Pool, quoted, judged=frozenset()) -> list[Problem]:
    out = []
    for i in parse.intervals(claim.text, quoted):
        if i.point.start in judged:
            continue  # a comparison's interval is the two settings' it names: check_comparisons
        digit = 0.5 * 10 ** -max(i.low.digits, i.high.digits) + 1e-9
        # "31.1 % faster (95 % CI of the change -47.4 % to -13.7 %)": the point may be quoted unsigned
        points = [p for p in (i.point.value, -i.point.value) if i.low.value - digit <= p <= i.high.value + digit]
        if not points:
            out.append(Problem("interval", claim.job, claim.text,
                               f"{i.low.text} to {i.high.text} does not hold its point {i.point.text}"))
            continue
        owners = list({id(e): e for q in (i.held or (i.point,)) for p in (q.value, -q.value)
                       if i.low.value - digit <= p <= i.high.value + digit
                       for e in pool.near(q.unit, p, _reach(q))
                       if not math.isnan(e.low) and abs(e.value - p) <= 0.5 * 10 ** -q.digits + 1e-9}.values())
        # its ends must be the re-derived interval's at the precision quoted (half a last digit)
        if owners and not any(i.low.matches(e.low) and i.high.matches(e.high) for e in owners):
            e = owners[0]
            out.append(Problem("interval", claim.job, claim.text,
                               f"{i.low.text} to {i.high.text} is not the 95 % interval of the launches "
                               f"({e.low:.{i.low.digits + 1}f} to {e.high:.{i.high.digits + 1}f}, {e.name})"))
    return out


def run_twins(fig: Figures, key, fields: dict) -> list:
    """Ok jobs identical to ``key`` but for ``fields``, run at the fields' values (a bucket cap by the
    recorded layout: a twin whose buckets are those a job of this model recorded at that cap)."""
    twins = fig.twins(key, tuple(fields))
    for name, value in fields.items():
        if name not in twins.columns:
            return []
        if name == "bucket_cap_mb":
            alike = fig.twins(key, ("bucket_cap_mb", "world_size", "threads_per_rank", "backend", "emulate_nodes",
                                    "link", "link_delay_ms"))
            alike = alike[np.isclose(alike["bucket_cap_mb"].astype(float), float(value))]
            layouts = {layout for layout in alike["layout"] if isinstance(layout, tuple)}
            if fig.jobs.at[key, "bucket_cap_mb"] == value and isinstance(fig.jobs.at[key, "layout"], tuple):
                layouts.add(fig.jobs.at[key, "layout"])
            twins = twins[twins["layout"].map(layouts.__contains__)]
        else:
            twins = twins[twins[name].astype(str) == str(value)]
    return list(twins.index)


def check_basis(fig: Figures, claim: Claim) -> list[Problem]:
    text, out = claim.text, []
    measured = bool(parse.MEASURED_WORDS.search(text))
    estimated = bool(re.search(r"estimated (?:\(a model, not run\) )?to recover|did not run this fix|"
                               r"a model estimate", text))
    if not (measured or estimated) or claim.job not in fig.jobs.index:
        return out
    ran = run_twins(fig, claim.job, claim.fix_fields) if claim.fix_fields else []
    if measured and not ran:
        out.append(Problem("basis", claim.job, text, f"says measured, but no stored job ran the fix "
                           f"{claim.fix_fields or '(no setting named)'}"))
    if estimated and ran:
        out.append(Problem("basis", claim.job, text, f"says estimated / not run, but the sweep ran "
                           f"{claim.fix_fields}: {', '.join(ran)}"))
    return out


def check_contradicted(fig: Figures, claim: Claim) -> list[Problem]:
    if not claim.fix_fields or claim.job not in fig.jobs.index or fig.jobs.at[claim.job, "status"] != "ok":
        return []
    if re.search(r"not proposed", claim.text):
        return []
    ran = run_twins(fig, claim.job, claim.fix_fields)
    mine = fig.launch_ms.get(claim.job, [])
    theirs = [t for k in ran for t in fig.launch_ms.get(k, [])]
    if not mine or not theirs:
        return []
    ratio = float(np.mean(theirs) / np.mean(mine))
    low, _ = ratio_interval(theirs, mine)
    if (low > 1) if not math.isnan(low) else ratio > 1 + SINGLE_LAUNCH_MARGIN:
        return [Problem("contradicted", claim.job, claim.text, f"proposes {claim.fix_fields}, which the sweep "
                        f"measured {100 * (ratio - 1):.1f} % slower ({', '.join(ran)})")]
    return []


def check_efficiency(fig: Figures, claims) -> list[Problem]:
    out = []
    for c in claims:
        if re.search(r"scales (?:well|moderately|poorly)", c.text):
            for quoted in re.findall(r"(\d+) % parallel efficiency", c.text):
                if int(quoted) > 100:
                    out.append(Problem("efficiency", c.job, c.text, f"a scaling verdict quotes {quoted} % (> 100 %)"))
    flags = [c.text for c in claims if re.search(r"above 100 %|broken baseline|No scaling verdict", c.text)]
    ok = fig.ok()
    for key, r in ok[(ok["world_size"] > 1) & (ok["efficiency_pct"] > 100)].iterrows():
        if not any(f"{r['speedup']:.2f}x" in t for t in flags):
            out.append(Problem("efficiency", key, "-", f"efficiency {r['efficiency_pct']:.0f} % at world size "
                               f"{int(r['world_size'])} is flagged by no sentence"))
    return out


def job_named(fig: Figures, claim: Claim) -> list[Problem]:
    """A sentence about one job names that job: its model label (where it names a stored one), its
    strategy (where it names one of the folder's), its world size (where it names one)."""
    r, text, out = fig.rec(claim.job), claim.text, []
    labels = [name for name in fig.jobs["label"].unique() if label_pattern(name).search(text)]
    if labels and not label_pattern(r["label"]).search(text):
        out.append(f"names {labels[0]}, but job {claim.job} trained {r['label']}")
    strategies = {str(s) for s in fig.jobs["strategy"].unique()}
    said = [s for s in strategies if re.search(rf"(?<![\w-]){re.escape(s)}(?![\w-])", text, re.IGNORECASE)]
    # the search ignores case: where a name differing from the job's strategy in case alone is said, the job's own is
    # said too, and found here
    if said and not any(str(r["strategy"]) in s or s in str(r["strategy"]) for s in said):
        out.append(f"names {said[0]}, but job {claim.job} ran {r['strategy']}")
    caps = {float(n) for n in re.findall(r"\bbucket (\d+(?:\.\d+)?) MB", text)}
    if len(caps) == 1 and float(r["bucket_cap_mb"]) not in caps:
        out.append(f"names bucket {caps.pop():g} MB, but job {claim.job} ran {float(r['bucket_cap_mb']):g} MB")
    sizes = {int(n) for n in re.findall(r"(?:world size |ws=)(\d+)(?! to)", text)}
    if sizes and int(r["world_size"]) not in sizes:
        out.append(f"names world size {', '.join(map(str, sorted(sizes)))}, but job {claim.job} ran at "
                   f"{int(r['world_size'])}")
    return [Problem("job", claim.job, text, what) for what in out]


def check_claim(fig: Figures, claim: Claim) -> list[Problem]:
    """Every problem of one sentence (see the module doc)."""
    claim = Claim.of(claim)
    out = []
    if re.search(r"\bmedian step", claim.text):
        out.append(Problem("statistic", claim.job, claim.text, "quotes a median as the step time; the mean step is "
                           "the step time"))
    if claim.job is not None and claim.job not in fig.jobs.index:
        return out + [Problem("job", claim.job, claim.text, "no stored job has this key")]
    if claim.job is not None:
        out += job_named(fig, claim)
    elif not is_model_output(claim) and unmatched(fig, claim.text):
        out.append(Problem("job", None, claim.text, unmatched(fig, claim.text)))
    if is_model_output(claim) or fig.ok().empty:  # a model's output; or no job finished: nothing measured to hold it to
        return out
    keys = about(fig, claim)
    if claim.job in fig.jobs.index and claim.fix_fields:  # "the sweep measured strategy = ddp: 89.7 ms a step"
        keys = list(dict.fromkeys([*keys, *run_twins(fig, claim.job, claim.fix_fields)]))
    if claim.kind in CHOICE_FIGURE:  # the fastest (cheapest) line compares its job with the runner-up it names
        keys = list(dict.fromkeys([*keys, *named_jobs(fig, claim.text)]))
    labels = list(fig.jobs["label"].unique())
    quoted = parse.numbers(claim.text, labels, fig.currency)
    pool = with_estimates(claim, Pool(fig, keys))
    fixed = run_twins(fig, claim.job, claim.fix_fields) if claim.fix_fields and claim.job in fig.ok().index else []
    compared, judged = check_comparisons(fig, claim, keys, quoted, fixed)
    out += check_figures(fig, claim, pool, quoted, judged)
    out += check_intervals(fig, claim, pool, quoted, judged)
    out += check_arithmetic(fig, claim)
    out += check_deadline(fig, claim, keys)
    out += check_directions(fig, claim, keys)
    out += compared
    out += check_basis(fig, claim)
    out += check_contradicted(fig, claim)
    out += check_significance(claim, quoted)
    out += check_bands(claim) + check_slowdown(claim)
    out += check_bound(claim)
    out += check_differ(claim) + check_trend(claim) + check_cause(claim)
    out += check_gain_low(fig, claim) + check_choice(fig, claim) + check_named_rule(claim)
    return out


def check(fig: Figures, claims) -> list[Problem]:
    """Every problem of ``claims`` (sentences as :class:`Claim`, dicts, tuples or strings) against
    ``fig``; [] when every figure, interval, direction and basis they quote holds."""
    claims = [Claim.of(c) for c in claims]
    out = [p for c in claims for p in check_claim(fig, c)]
    said = [(c, one_job(fig, c)) for c in claims if not is_model_output(c)]
    return out + check_efficiency(fig, claims) + check_names(said)
