"""What a verdict line chooses, held to the records: the job a fastest (cheapest) line names, and the
lower end of the gain a top cause's fix recovers, said in words (:func:`ddpbench.audit.checks.check_claim`
runs both on every sentence; each keeps quiet on a sentence that says neither)."""

from __future__ import annotations

import math
import re

from ddpbench.audit import parse
from ddpbench.audit.figures import Figures
from ddpbench.audit.problem import Claim, Problem

#: a named cause's gain and the lower end of its interval, said in words (the verdict's top cause line)
#: (and the answer table's row: "recover 23.8 ms a step (29 %); at least 12.5 ms by the lower end")
GAIN_LOW = re.compile(rf"recover ({parse.NUMBER}) (?:ms of a {parse.NUMBER} ms step|of {parse.NUMBER} ms a step|"
                      rf"ms a step) "
                      rf"\({parse.NUMBER} %\)[,;]? (?:at least ({parse.NUMBER}) ms by the lower end|(?:but the 95 % "
                      rf"interval of the gain|cannot tell:) reaches down to ({parse.NUMBER}) ms)")


def check_gain_low(fig: Figures, claim: Claim) -> list[Problem]:
    """The lower end of a fix's gain that the top cause's line says in words ("at least 28.8 ms by the lower
    end", "reaches down to 2.4 ms"), against what docs/reading-the-report.md derives it from, for the job
    the line is about: a gain carved out of the exposed communication scaled with that interval's lower
    end (the exposed time's, or the loss budget's communication line's), a gain the loss budget counts
    (waiting for the slowest rank, compute slowed by sharing) that line's lower end, any other the gain
    less the step's noise floor (half its interval's width); never below 0."""
    found = GAIN_LOW.search(claim.text)
    if found is None or claim.job is None or claim.job not in fig.jobs.index:
        return []
    gain, written = float(found.group(1)), found.group(2) or found.group(3)
    low = parse.Quoted(float(written), "ms", parse.digits(written), 0, 0, written)
    r = fig.rec(claim.job)

    def ratio(part: str, whole: str) -> float:
        return gain * r.get(part, math.nan) / r[whole] if r.get(whole, 0) == r.get(whole, 0) and r.get(whole, 0) > 0 \
            else math.nan

    candidates = [ratio("exposed_low", "exposed_ms"), ratio("budget_comm_low", "budget_comm"),
                  r.get("budget_straggler_low", math.nan), r.get("budget_contention_low", math.nan),
                  gain - (r.get("step_high", math.nan) - r.get("step_low", math.nan)) / 2]
    candidates = [max(0.0, c) for c in candidates if c == c]
    slack = 0.5 * 10 ** -parse.digits(found.group(1))  # the gain as written, rounded: a candidate made from it too
    if not candidates or any(low.matches(c, slack) for c in candidates):
        return []
    nearest = min(candidates, key=lambda c: abs(c - low.value))
    return [Problem("interval", claim.job, claim.text, f"the gain's lower end {written} ms is none the records give "
                                                       f"for a gain of {found.group(1)} ms; nearest {nearest:.2f} ms")]


#: what "the same model" is for the fastest and cheapest settings: the settings that say what is trained
#: (docs/diagnosis.md: each is chosen among the ok jobs that train the same model)
SAME_MODEL = ("model", "model_size", "model_args", "script", "script_args")
#: a choice's figure: the most samples a second (fastest), the least cost of a million samples (cheapest)
CHOICE_FIGURE = {"fastest": ("samples_per_s", max), "cheapest": ("cost_per_million", min)}
#: a choice set against its runner-up: "3.7 % faster than ...", "3.7 % less time per sample than ..."
AGAINST = re.compile(rf"{parse.NUMBER} ?% (faster|slower|cheaper|dearer|less time per sample|more time per sample) "
                     "than ")


def check_choice(fig: Figures, claim: Claim) -> list[Problem]:
    """The job a "fastest" ("cheapest") line names is the ok job of its model with the most samples a
    second (the least cost of a million samples) by the records, beyond the rounding of the figure
    quoted for it; where another job of that model is, the line names the wrong setting."""
    if claim.kind not in CHOICE_FIGURE or claim.job not in fig.ok().index:
        return []
    column, best = CHOICE_FIGURE[claim.kind]
    mine = fig.rec(claim.job)
    same = fig.ok()[[all(str(fig.rec(k).get(f)) == str(mine.get(f)) for f in SAME_MODEL) for k in fig.ok().index]]
    figures = same[column].astype(float).dropna()
    if figures.empty or mine.get(column) != mine.get(column):
        return []
    winner = figures.idxmax() if best is max else figures.idxmin()
    ahead = figures[winner] / mine[column] - 1 if best is max else 1 - figures[winner] / mine[column]
    if winner == claim.job or ahead <= 1e-3:  # a tie within a thousandth: either is the choice
        # the choice against its runner-up: by the records it is the faster (cheaper) one, never the slower
        against = AGAINST.search(claim.text)
        if against and against.group(1) in ("slower", "dearer", "more time per sample"):
            return [Problem("direction", claim.job, claim.text, f"says the {claim.kind} setting is {against.group(1)} "
                                                                "than the setting it is set against")]
        return []
    return [Problem(claim.kind, claim.job, claim.text, f"names {claim.job} the {claim.kind} of its model, but "
                                                       f"{winner} is ({column} {figures[winner]:.4g} against "
                                                       f"{mine[column]:.4g})")]
