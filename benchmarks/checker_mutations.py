"""How much does the independent checker (:mod:`ddpbench.audit`) catch? A mutation benchmark over
the real verdict and diagnosis of every committed example folder (``reports/examples/*/`` with a
results.jsonl).

    python benchmarks/checker_mutations.py [--per-kind 150] [--seed 0] [--folder reports/examples/quick-cpu ...]
                                           [--held-out] [--out reports/examples/checker-cpu/mutations.md]

``--held-out`` scores the folders of ``reports/examples/checker-cpu/held-out-3/`` alone, swept
after every check was frozen (commit 7b3fc81); the default leaves them out. The earlier
``held-out/`` and ``held-out-2/`` folders were held out of the checks of their day, then read while
later checks were written (held-out-2 drew the barrier rule's fix): they are tuning data now, scored
with the rest by default.

It first checks every folder's unmutated sentences (false reports: should be 0), then applies
mutations, each to one sentence, checked alone against its folder's records. What a sentence claims
is read by a grammar of this file's own, written from the report's wording (docs/reading-the-report.md),
not with the checker's parser: a figure is a number with its unit (ms, x, %, MB, samples/s), or one
written before the unit of the figure it runs to ("8.0 ms of 18.4 ms"); not a figure are confidence
levels, a job's settings and name, the report's fixed lines and thresholds, what more launches would
detect and the spread it assumes, a noise floor, and what is said to be approximate.

  number     one quoted figure (ms, x, %, MB, serial fraction) scaled by a realistic factor
             (0.5 to 1.5, never 1), written at its own precision;
  interval   the same, to one end of a quoted 95 % interval, or an end said in words ("at least
             28.8 ms by the lower end", "reaches down to 2.4 ms");
  job        the job the sentence is about swapped for another job of the same folder (its key, or
             the model label it names);
  direction  one faster <-> slower or rises <-> falls where it compares measurements ("5.3 % faster",
             "slower than", "slower: 0.16x", "rises from"), not a descriptive one ("a faster link") nor a
             question ("whether it runs faster"); a speedup between two settings turned over ("1.04x as
             fast as" -> "0.962x as fast as");
  basis      measured <-> estimated ("measured to recover" <-> "estimated (a model, not run) to
             recover", "estimated to recover" -> "measured to recover");
  significance  one "significant" <-> "not significant" where the sentence quotes a 95 % interval
             (the word a reader acts on: ": significant)" -> ": not significant)"), or an interval's
             own "includes 0" <-> "excludes 0";
  band       one scaling band phrase ("scales moderately", "scales moderately to well", "slows
             down") replaced by another drawn from the six the report can write;
  bound      "is communication-bound" <-> "is compute-bound", and "cannot tell whether it is
             compute- or communication-bound" -> "it is communication-bound" or "... compute-bound";
  cause      the verdict's top cause named <-> "cannot tell: the likeliest is ..." (its gain's lower
             end decides);
  choice     the fastest (cheapest) line's job swapped for another setting of the same model;
  cannot tell  a call made "cannot tell", or "cannot tell" made a call: "cannot tell how it scales"
             (or "whether it runs faster than one rank") <-> a band or "slows down", "any of these
             bucket sizes will do" <-> "cannot tell whether they differ", ": significant)" -> ": cannot
             tell whether they differ)", the serial fraction "goes from ...: cannot tell whether it
             rises, falls or stays" <-> "rises from" / "falls from".

A mutation that leaves a still-true sentence is counted apart, not scored: a number scaled onto
another figure the same sentence quotes in that unit (at its precision), a job swapped for one
whose figures the sentence states equally (its text, with the new job's key, is what the
diagnosis says of that job). Sentences of the cost model (projections) are out of the checker's
scope and are not mutated; their count is printed. Prints the score per kind and over all kinds
(``--out``: writes that table, with the command, to a markdown file); exit 1 when the score over
all kinds falls below ``--target`` (95 %), or on any false report.
"""

from __future__ import annotations

import argparse
import math
import random
import re
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

from ddpbench.audit.checks import Claim, check, check_claim
from ddpbench.audit.figures import derive

#: the first line of the table it writes, before the command that wrote it
HEADER = "<!-- written by: "

sys.path.insert(0, str(Path(__file__).resolve().parent))
from written import check_out, write_out  # noqa: E402  (a sibling module)

