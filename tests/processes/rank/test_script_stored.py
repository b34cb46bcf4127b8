"""A script job stores what ran (docs/scripts.md): DDP's settings as the model was built, and the
script's name as its model everywhere its jobs are labelled or grouped."""

from __future__ import annotations

import json
import textwrap

from ddpbench.testing import run_main, script_experiment


def test_a_sweep_stores_the_settings_the_script_ran_with(tmp_path):
    (tmp_path / "unused.py").write_text(textwrap.dedent("""
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP


        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.used, self.unused = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

            def forward(self, x):
                return self.used(x)


        dist.init_process_group("gloo")
        torch.manual_seed(0)
        ddp = DDP(Net(), find_unused_parameters=True, bucket_cap_mb=50)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        for _ in range(20):
            opt.zero_grad()
            ddp(torch.randn(8, 4)).sum().backward()
            opt.step()
        dist.destroy_process_group()
    """))
    (tmp_path / "static.py").write_text(textwrap.dedent("""
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        ddp = DDP(torch.nn.Linear(4, 4))
        ddp._set_static_graph()  # after construction: the job's static_graph = false is not what runs
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        for _ in range(20):
            opt.zero_grad()
            ddp(torch.randn(8, 4)).sum().backward()
            opt.step()
        dist.destroy_process_group()
    """))
    exp = script_experiment(tmp_path / "unused.toml", """
        world_size = 1
        [[grid]]
        script = ["unused.py"]
        find_unused_parameters = [false, true]
        [[grid]]
        script = ["static.py"]
    """, timeout_s=120, warmup_steps=1, steps=3)
    out = tmp_path / "out"
    run_main("sweep", exp, "--out", out, "--no-report")
    runs = [r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines()) if r.get("kind") == "run"]
    static = [r for r in runs if r["spec"]["script"] == "static.py"]
    assert len(static) == 1 and static[0]["status"] == "failed"
    assert ("the script's DDP model ran with static_graph=True and the job says False: the script changed it after "
            "building DDP; set static_graph = true") in static[0]["error"]
    records = {r["spec"].get("find_unused_parameters", False): r for r in runs if r["spec"]["script"] == "unused.py"}
    refused, ran = records[False], records[True]
    assert refused["status"] == "failed"
    assert ("the script builds DDP with find_unused_parameters=True and the job says False (the default): set "
            "find_unused_parameters = true") in refused["error"]
    assert ran["status"] == "ok", ran["error"]
    script = ran["result"]["script"]
    assert script["ddp"]["find_unused_parameters"] is True and script["ddp"]["bucket_cap_mb"] == 25.0
    assert script["ddp_overridden"] == {"bucket_cap_mb": {"script": 50.0, "ran": 25.0}}
