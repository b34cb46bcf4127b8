"""The independent checker (ddpbench.audit): figures re-derived from the stored records, every check
with a sentence that passes and one that fails, the issue's invented findings caught, and compare's
rows checked against both folders. (Nothing found in any committed example folder:
test_example_folders.py, a file of its own so that it runs beside these on another core.)"""

from __future__ import annotations

import copy
import warnings

import pytest

from ddpbench.audit import Claim, check, derive
from ddpbench.audit.checks import check_claim
from ddpbench.audit.compare import check_compare
from ddpbench.testing import ROOT
from ddpbench.testing.scripts import load_benchmark

EXAMPLES = ROOT / "reports" / "examples"
QUICK = EXAMPLES / "quick-cpu"
#: quick-cpu's jobs: transformer-s, world size 1 (25 MB) and world size 2 at 1, 2 and 25 MB
ONE, AT_1MB, AT_2MB, AT_25MB = "d44036ae0aa5", "8e73d612ef09", "cfc7d897e984", "30572234f25e"
SCALING = ("ddp with transformer-s (batch 4/rank) scales poorly to moderately: at world size 2 it runs 0.96x the "
           "throughput of one rank, 48 % parallel efficiency (95 % CI 38 % to 60 %).")
BOUND = ("DDP with transformer-s (batch 4/rank) at world size 2 is communication-bound: 33 % of each step (26.6 ms of "
         "81.3 ms) is communication the backward pass did not hide.")
BEST = ("Best gradient bucket size for DDP with transformer-s (batch 4/rank) at world size 2: 1 MB, 1.02x as fast as "
        "the default 25 MB (95 % CI 0.786x to 1.31x), but that is not significant: the interval includes both 1 and a "
        "difference of 10 % in the step; cannot tell whether they differ with 3 launches.")


@pytest.fixture(scope="module")
def quick():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return derive(QUICK)


def kinds(fig, claim) -> list[str]:
    return [p.kind for p in check_claim(fig, Claim.of(claim))]


def test_figures_are_re_derived_from_the_records(quick):
    """quick-cpu as its report quotes it: 0.96x, 48 %, 26.6 ms exposed of an 81.3 ms step, 4 buckets at 1 MB."""
    r = quick.rec(AT_1MB)
    assert round(r["speedup"], 2) == 0.96 and round(r["efficiency_pct"]) == 48
    assert round(r["step_ms"], 1) == 81.3 and round(r["exposed_ms"], 1) == 26.6
    assert r["buckets"] == 4 and r["launches"] == 3 and r["world_size"] == 2 and r["bucket_cap_mb"] == 1.0
    assert quick.rec(ONE)["speedup"] == 1.0
    low, high = r["speedup_low"], r["speedup_high"]
    assert low < r["speedup"] < high  # the Welch t interval on log launch means holds its point


def test_the_issues_invented_findings_are_caught(quick):
    """1.95x and 97 % (measured 0.96x, 48 %), 70.0 ms exposed (measured 26.6), 258.1 vs 81.3 ms."""
    invented = [
        SCALING.replace("0.96x", "1.95x").replace("48 %", "97 %").replace(" (95 % CI 38 % to 60 %)", ""),
        {"text": BOUND.replace("26.6 ms", "70.0 ms"), "job": AT_1MB},
        {"text": "DDP with transformer-s (batch 4/rank) at world size 2 takes 3.00x the step time of one rank "
                 "(258.1 vs 81.3 ms).", "job": AT_1MB},
    ]
    problems = [check_claim(quick, Claim.of(c)) for c in invented]
    assert all(problems)
    quoted = " ".join(p.expected for found in problems for p in found)
    for figure in ("1.95", "97", "70.0", "258.1"):
        assert figure in quoted


@pytest.mark.parametrize("claim", [SCALING, {"text": BOUND, "job": AT_1MB}, BEST])
def test_true_sentences_pass(quick, claim):
    assert kinds(quick, claim) == []


def test_figure(quick):
    assert kinds(quick, SCALING.replace("0.96x", "0.90x")) == ["figure"]
    assert kinds(quick, SCALING.replace("48 %", "50 %")) == ["figure"]
    assert "figure" in kinds(quick, BEST.replace("1.02x", "1.12x"))