ROOT = Path(__file__).resolve().parent.parent

FACTORS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.05, 1.1, 1.15, 1.2, 1.3, 1.4, 1.5)
FLIPS = {"faster": "slower", "slower": "faster", "rises": "falls", "falls": "rises"}
BASIS = [("estimated (a model, not run) to recover", "measured to recover"),
         ("measured to recover", "estimated (a model, not run) to recover"),
         ("estimated to recover", "measured to recover"),
         ("a model estimate: the sweep did not run this fix", "the sweep ran this fix")]


#: folders swept after every check was frozen (commit 8dde0c5), never read while writing them
HELD_OUT = ROOT / "reports" / "examples" / "checker-cpu" / "held-out-3"


def folders(held_out: bool = False) -> list[Path]:
    """Every committed example folder with results, but the held-out ones; with ``held_out``, those alone."""
    found = sorted(p.parent for p in (ROOT / "reports" / "examples").glob("**/results.jsonl"))
    return [f for f in found if f.is_relative_to(HELD_OUT) == held_out]


def claims_of(folder: Path) -> list[Claim]:
    """The folder's verdict lines, its answer table's rows and its findings, as `report --check` hands them to
    the checker."""
    from ddpbench.analysis.diagnosis.claims import answer_claims, finding_claims, verdict_claims
    from ddpbench.analysis.folder import load

    measured = load(folder)
    findings = measured.findings
    return [Claim.of(c) for c in (*verdict_claims(findings, measured.verdict, measured.summary, measured.choices),
                                  *answer_claims(findings, measured.answers), *finding_claims(findings))]


# -- the grammar: what a sentence of the report can claim, read from its wording (docs/reading-the-report.md,
# docs/diagnosis.md), written apart from the checker (nothing of ddpbench.audit.parse or .pool) ----------------

_N = r"[-+]?\d+(?:\.\d+)?"
#: a figure: a number with the unit it is a figure in
FIGURE = re.compile(rf"(?<![\w.=/-])({_N}) ?(ms|x|%|MB|samples/s)(?![\w/])")
#: a figure written before the unit of the one it runs to: "8.0 ms of 18.4 ms" (A of B), "3.6 to 12.3 ms" (A to B)
FIGURE_BEFORE = re.compile(rf"(?<![\w.=/-])({_N})(?= (?:of a|of|to) {_N} ?(ms|x|%|MB)(?![\w/]))")
#: numbers that are not a job's figures, by the report's wording: confidence levels, a job's settings and name,
#: the report's fixed lines and thresholds, what more launches would detect and the spread it assumes, a noise
#: floor, approximate (model) figures
NOT_CLAIMED = re.compile("|".join((
    r"\d+ % (?:CI|interval)", r"\bws=\d+", r"\bbucket (?:cap )?[\d.]+ MB", r"\bbatch \d+/rank", r"\b\w+ ?= ?[\w.]+",
    r"(?:the default|caps?|sizes?) [\d.]+(?: MB)?(?:, [\d.]+ MB)*", r"^[^:]*?: [\d.]+ MB,",
    r"(?:under|over|above|below|at least|more than|at or above|or more than) \d+ %(?: of (?:the|a|each) \w+)?(?! \()",
    r"a difference of \d+ %(?: or more)?", r"\d+ % or more", r"would detect (?:a difference of |only )?[\d.]+ %",
    r"not the [\d.]+ % needed", r"spread [\d.]+ %", r"noise floor (?:of )?[\d.]+ ms", r"about [\d.]+ ?\w*",
    r"\[[\d., ]+\] MB", r"the \d+ % line",
)))
#: an interval, the way the report quotes one: "(95 % CI 36 % to 58 %)", "95 % CI of the gain 0.5 % to 5.1 %",
#: "the 95 % interval of the gain, -25.5 % to 28.5 %", "(95 % interval -6.4 to +0.9 %"
INTERVAL = re.compile(rf"95 % (?:CI|interval)(?: of the gain)?,? ({_N}) ?(?:ms|x|%|samples/s)? to ({_N})")
#: an interval's end said in words: "at least 28.8 ms by the lower end", "reaches down to 2.4 ms"
END_IN_WORDS = re.compile(rf"(?:at least|reaches down to) ({_N}) ms")


def _blanked(text: str) -> str:
    """``text`` with what the grammar says is not a claimed figure blanked (positions kept)."""
    return NOT_CLAIMED.sub(lambda m: " " * len(m.group()), text)


