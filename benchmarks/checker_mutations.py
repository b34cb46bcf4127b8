"""How much does the independent checker (:mod:`ddpbench.audit`) catch? A mutation benchmark over
the real verdict and diagnosis of every committed example folder (``reports/examples/*/`` with a
results.jsonl).

    python benchmarks/checker_mutations.py [--per-kind 150] [--seed 0] [--folder reports/examples/quick-cpu ...]
                                           [--held-out] [--out reports/examples/checker-cpu/mutations.md]

``--held-out`` scores the folders of ``reports/examples/checker-cpu/held-out/`` alone (swept after
the significance, band and bound checks were written; the default leaves them out).

It first checks every folder's unmutated sentences (false reports: should be 0), then applies
mutations, each to one sentence, checked alone against its folder's records:

  number     one quoted figure (ms, x, %, MB, serial fraction) scaled by a realistic factor
             (0.5 to 1.5, never 1), written at its own precision;
  interval   the same, to one end of a quoted 95 % interval (the checker holds a quoted interval
             to the one it re-derives, at the precision quoted);
  job        the job the sentence is about swapped for another job of the same folder (its key, or
             the model label it names);
  direction  one faster <-> slower or rises <-> falls where it compares measurements ("5.3 % faster",
             "slower than", "slower: 0.16x", "rises from"), not a descriptive one ("a faster link");
  basis      measured <-> estimated ("measured to recover" <-> "estimated (a model, not run) to
             recover", "estimated to recover" -> "measured to recover");
  significance  one "significant" <-> "not significant" where the sentence quotes a 95 % interval
             (the word a reader acts on: ": significant)" -> ": not significant)"), or an interval's
             own "includes 0" <-> "excludes 0";
  band       one scaling band phrase ("scales moderately", "scales moderately to well") replaced by
             another drawn from the five the report can write;
  bound      "is communication-bound" <-> "is compute-bound", and "cannot tell whether it is
             compute- or communication-bound" -> "it is communication-bound" or "... compute-bound".

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
import random
import re
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

from ddpbench.audit import parse
from ddpbench.audit.checks import Claim, check, check_claim, is_model_output
from ddpbench.audit.figures import derive
from ddpbench.audit.pool import label_pattern

ROOT = Path(__file__).resolve().parent.parent

FACTORS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.05, 1.1, 1.15, 1.2, 1.3, 1.4, 1.5)
FLIPS = {"faster": "slower", "slower": "faster", "rises": "falls", "falls": "rises"}
BASIS = [("estimated (a model, not run) to recover", "measured to recover"),
         ("measured to recover", "estimated (a model, not run) to recover"),
         ("estimated to recover", "measured to recover"),
         ("a model estimate: the sweep did not run this fix", "the sweep ran this fix")]


#: folders swept after the significance, band and bound checks were written, never read while writing them
HELD_OUT = ROOT / "reports" / "examples" / "checker-cpu" / "held-out"


def folders(held_out: bool = False) -> list[Path]:
    """Every committed example folder with results, but the held-out ones; with ``held_out``, those alone."""
    found = sorted(p.parent for p in (ROOT / "reports" / "examples").glob("**/results.jsonl"))
    return [f for f in found if f.is_relative_to(HELD_OUT) == held_out]


def claims_of(folder: Path) -> list[Claim]:
    """The folder's verdict lines and findings, as `report --check` hands them to the checker."""
    from ddpbench.analysis.diagnosis.claims import finding_claims, verdict_claims
    from ddpbench.analysis.folder import load

    measured = load(folder)
    findings = measured.findings
    return [Claim.of(c) for c in (*verdict_claims(findings, measured.verdict, measured.summary),
                                  *finding_claims(findings))]


def _fmt(value: float, q) -> str:
    text = f"{value:.{q.digits}f}"
    return ("+" + text) if q.text.startswith("+") and value >= 0 else text


