"""The analysis sections end to end: a real sweep with collectives and given links gets a
diagnosis and a projection that is checked against its own measurements."""

import json
import re

from ddpbench.testing import TINY_DEFAULTS, run_main, write_experiment


def test_sweep_with_collectives_and_links_reports_projection_and_diagnosis(tmp_path):
    exp = write_experiment(tmp_path / "proj.toml", """
        name = "proj"
        timeout_s = 60
        [[links]]
        name = "<b>10 GbE</b>"
        gbit_per_s = 10
        latency_us = 30
        [collectives]
        ops = ["all_reduce"]
        sizes = "64K:16M"
        factor = 4
        iters = 10
    """ + TINY_DEFAULTS + """
        repeats = 2
        [grid]
        world_size = [1, 2]
    """)
    out = tmp_path / "out"
    result = run_main("sweep", exp, "--out", out)
    assert result.returncode == 0, result.stderr[-3000:]
    kinds = [json.loads(line)["kind"] for line in (out / "results.jsonl").read_text().splitlines()]
    assert kinds.count("collective") == 1 and kinds.count("run") == 4
    sweep = next(json.loads(line) for line in (out / "results.jsonl").read_text().splitlines())
    assert sweep["experiment"]["links"] == [{"name": "<b>10 GbE</b>", "gbit_per_s": 10.0, "latency_us": 30.0}]

    html = (out / "index.html").read_text()
    assert "<h2>Diagnosis</h2>" in html and "<h2>Projection to larger clusters (model)</h2>" in html
    assert "&lt;b&gt;10 GbE&lt;/b&gt;" in html and "<b>10 GbE" not in html  # the user's name, escaped
    assert "Model output, not measurements" in html
    # predicted vs measured: the world-size-2 job against the link fitted to the all_reduce curve
    assert "measured: all_reduce, gloo, world size 2" in html and "Predicted vs measured" in html
    error = re.search(r"median absolute error: <em>measured: all_reduce[^<]*</em>: (\d+) % for the step time", html)
    assert error, html[html.find("Predicted vs measured"):][:600]
    assert (out / "projection.png").stat().st_size > 10_000
    assert "off by" in html  # the diagnosis quotes the model's error