def figures_in(text: str) -> list[tuple[int, int, str, str]]:
    """The figures a sentence claims: (start, end, number as written, unit), in order."""
    plain, found = _blanked(text), {}
    for pattern in (FIGURE, FIGURE_BEFORE):
        for m in pattern.finditer(plain):
            found.setdefault(m.start(1), (m.start(1), m.end(1), m.group(1), m.group(2)))
    return [found[k] for k in sorted(found)]


def interval_ends(text: str) -> set[int]:
    """Where the ends of the sentence's quoted intervals start."""
    ends = set()
    for m in INTERVAL.finditer(text):
        ends |= {m.start(1), m.start(2)}
    return ends | {m.start(1) for m in END_IN_WORDS.finditer(text)}


def names_job(label: str, text: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(label)}(?![\w-])", text) is not None


def out_of_scope(claim: Claim) -> bool:
    """A sentence of the cost model (a projection: the checker checks measurements, not the model)."""
    return claim.kind in ("projection", "model") or bool(re.search(r"Projected|cost model|model output", claim.text))


def _digits(written: str) -> int:
    return len(written.split(".")[1]) if "." in written else 0


def _fmt(value: float, written: str) -> str:
    text = f"{value:.{_digits(written)}f}"
    return ("+" + text) if written.startswith("+") and value >= 0 else text


def number_mutations(claim: Claim, rng, bounds: bool = False):
    """Point figures (``bounds`` False) or the ends of quoted 95 % intervals (True)."""
    quoted = figures_in(claim.text)
    ends = interval_ends(claim.text)
    for start, end, written, unit in quoted:
        if (start in ends) != bounds:
            continue
        value = float(written)
        for factor in rng.sample(FACTORS, len(FACTORS)):
            new = _fmt(value * factor, written)
            if float(new) != value:
                break
        else:
            continue
        text = claim.text[:start] + new + claim.text[end:]
        # still true: the new number is another figure the sentence quotes in that unit
        same = any(o[0] != start and o[3] == unit and abs(float(o[2]) - float(new)) < 0.5 * 10 ** -_digits(written)
                   + 1e-9 for o in quoted)
        yield Claim(text, claim.job, claim.fix_fields, claim.basis, claim.kind), same, f"{written} -> {new}"


def job_mutations(claim: Claim, fig, rng, truths: set):
    ok = list(fig.ok().index)
    if claim.job is not None:
        others = [k for k in ok if k != claim.job]
        if others:
            new = rng.choice(others)
            yield (Claim(claim.text, new, claim.fix_fields, claim.basis, claim.kind), (claim.text, new) in truths,
                   f"job {claim.job} -> {new}")
        return
    labels = list(dict.fromkeys(fig.ok()["label"]))
    named = [name for name in labels if names_job(name, claim.text)]
    named = [name for name in named if not any(name != o and name in o for o in named)]
    others = [name for name in labels if name not in named and not any(name in n or n in name for n in named)]
    if named and others:
        old, new = named[0], rng.choice(others)
        text = re.sub(rf"(?<![\w.-]){re.escape(old)}(?![\w-])", new.replace("\\", r"\\"), claim.text)
        yield Claim(text, None, claim.fix_fields, claim.basis, claim.kind), (text, None) in truths, f"{old} -> {new}"


#: a direction word that compares measurements: "5.3 % faster", "slower than", "slower: 0.16x",
#: "rises from"; not a descriptive one ("a faster link", "a slower device"), which compares nothing
COMPARING = re.compile(r"(?<=% )(faster|slower)\b|\b(faster|slower)(?= than|:)|\b(rises|falls)(?= from)")


#: a comparison between two settings said as a speedup or a cost ratio: "1.04x as fast as", "costs 0.62x as much"
AS_FAST = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?=x as fast as |x as much per sample as )")
#: a question, not a claim: "cannot tell whether it runs faster than one rank"
ASKED = re.compile(r"whether it runs (?:faster|slower)")


def _turned_over(written: str) -> str:
    """1 / the value, to the three significant figures a speedup is written with."""
    value = 1 / float(written)
    return f"{value:.{max(0, 2 - math.floor(math.log10(value)))}f}"


