"""``ddpbench watch -- python driver.py`` on a Ray Train driver (TorchTrainer, two CPU workers): the workers Ray
starts get the watch's environment through the cluster the driver starts, and both ranks' steps stream; each
rank ends with its process group, said as it ends (Ray ends its workers without their atexit)."""

import csv
import os
import sys
import textwrap
from pathlib import Path

import pytest

from ddpbench.testing import run_cli
from ddpbench.watch.stream import STREAM_FILE

pytest.importorskip("ray.train", reason="the ray extra (pip install -e '.[ray]')")

DRIVER = """
    import ray, torch
    from ray.train import ScalingConfig
    from ray.train.torch import TorchTrainer, prepare_model

    def loop(config):
        model = prepare_model(torch.nn.Linear(4, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(20):
            opt.zero_grad(); model(torch.randn(8, 4)).sum().backward(); opt.step()

    if __name__ == "__main__":
        ray.init(num_cpus=2, include_dashboard=False)
        TorchTrainer(loop, scaling_config=ScalingConfig(num_workers=2, use_gpu=False)).fit()
        print("ray trained", flush=True)
"""


def test_the_workers_of_a_ray_train_driver_are_watched(tmp_path):
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(DRIVER))
    out = tmp_path / "w"
    # ray.init() writes ~/.ray/auth_token, which a later Ray cluster of ddpbench's (no token) then refuses:
    # this test's home is its own
    done = run_cli("watch", "--out", out, "--", sys.executable, driver,
                   env={**os.environ, "OMP_NUM_THREADS": "1", "HOME": str(tmp_path)}, timeout=300)
    assert done.returncode == 0 and "ray trained" in done.stdout, done.stderr[-3000:]
    with open(out / STREAM_FILE, newline="") as f:
        rows = list(csv.DictReader(f))
    for rank in ("0", "1"):
        assert [int(r["step"]) for r in rows if r["rank"] == rank] == list(range(20))
    states = [line.split()[-1] for line in done.stderr.splitlines() if line.split()[:1] in (["0"], ["1"])]
    assert states[-2:] == ["ended", "ended"]
    assert not (Path.home() / ".ray" / "auth_token").exists() or (tmp_path / ".ray" / "auth_token").exists()