def test_arithmetic_and_the_jobs_own_step(quick):
    assert "arithmetic" in kinds(quick, {"text": BOUND.replace("33 %", "30 %"), "job": AT_1MB})
    # the same sentence handed the 2 MB job: the step it quotes is not that job's
    assert "job" in kinds(quick, {"text": BOUND, "job": AT_2MB})


def test_interval(quick):
    """A quoted interval is the re-derived one at its precision: 38.4 % to 60.3 % is "38 % to 60 %"."""
    assert kinds(quick, SCALING.replace("38 % to 60 %", "49 % to 60 %")) == ["interval"]  # does not hold 48 %
    assert kinds(quick, SCALING.replace("38 % to 60 %", "38 % to 80 %")) == ["interval"]  # past it
    assert kinds(quick, SCALING.replace("38 % to 60 %", "40 % to 50 %")) == ["interval"]  # inside it: not it either
    assert kinds(quick, SCALING.replace("38 % to 60 %", "39 % to 60 %")) == ["interval"]  # 38.4 is not 39
    assert kinds(quick, SCALING.replace("38 % to 60 %", "38.4 % to 60.3 %")) == []  # more digits, still it
    assert kinds(quick, BEST.replace("0.786x to 1.31x", "0.786x to 1.41x")) == ["interval"]  # not the speedup's
    # does not hold 1.02x, and no longer includes 1 as its words say
    assert set(kinds(quick, BEST.replace("0.786x to 1.31x", "1.04x to 1.31x"))) == {"interval", "significance",
                                                                                    "differ"}


def test_direction(quick):
    assert kinds(quick, BEST.replace("1.02x", "0.980x").replace("0.786x to 1.31x", "0.763x to 1.27x")) == \
        ["direction"]
    against = {"text": "the sweep measured bucket_cap_mb = 25: 82.7 ms a step (mean) against this job's 81.3 ms, "
                       "0.984x as fast as this job", "job": AT_1MB, "fix_fields": {"bucket_cap_mb": 25.0}}
    assert kinds(quick, against) == []
    assert kinds(quick, {**against, "text": against["text"].replace("0.984x", "1.02x")}) == ["direction"]
    # the retired form of the same comparisons: a problem whichever way it points
    assert kinds(quick, {**against, "text": against["text"].replace("0.984x as fast as this job", "1.7 % slower")}) \
        == ["retired"]


def test_the_wording_to_come_reads_generically(quick):
    """Sentences in the wording being written beside this checker: an exposed time with its interval in
    ms, "cannot tell with N launches; M would detect X %", "not measurable here (noise floor X ms)"."""
    spread = 11.0  # a power calculation's input: not checked
    # the job's exposed time with its interval (17 % to 48 % of the step: across the 25 % line, so no bound word)
    exposed = BOUND.replace(" is communication-bound:", ":").replace("81.3 ms)", "81.3 ms; 95 % CI 14.2 to 39.1 ms)")
    tell = ("DDP with transformer-s (batch 4/rank) at world size 2: cannot tell whether it is compute- or "
            "communication-bound with 3 launches; 50 would detect a difference of 8 % "
            f"(launch-to-launch spread {spread} %).")
    floor = ("DDP with transformer-s (batch 4/rank) at world size 2: exposed communication is not measurable here "
             "(noise floor 12.4 ms), so no compute- or communication-bound verdict.")
    for text in (exposed, tell, floor):
        assert kinds(quick, {"text": text, "job": AT_1MB}) == []
    assert kinds(quick, {"text": exposed.replace("14.2 to", "16.0 to"), "job": AT_1MB}) == ["interval"]
    bound = exposed.replace("at world size 2:", "at world size 2 is communication-bound:")
    assert kinds(quick, {"text": bound, "job": AT_1MB}) == ["bound"]
    assert kinds(quick, {"text": tell.replace("3 launches", "5 launches"), "job": AT_1MB}) == ["figure"]