def direction_mutations(claim: Claim):
    for m in COMPARING.finditer(claim.text):
        if re.search(r"faster or slower|slower or faster", claim.text[max(0, m.start() - 10):m.end() + 10]) \
                or ASKED.search(claim.text, max(0, m.start() - 16), m.end()):
            continue  # "no faster or slower": flipping one word says the same; "whether it runs faster": asks
        text = claim.text[:m.start()] + FLIPS[m.group()] + claim.text[m.end():]
        yield Claim(text, claim.job, claim.fix_fields, claim.basis, claim.kind), False, f"{m.group()} flipped"
    for m in AS_FAST.finditer(claim.text):  # the other way round: the speedup turned over
        new = _turned_over(m.group(1))
        if abs(float(new) - float(m.group(1))) <= 0.5 * 10 ** -_digits(m.group(1)):
            continue  # on 1 as written: turned over, it reads the same
        text = claim.text[:m.start(1)] + new + claim.text[m.end(1):]
        yield Claim(text, claim.job, claim.fix_fields, claim.basis, claim.kind), False, f"{m.group(1)}x -> {new}x"


#: a significance word of a sentence that quotes an interval (found here, not by the checker's own pattern)
SIGNIFICANT = re.compile(r"\b(not )?significant\b")
#: an interval's own word on no change, right after its upper end
ZERO_SAID = re.compile(r"\d %?, (includes|excludes)(?: both)? 0\b")


def significance_mutations(claim: Claim):
    if "95 %" not in claim.text:
        return
    for m in SIGNIFICANT.finditer(claim.text):
        new = "significant" if m.group(1) else "not significant"
        text = claim.text[:m.start()] + new + claim.text[m.end():]
        yield Claim(text, claim.job, claim.fix_fields, claim.basis, claim.kind), False, f"{m.group()!r} -> {new!r}"
    for m in ZERO_SAID.finditer(claim.text):  # "-4.7 % to 5.8 %, includes 0" -> "..., excludes 0"
        new = {"includes": "excludes", "excludes": "includes"}[m.group(1)]
        text = claim.text[:m.start(1)] + new + claim.text[m.end(1):]
        yield Claim(text, claim.job, claim.fix_fields, claim.basis, claim.kind), False, f"{m.group(1)} 0 -> {new} 0"


#: the band phrases a scaling line can carry (drawn here from the report's wording, not the checker's)
BAND_PHRASES = ("scales poorly", "scales moderately", "scales well", "scales poorly to moderately",
                "scales moderately to well", "slows down")
BAND_PHRASE = re.compile(r"scales (?:poorly|moderately|well)(?: to (?:moderately|well))?|slows down")


def band_mutations(claim: Claim, rng):
    m = BAND_PHRASE.search(claim.text)
    if m is None or "parallel efficiency (95 % CI" not in claim.text:
        return
    new = rng.choice([p for p in BAND_PHRASES if p != m.group()])
    text = claim.text[:m.start()] + new + claim.text[m.end():]
    yield Claim(text, claim.job, claim.fix_fields, claim.basis, claim.kind), False, f"{m.group()!r} -> {new!r}"


#: what a line may say of the bound (from the report's wording, not the checker's)
CANNOT_TELL_WHICH = "cannot tell whether it is compute- or communication-bound"


def bound_mutations(claim: Claim, rng):
    text = claim.text
    if "% of each step (" not in text:
        return
    if CANNOT_TELL_WHICH in text:
        new = rng.choice(["it is communication-bound", "it is compute-bound"])
        yield (Claim(text.replace(CANNOT_TELL_WHICH, new, 1), claim.job, claim.fix_fields, claim.basis, claim.kind),
               False, f"cannot tell -> {new!r}")
        return
    for old, new in (("is communication-bound", "is compute-bound"), ("is compute-bound", "is communication-bound")):
        if old in text:
            yield (Claim(text.replace(old, new, 1), claim.job, claim.fix_fields, claim.basis, claim.kind), False,
                   f"{old!r} -> {new!r}")
            return


#: the verdict's top cause names it, or says "cannot tell: the likeliest is ..." (docs/reading-the-report.md,
#: "Causes on the gain's lower end"): where it says what its fix recovers, and that gain's lower end
LIKELIEST = "cannot tell: the likeliest is "
CAUSE_GAIN = re.compile(r"recover [\d.]+ ms of a [\d.]+ ms step .*(?:by the lower end|reaches down to)")


