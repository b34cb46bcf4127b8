"""A refusal of the script's shape stops its job at the first launch, in a real sweep (docs/scripts.md):
a planted script that builds DDP with find_unused_parameters=True while the job says false runs one
launch of its three at world size 1 and none at world size 2; the next job still runs."""

import json
import time
from pathlib import Path

from ddpbench.testing import rank_processes, run_main, script_experiment

PLANTED = """
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
ddp = DDP(torch.nn.Linear(4, 2), find_unused_parameters={unused})
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
for _ in range(20):
    opt.zero_grad(); ddp(torch.randn({batch}, 4)).sum().backward(); opt.step()
dist.destroy_process_group()
"""


def test_a_refused_script_runs_one_launch_and_the_next_job_still_runs(tmp_path):
    (tmp_path / "unused.py").write_text(PLANTED.format(unused=True, batch=8))  # refused whatever the world size
    (tmp_path / "batch.py").write_text(PLANTED.format(unused=False, batch=5))  # refused: 5 samples, the job counts 8
    (tmp_path / "good.py").write_text(PLANTED.format(unused=False, batch=8))
    exp = script_experiment(tmp_path / "refused.toml", """
        repeats = 3
        [[grid]]
        script = ["unused.py"]
        world_size = [1, 2]
        [[grid]]
        script = ["batch.py"]
        world_size = [1]
        [[grid]]
        script = ["good.py"]
        world_size = [1]
        repeats = [1]
    """, timeout_s=60, warmup_steps=1, steps=2)
    out = tmp_path / "out"
    start = time.monotonic()
    done = run_main("sweep", exp, "--out", out, "--no-report")
    took = time.monotonic() - start
    print(f"sweep of 2 refused scripts (3 jobs, 9 launches planned) and a good one: {took:.1f} s")
    assert done.returncode == 1, done.stderr[-3000:]  # a job failed: it was refused
    runs = [r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines()) if r["kind"] == "run"]
    by = {}
    for record in runs:
        by.setdefault((Path(record["spec"]["script"]).name, record["spec"]["world_size"]), []).append(record)

    # find_unused_parameters: one launch ran and was refused; its two others and the three at world size 2 skipped
    first, *others = sorted(by[("unused.py", 1)], key=lambda r: r["repeat"])
    assert first["status"] == "failed" and first["refusal"] == {"scope": "world_sizes"}
    assert "find_unused_parameters=True and the job says False (the default)" in first["error"]
    skipped = others + by[("unused.py", 2)]
    assert len(skipped) == 5 and {r["status"] for r in skipped} == {"skipped"}
    assert all(r["refusal"]["launch"] == {"key": first["key"], "repeat": 0} and r["result"] is None for r in skipped)
    # the batch: refused for its own job only (a script may divide a global batch by the world size)
    refused, *rest = sorted(by[("batch.py", 1)], key=lambda r: r["repeat"])
    assert refused["status"] == "failed" and refused["refusal"] == {"scope": "job"}
    assert "took 5 samples in its first optimizer step on rank 0, and the job counts 8" in refused["error"]
    assert [r["status"] for r in rest] == ["skipped", "skipped"]
    # the next job ran
    (good,) = by[("good.py", 1)]
    assert good["status"] == "ok" and "refusal" not in good

    # only the launches that ran started ranks: their logs are the only ones
    logs = sorted(p.name for p in (out / "logs").rglob("*.log"))
    ran = {r["key"] for r in runs if r["status"] != "skipped"}
    assert {name.split("-r")[0] for name in logs} == ran and len(ran) == 3, logs
    assert done.stderr.count("refused: a refusal of the script's shape comes again on every launch") == 2
    assert ("its 2 other launches and the 3 launches of the same script at world size 2 (this refusal does not "
            "depend on the world size) are skipped, not run") in " ".join(done.stderr.split())
    assert rank_processes(str(out)) == []