def number_mutations(claim: Claim, labels, rng, bounds: bool = False):
    """Point figures (``bounds`` False) or the ends of quoted 95 % intervals (True)."""
    quoted = [q for q in parse.numbers(claim.text, labels) if q.unit in ("ms", "x", "%", "MB", "e")]
    ends = {id(q) for i in parse.intervals(claim.text, quoted) for q in (i.low, i.high)}
    for q in quoted:
        if (id(q) in ends) != bounds:
            continue
        for factor in rng.sample(FACTORS, len(FACTORS)):
            new = _fmt(q.value * factor, q)
            if float(new) != q.value:
                break
        else:
            continue
        text = claim.text[:q.start] + new + claim.text[q.end:]
        # still true: the new number is another figure the sentence quotes in that unit
        same = any(o is not q and o.unit == q.unit and abs(o.value - float(new)) < 0.5 * 10 ** -q.digits + 1e-9
                   for o in quoted)
        yield Claim(text, claim.job, claim.fix_fields, claim.basis, claim.kind), same, f"{q.text} -> {new}"


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
    named = [l for l in labels if label_pattern(l).search(claim.text)]
    named = [l for l in named if not any(l != o and l in o for o in named)]
    others = [l for l in labels if l not in named and not any(l in n or n in l for n in named)]
    if named and others:
        old, new = named[0], rng.choice(others)
        text = label_pattern(old).sub(new, claim.text)
        yield Claim(text, None, claim.fix_fields, claim.basis, claim.kind), (text, None) in truths, f"{old} -> {new}"


#: a direction word that compares measurements: "5.3 % faster", "slower than", "slower: 0.16x",
#: "rises from"; not a descriptive one ("a faster link", "a slower device"), which compares nothing
COMPARING = re.compile(r"(?<=% )(faster|slower)\b|\b(faster|slower)(?= than|:)|\b(rises|falls)(?= from)")


def direction_mutations(claim: Claim):
    for m in COMPARING.finditer(claim.text):
        if re.search(r"faster or slower|slower or faster", claim.text[max(0, m.start() - 10):m.end() + 10]):
            continue  # "no faster or slower": flipping one word says the same
        text = claim.text[:m.start()] + FLIPS[m.group()] + claim.text[m.end():]
        yield Claim(text, claim.job, claim.fix_fields, claim.basis, claim.kind), False, f"{m.group()} flipped"


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
                "scales moderately to well")
BAND_PHRASE = re.compile(r"scales (?:poorly|moderately|well)(?: to (?:moderately|well))?")


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


def basis_mutations(claim: Claim):
    for old, new in BASIS:
        if old in claim.text:
            yield (Claim(claim.text.replace(old, new, 1), claim.job, claim.fix_fields, claim.basis, claim.kind),
                   False, f"{old!r} -> {new!r}")
            return


def run(paths, per_kind: int, seed: int, verbose: bool = False) -> dict:
    rng = random.Random(seed)
    false_reports, skipped = [], 0
    pool = {k: [] for k in ("number", "interval", "job", "direction", "basis", "significance", "band", "bound")}
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
        labels = list(fig.jobs["label"].unique())
        for c in claims:
            if is_model_output(c):
                skipped += 1
                continue
            pool["number"] += [(fig, *m) for m in number_mutations(c, labels, rng)]
            pool["interval"] += [(fig, *m) for m in number_mutations(c, labels, rng, bounds=True)]
            pool["job"] += [(fig, *m) for m in job_mutations(c, fig, rng, truths)]
            pool["direction"] += [(fig, *m) for m in direction_mutations(c)]
            pool["basis"] += [(fig, *m) for m in basis_mutations(c)]
            pool["significance"] += [(fig, *m) for m in significance_mutations(c)]
            pool["band"] += [(fig, *m) for m in band_mutations(c, rng)]
            pool["bound"] += [(fig, *m) for m in bound_mutations(c, rng)]
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
                        help="the held-out folders alone (reports/examples/checker-cpu/held-out/: swept after the "
                             "word checks were written)")
    parser.add_argument("--verbose", action="store_true", help="print every missed mutation")
    parser.add_argument("--out", type=Path, help="also write the table (markdown) to this file")
    args = parser.parse_args(argv)
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
        args.out.write_text(f"<!-- written by: {command} -->\n" + "\n".join(lines) + "\n\n"
                            f"False reports on the unmutated sentences: {len(result['false_reports'])}.\n")
    return 0 if score_of(total) >= args.target and not result["false_reports"] else 1


if __name__ == "__main__":
    sys.exit(main())