def test_job_named(quick):
    assert kinds(quick, {"text": SCALING, "job": "000000000000"}) == ["job"]
    assert "job" in kinds(quick, SCALING.replace("batch 4/rank", "batch 8/rank"))
    assert "job" in kinds(quick, {"text": BOUND.replace("world size 2", "world size 1"), "job": AT_1MB})


def test_basis_by_the_stored_jobs(quick):
    ran = {"bucket_cap_mb": 25.0}
    measured = "Fix: bucket_cap_mb = 25; the sweep measured it."
    estimated = "Fix: bucket_cap_mb = 25; estimated (a model, not run) to recover it."
    assert kinds(quick, Claim(measured, AT_1MB, ran, "measured")) == []
    assert kinds(quick, Claim(estimated, AT_1MB, ran, "model")) == ["basis"]
    assert kinds(quick, Claim(measured.replace("25", "50"), AT_1MB, {"bucket_cap_mb": 50.0}, "measured")) == ["basis"]
    assert kinds(quick, Claim(estimated.replace("25", "50"), AT_1MB, {"bucket_cap_mb": 50.0}, "model")) == []
    # a fix with no setting named cannot have been run
    assert kinds(quick, Claim("Fix: a faster link; measured to recover it.", AT_1MB, None, "measured")) == ["basis"]


