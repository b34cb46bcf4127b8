"""Mixed precision and torch.compile as job fields (issue 35): the fields and their refusals, the
rank's autocast, GradScaler and compile figures, the precision's tolerance, and (slow) real jobs:
fp32 + compile at the fp32 tolerance, bf16 within its own, the compile cache across repeats, and a
forked rank's memory against a fresh one's."""

import pytest

from ddpbench.rank.equivalence import EXACT_TOLERANCE
from ddpbench.results.tables import load_tables
from ddpbench.testing import TINY_DEFAULTS, run_main, write_experiment

# -- real jobs -----------------------------------------------------------------------------------

def test_compiled_fp32_matches_single_process_training_and_bf16_is_within_its_tolerance(tmp_path):
    """fp32 + compile: equivalent at the fp32 tolerance (exact); bf16: within 2^-7, labelled lossy.
    The compiled job's second launch finds the job's compile cache warm and compiles faster."""
    exp = write_experiment(tmp_path / "p.toml", """
        name = "precision-test"
        timeout_s = 240
    """ + TINY_DEFAULTS + """
        check_steps = 3
        [[grid]]
        world_size = [2]
        compile = [true]
        repeats = [2]
        [[grid]]
        world_size = [2]
        precision = ["bf16"]
    """)
    proc = run_main("sweep", exp, "--out", tmp_path / "out", "--no-report", timeout=600)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    _, runs, ranks, _ = load_tables(tmp_path / "out")
    assert (runs["status"] == "ok").all(), runs[["status", "error"]]
    first = runs[runs["repeat"] == 0].set_index("precision")
    compiled, bf16 = first.loc["fp32"], first.loc["bf16"]
    print("compiled", compiled["max_abs_diff"], "bf16", bf16["max_abs_diff"])
    assert compiled["exact"] is True or compiled["exact"] == True  # noqa: E712 - numpy's bool
    assert compiled["max_abs_diff"] <= EXACT_TOLERANCE and compiled["tolerance"] == EXACT_TOLERANCE
    assert bf16["exact"] == False and bf16["lossy_reason"] == "bf16 compute (torch.autocast)"  # noqa: E712
    assert bf16["max_abs_diff"] <= 2 ** -7 and bf16["tolerance"] == 2 ** -7
    assert bf16["max_abs_diff"] > compiled["max_abs_diff"]  # bf16 rounding shows
    mine = ranks[ranks["compile_s"].notna()]
    cold, warm = mine[mine["repeat"] == 0], mine[mine["repeat"] == 1]
    assert set(cold["compile_cache"]) == {"cold"} and set(warm["compile_cache"]) == {"warm"}
    print("compile s cold", list(cold["compile_s"]), "warm", list(warm["compile_s"]))
    assert warm["compile_s"].max() < cold["compile_s"].min()
    assert (mine["recompiles_after_compile_phase"] == 0).all() and (mine["compiled_graphs"] >= 1).all()


def test_a_forked_ranks_memory_is_a_fresh_interpreters_within_10_percent(tmp_path):
    """The same 2-rank job with ranks forked from the warm server and started as new interpreters
    (DDPBENCH_FORK_SERVER=0, as torchrun starts them): every rank's own memory within 10 %."""
    exp = write_experiment(tmp_path / "m.toml", """
        name = "memory-test"
        timeout_s = 120
    """ + TINY_DEFAULTS + """
        world_size = 2
        check_steps = 0
    """)
    figures = {}
    for forked in ("1", "0"):
        out = tmp_path / f"out{forked}"
        proc = run_main("sweep", exp, "--out", out, "--no-report", env={"DDPBENCH_FORK_SERVER": forked})
        assert proc.returncode == 0, proc.stderr
        _, _, ranks, _ = load_tables(out)
        figures[forked] = ranks.set_index("rank")[["rank_memory_mb", "peak_rss_mb", "uss_mb"]]
    print(figures)
    for rank in (0, 1):
        assert figures["1"].loc[rank, "rank_memory_mb"] == pytest.approx(figures["0"].loc[rank, "rank_memory_mb"],
                                                                         rel=0.10)
