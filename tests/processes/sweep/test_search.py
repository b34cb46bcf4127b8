"""tune's race (sweep.search over analysis.history.race), on planted landscapes: every launch's result is
written into the store as if it had run, its step time drawn around a planted mean per setting,
so the right answer is known. The race must find the planted best (or a setting statistically
tied with it) with at most half the grid's launches, and never race two caps with the same buckets."""
from ddpbench.analysis.summary.table import summarize
from ddpbench.cli.program import main
from ddpbench.results.tables import load


def test_tune_races_real_launches_and_stores_them_like_a_sweep(tmp_path, capsys):
    import json

    toml = tmp_path / "tune.toml"
    toml.write_text('name = "t"\ntimeout_s = 120\n[defaults]\nmodel = "transformer"\nmodel_size = "s"\n'
                    'world_size = 2\nthreads_per_rank = 1\nsteps = 3\nwarmup_steps = 1\nrepeats = 4\n'
                    'check_steps = 0\n[grid]\nbucket_cap_mb = [0.25, 0.5, 1, 4]\n')
    out = tmp_path / "out"
    assert main(["tune", str(toml), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    result = json.loads((out / "search.json").read_text())
    # 0.5 MB gives 0.25's buckets: three settings raced, two launches each, then (unless one is already
    # significantly slower) the faster two a third: within half the grid (16)
    assert result["grid_launches"] == 16 and result["budget"] == 8 and result["launches"] in (6, 8)
    assert len(result["candidates"]) == 3 and len(result["same_buckets"]) == 1
    assert "fastest: " in printed and "the grid would have spent 16" in printed
    table = summarize(load(out))
    # stored like a sweep: the tables and the report read it
    assert len(table) == 3 and (table["repeats_ok"] >= 2).all() and table["repeats_ok"].sum() == result["launches"]
    page = (out / "index.html").read_text()
    assert "The race (tune)" in page and result["winner"] in page