def test_a_cap_counts_as_run_by_its_recorded_layout():
    """bucket-sweep-cpu: caps 0.1, 0.5, 1 and 5 MB recorded the same 4 buckets. With the 0.5 MB job
    moved to another world size, a fix of 0.5 MB for the 100 MB job was still run -- by the 2 MB... no: by
    the ws-2 jobs whose recorded layout is the one 0.5 MB yields; with their layouts changed, it was not."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig = derive(EXAMPLES / "bucket-sweep-cpu")
    big, half = "191c42faad28", "75ba7b163056"
    fig.jobs.at[half, "world_size"] = 4
    fig.memo.clear()
    claim = Claim("Fix: bucket_cap_mb = 0.5; the sweep measured it.", big, {"bucket_cap_mb": 0.5}, "measured")
    assert [p.kind for p in check_claim(fig, claim) if p.kind == "basis"] == []
    for key in ("233627b7d635", "81c47273a1a2", "c7247dbde368"):
        fig.jobs.at[key, "layout"] = (1, 2, 3)
    fig.memo.clear()
    assert [p.kind for p in check_claim(fig, claim) if p.kind == "basis"] == ["basis"]


def test_contradicted(quick):
    fig = copy.deepcopy(quick)
    claim = Claim("Fix: bucket_cap_mb = 2.", AT_1MB, {"bucket_cap_mb": 2.0})
    assert kinds(fig, claim) == []  # the 2 MB twin's interval reaches below 1: not measured slower
    fig.launch_ms[AT_2MB] = [120.0, 121.0, 122.0]
    fig.memo.clear()
    assert kinds(fig, claim) == ["contradicted"]
    assert kinds(fig, Claim("Fix: bucket_cap_mb = 2 measured slower, so it is not proposed.", AT_1MB,
                            {"bucket_cap_mb": 2.0})) == []


def test_efficiency_and_statistic(quick):
    fig = copy.deepcopy(quick)
    assert check(fig, [SCALING]) == []
    assert [p.kind for p in check(fig, [SCALING.replace("48 % parallel", "120 % parallel")])].count("efficiency") == 1
    fig.jobs.at[AT_25MB, "efficiency_pct"], fig.jobs.at[AT_25MB, "speedup"] = 120.0, 2.4
    fig.memo.clear()
    assert [p.kind for p in check(fig, [])] == ["efficiency"]
    flagged = "No scaling verdict: 2.40x (120 % parallel efficiency), above 100 %: a broken baseline."
    assert [p.kind for p in check(fig, [flagged]) if p.kind == "efficiency"] == []
    assert "statistic" in kinds(quick, "its median step is 81.3 ms")


def test_compare_rows_against_both_folders():
    from ddpbench.analysis.history import compare

    a, b = EXAMPLES / "gate-power-cpu" / "sweep1", EXAMPLES / "gate-power-cpu" / "sweep2"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        side_a, side_b = compare.load_side(a, "A"), compare.load_side(b, "B")
        fa, fb = derive(a), derive(b)
    rows = compare.compare_tables(side_a.summary, side_a.steps, side_b.summary, side_b.steps).to_dict("records")
    assert "faster" in [r["verdict"] for r in rows]
    assert check_compare(rows, fa, fb) == []
    faster = next(r for r in rows if r["verdict"] == "faster")
    for change, kind in ((dict(verdict="slower"), "says slower"),
                         (dict(mean_ratio=faster["mean_ratio"] * 1.05), "mean_ratio"),
                         (dict(mean_ratio_high=1.2), "holds 1"), (dict(launches_a=7), "launches_a"),
                         (dict(mean_ms_b=faster["mean_ms_b"] * 0.9), "mean_ms_b")):
        (problem,) = [p for p in check_compare([{**faster, **change}], fa, fb) if kind in p.expected]
        assert problem.job == faster["key"]


def test_the_mutation_benchmark_scores_the_checker():
    """benchmarks/checker_mutations.py, small: three folders (calibration-cpu's for a band word: it slows down),
    40 mutations a kind."""
    checker_mutations = load_benchmark("checker_mutations")

    result = checker_mutations.run([QUICK, EXAMPLES / "bucket-sweep-cpu", EXAMPLES / "calibration-cpu"], per_kind=40,
                                   seed=0)
    assert result["false_reports"] == []
    scores = result["scores"]
    for kind in ("number", "interval", "job", "direction", "basis", "significance", "band", "bound", "cause",
                 "cannot tell", "choice"):
        assert scores[kind]["tried"] > 0
        assert checker_mutations.score_of(scores[kind]) >= 0.9, (kind, scores[kind])


def test_the_sweeps_console_verdict_lines_are_checked(quick, capsys):
    """The lines a sweep prints at its end ("verdict:" then "  label: sentence") are the verdict's
    sentences: as printed, they pass; with an invented figure, they do not."""
    from rich.console import Console

    from ddpbench.cli.shared.running import finish_report

    finish_report(QUICK, Console(quiet=True), write=False, verbose=True)
    out = capsys.readouterr().out
    lines = [line.strip().split(": ", 1)[1] for line in out.split("verdict in sentences:")[1].splitlines()
             if ": " in line]
    assert len(lines) == 5 and check(quick, lines) == []  # scaling, lost time, top cause, best setting, fastest
    assert check(quick, [lines[0].replace("0.96x", "1.95x")]) != []


def test_the_gain_s_lower_end_in_words_is_held_to_the_records():
    """The top cause's "at least X ms by the lower end of its 95 % interval": the gain scaled with the exposed
    communication's lower end, for the job the line is about (bucket-sweep-cpu's verdict, as written)."""
    from ddpbench.audit.choices import check_gain_low

    fig = derive(EXAMPLES / "bucket-sweep-cpu")
    line = ("communication in mlp-l ws=2 bucket 5 MB; fix: a faster link, fewer bytes (comm_hook = fp16 or powersgd) "
            "or more compute per byte (a larger per-rank batch, grad_accum): estimated (a model, not run) to recover "
            "39.7 ms of a 108.7 ms step (37 %), at least {} ms by the lower end of its 95 % interval")
    assert check_gain_low(fig, Claim(line.format("28.8"), "c7247dbde368")) == []
    found = check_gain_low(fig, Claim(line.format("24.0"), "c7247dbde368"))
    assert [p.kind for p in found] == ["interval"] and "nearest 28.7" in found[0].expected


def test_a_script_job_is_named_by_its_script_as_its_page_names_it():
    """A user's script job is named by its script, not by the model fields its record holds by default
    (script-cpu's say mlp): a sentence naming the job is checked against that name. Each job of the folder
    as its own page names it in the diagnosis (label ws=N)."""
    fig = derive(EXAMPLES / "script-cpu")
    page = (EXAMPLES / "script-cpu" / "index.html").read_text(encoding="utf-8")
    named = [f"{r['label']} ws={int(r['world_size'])}" for _, r in fig.ok().iterrows()]
    assert named and all(n.startswith("train_cnn.py ") and n in page for n in named), named