def cause_mutations(claim: Claim):
    """A named top cause made "cannot tell: the likeliest is" it, and the other way round."""
    if claim.kind != "verdict" or not CAUSE_GAIN.search(claim.text):
        return
    if claim.text.startswith(LIKELIEST):
        text, what = claim.text[len(LIKELIEST):], "cannot tell -> named"
    else:
        text, what = LIKELIEST + claim.text, "named -> cannot tell"
    yield Claim(text, claim.job, claim.fix_fields, claim.basis, claim.kind), False, what


#: "cannot tell" and the calls it stands for, each way: (what is said, what a mutation says instead); a call
#: where the launches cannot support one, or "cannot tell" where they clearly can
CALLS = (
    # scaling: a band (or a slowdown), or none
    (re.compile(r"cannot tell how it scales"), ("scales well", "scales moderately", "scales poorly")),
    (re.compile(r"cannot tell whether it runs faster than one rank"), ("scales well", "slows down")),
    (re.compile(r"scales (?:poorly|moderately|well)(?: to (?:moderately|well))?(?=:)"), ("cannot tell how it scales",)),
    (re.compile(r"slows down(?=:)"), ("cannot tell whether it runs faster than one rank",)),
    # two settings: told apart, any will do, or cannot tell
    (re.compile(r"includes both 0 and a difference of 10 %; cannot tell whether they differ"),
     ("includes 0 and rules out a difference of 10 % or more; any of these bucket sizes will do",)),
    (re.compile(r"includes 0 and rules out a difference of 10 % or more; any of these bucket sizes will do"),
     ("includes both 0 and a difference of 10 %; cannot tell whether they differ",)),
    (re.compile(r"(?<=: )significant(?=\))"), ("cannot tell whether they differ",)),
    # Karp-Flatt's e: rises, falls, stays, or cannot tell
    (re.compile(r"goes from"), ("rises from", "falls from")),
    (re.compile(r"(?:rises|falls) from"), ("goes from",)),
)
TREND_UNSURE = ": cannot tell whether it rises, falls or stays"


def cannot_tell_mutations(claim: Claim, rng):
    """One "cannot tell" made a call, or a call made "cannot tell" (:data:`CALLS`)."""
    for pattern, instead in CALLS:
        m = pattern.search(claim.text)
        if m is None:
            continue
        new = rng.choice(instead)
        text = claim.text[:m.start()] + new + claim.text[m.end():]
        if new in ("rises from", "falls from"):
            text = text.replace(TREND_UNSURE, ":", 1)  # the call made, the sentence no longer says it cannot
        elif new == "goes from":
            text = re.sub(r"(over world sizes? [\d ]+(?:to \d+)?): [^.]*\.", rf"\1{TREND_UNSURE}.", text, count=1)
        yield Claim(text, claim.job, claim.fix_fields, claim.basis, claim.kind), False, f"{m.group()!r} -> {new!r}"
        return


def choice_mutations(claim: Claim, fig, rng):
    """The fastest (cheapest) line said of another setting of the same model: its job swapped for one
    that trains the same model (the sentence as it was)."""
    if claim.kind not in ("fastest", "cheapest") or claim.job not in fig.jobs.index:
        return
    ok = fig.ok()
    model = ("model", "model_size", "model_args", "script", "script_args")
    mine = fig.jobs.loc[claim.job]
    others = [k for k in ok.index if k != claim.job and all(str(ok.at[k, f]) == str(mine[f]) for f in model)]
    if others:
        new = rng.choice(others)
        # still true where the two tie (within a thousandth of the figure the line is chosen by)
        column = "samples_per_s" if claim.kind == "fastest" else "cost_per_million"
        tie = abs(float(ok.at[new, column]) / float(mine[column]) - 1) <= 1e-3
        yield Claim(claim.text, new, claim.fix_fields, claim.basis, claim.kind), tie, f"{claim.kind} -> {new}"


def basis_mutations(claim: Claim):
    for old, new in BASIS:
        if old in claim.text:
            yield (Claim(claim.text.replace(old, new, 1), claim.job, claim.fix_fields, claim.basis, claim.kind),
                   False, f"{old!r} -> {new!r}")
            return


