"""The published scaling results the what-if model is to be checked against: every row cites its
source and place, states the hardware the model needs, and its efficiency follows from its own
throughputs wherever it says it was computed from them."""

from pathlib import Path

import pytest

import ddpbench

TABLE = Path(ddpbench.__file__).parent / "analysis" / "models" / "published_scaling.toml"
NEEDED = ("source", "citation", "url", "where", "model", "precision", "batch_per_gpu", "gpu", "gpus_per_node",
          "inter_node_gbit", "gpus", "scaling_efficiency", "scaling_efficiency_basis")


def rows():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads(TABLE.read_text(encoding="utf-8"))["result"]


def test_every_row_cites_its_source_and_gives_the_hardware():
    table = rows()
    assert len(table) >= 5 and len({r["source"] for r in table}) >= 3
    for r in table:
        missing = [k for k in NEEDED if k not in r]
        # a fact the compiler could not read in any source is left out and said so, never guessed
        if missing == ["inter_node_gbit"] and "NOT VERIFIED" in r.get("inter_node_fabric", ""):
            missing = []
        assert not missing, (r.get("source"), r.get("where"), missing)
        assert r["url"].startswith("https://") and r["scaling_efficiency"] > 0
        # above 1.05 only as the source published it, against a multi-GPU baseline whose accumulation
        # falls as nodes grow (TensorFlow BERT's pre-training tables), and outside the model
        assert r["scaling_efficiency"] <= 1.05 or (
            "baseline_gpus" in r and "weak-scaling column gives" in r["scaling_efficiency_basis"]
            and r["aggregation"] == "horovod-accumulation"), (r["source"], r["where"])


def test_computed_efficiencies_follow_from_the_rows_own_throughputs():
    checked = 0
    for r in rows():
        if not str(r["scaling_efficiency_basis"]).startswith("computed") or "n_gpu_samples_per_s" not in r:
            continue
        single = r.get("single_gpu_samples_per_s")
        if not single:
            continue
        assert r["scaling_efficiency"] == pytest.approx(r["n_gpu_samples_per_s"] / (r["gpus"] * single), abs=2e-3), r
        checked += 1
    assert checked >= 20
