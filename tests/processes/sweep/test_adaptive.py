"""Adaptive repeats (repeats = "auto"): a job gets launches until the 95 % interval of its
throughput is within its target, within its bounds; the plan reads launches back from the store."""
from ddpbench.analysis.summary.table import summarize
from ddpbench.cli.program import main
from ddpbench.results.tables import load


def test_a_sweep_under_auto_repeats_stops_each_job_at_its_bound(tmp_path, capsys):
    toml = tmp_path / "auto.toml"
    # an unreachable target (0.1 %) on a tiny job: every job goes to its max_repeats, and says so
    toml.write_text('name = "a"\ntimeout_s = 120\n[defaults]\nmodel = "mlp"\nmodel_size = "xs"\nworld_size = 1\n'
                    'threads_per_rank = 1\nsteps = 3\nwarmup_steps = 1\nrepeats = "auto"\nmin_repeats = 2\n'
                    'max_repeats = 3\nci_target_pct = 0.1\ncheck_steps = 0\n[grid]\nbatch_size = [8, 16]\n')
    out = tmp_path / "out"
    assert main(["sweep", str(toml), "--out", str(out)]) == 0
    table = summarize(load(out))
    assert (table["repeats_ok"] == 3).all()
    assert (table["ci_reached"] == False).all() and (table["repeats_bound"] == "max_repeats").all()  # noqa: E712
    assert (table["ci_halfwidth_pct"] > 0.1).all()
    page = (out / "index.html").read_text()
    assert "Repeats until the interval is tight" in page and "hit max_repeats" in page