def run(paths, per_kind: int, seed: int, verbose: bool = False) -> dict:
    rng = random.Random(seed)
    false_reports, skipped = [], 0
    pool = {k: [] for k in ("number", "interval", "job", "direction", "basis", "significance", "band", "bound",
                            "cause", "cannot tell", "choice")}
    for folder in paths:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                claims = claims_of(folder)
                fig = derive(folder)
            except Exception as err:  # a folder that fails to load is named, not scored
                print(f"{folder}: skipped, fails to load: {type(err).__name__}: {err}")
                continue
        false_reports += [(folder, p) for p in check(fig, claims)]
        truths = {(c.text, c.job) for c in claims}
        for c in claims:
            if out_of_scope(c):
                skipped += 1
                continue
            pool["number"] += [(fig, *m) for m in number_mutations(c, rng)]
            pool["interval"] += [(fig, *m) for m in number_mutations(c, rng, bounds=True)]
            pool["job"] += [(fig, *m) for m in job_mutations(c, fig, rng, truths)]
            pool["direction"] += [(fig, *m) for m in direction_mutations(c)]
            pool["basis"] += [(fig, *m) for m in basis_mutations(c)]
            pool["significance"] += [(fig, *m) for m in significance_mutations(c)]
            pool["band"] += [(fig, *m) for m in band_mutations(c, rng)]
            pool["bound"] += [(fig, *m) for m in bound_mutations(c, rng)]
            pool["cause"] += [(fig, *m) for m in cause_mutations(c)]
            pool["cannot tell"] += [(fig, *m) for m in cannot_tell_mutations(c, rng)]
            pool["choice"] += [(fig, *m) for m in choice_mutations(c, fig, rng)]
    scores = {}
    for kind, mutations in pool.items():
        chosen = rng.sample(mutations, min(per_kind, len(mutations)))
        caught = missed = still_true = 0
        for fig, claim, same, what in chosen:
            found = bool(check_claim(fig, claim))
            if same and not found:
                still_true += 1
            elif found:
                caught += 1
            else:
                missed += 1
                if verbose:
                    print(f"  missed {kind}: {what}: {claim.job or '-'}: {claim.text[:300]}")
        scores[kind] = {"tried": len(chosen), "caught": caught, "missed": missed, "still_true": still_true}
    return {"scores": scores, "false_reports": false_reports, "model_sentences": skipped}


def row(kind: str, c) -> str:
    return f"| {kind} | {c['tried']} | {c['caught']} | {c['missed']} | {c['still_true']} | {100 * score_of(c):.1f} % |"


def score_of(counts: dict) -> float:
    scored = counts["caught"] + counts["missed"]
    return counts["caught"] / scored if scored else float("nan")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-kind", type=int, default=150, help="mutations drawn per kind (default 150)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target", type=float, default=0.95)
    parser.add_argument("--folder", type=Path, action="append", help="example folder(s) (default: all committed)")
    parser.add_argument("--held-out", action="store_true",
                        help="the held-out folders alone (reports/examples/checker-cpu/held-out-3/: swept after "
                             "every check was frozen)")
    parser.add_argument("--verbose", action="store_true", help="print every missed mutation")
    parser.add_argument("--out", type=Path, help="also write the table (markdown) to this file")
    args = parser.parse_args(argv)
    if args.out:
        check_out(args.out, HEADER)
    started = time.monotonic()
    result = run(args.folder or folders(args.held_out), args.per_kind, args.seed, args.verbose)
    total = Counter()
    lines = ["| kind | mutations | caught | missed | still true (excluded) | score |", "|---|---|---|---|---|---|"]
    for kind, c in result["scores"].items():
        total.update(c)
        lines.append(row(kind, c))
    lines.append(row("all", total))
    print("\n".join(lines))
    print(f"\nfalse reports on the unmutated sentences: {len(result['false_reports'])}")
    for folder, p in result["false_reports"]:
        print(f"  {folder.name}: {p.line()}")
    print(f"cost-model sentences not mutated (out of scope): {result['model_sentences']}; "
          f"{time.monotonic() - started:.0f} s")
    if args.out:
        command = " ".join(["python benchmarks/checker_mutations.py", *(argv if argv is not None else sys.argv[1:])])
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_out(args.out, f"{HEADER}{command} -->\n" + "\n".join(lines) + "\n\n"
                  f"False reports on the unmutated sentences: {len(result['false_reports'])}.\n", HEADER)
    return 0 if score_of(total) >= args.target and not result["false_reports"] else 1


if __name__ == "__main__":
    sys.exit(main())
