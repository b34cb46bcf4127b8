"""The corpus of real public training scripts (experiments/corpus/, docs/scripts.md): each runs
through ``python -m ddpbench sweep`` at world sizes 1 and 2, as its authors wrote it but for the
CPU and gloo changes listed in experiments/corpus/README.md, and ddpbench sees what its shape does.

Few steps and one launch per job; whether ddpbench's samples/s agree with the script's own timing
is benchmarks/script_corpus.py's question, not a test's.
"""

import json

import pytest
import tomllib

from ddpbench.testing.scripts import load_benchmark

corpus = load_benchmark("script_corpus")


def test_a_corpus_script_not_in_the_checkout_is_named_not_run(tmp_path, monkeypatch):
    # the public scripts are not committed: the benchmark and the tests above skip one that is absent,
    # naming the files, and run it once they are placed
    script = corpus.BY_NAME["nanogpt"]
    monkeypatch.setattr(corpus, "CORPUS", tmp_path)
    (tmp_path / "nanogpt").mkdir()
    (tmp_path / "nanogpt" / "train.py").write_text("")
    why = corpus.missing(script)
    assert "experiments/corpus/nanogpt/model.py, nanogpt/configurator.py" in why and "train.py" not in why
    for name in script.files:
        (tmp_path / name).write_text("")
    assert corpus.missing(script) is None
    assert all(s.files for s in corpus.SCRIPTS)


def test_epochs_lengthens_the_tutorials_windows_into_whole_epochs(tmp_path):
    script = corpus.BY_NAME["tutorial_torchrun"]
    spec = tomllib.loads(corpus.experiment_copy(script, tmp_path, 33, repeats=4).read_text())
    assert spec["defaults"]["script_args"][0] == "33" and spec["defaults"]["repeats"] == 4
    # 2048 samples an epoch, 32 a rank: 64 steps at one rank, 32 at two; two to warm up, (33 - 3) // 3 measured
    assert [(g["world_size"], g["warmup_steps"], g["steps"]) for g in spec["grid"]] == [
        ([1], [128], [640]), ([2], [64], [320])]
    assert corpus.script_args(script, 2, 33)[:2] == ["33", "100"]


def test_the_scripts_own_epochs_over_the_sweeps_measured_steps(tmp_path):
    """A sweep's launch whose rank 0 log holds stamped epoch lines (benchmarks/script_corpus.py's STAMP):
    the script's own samples/s over the epochs the sweep measured, pooled over launches."""
    script = corpus.BY_NAME["tutorial_torchrun"]
    records = []
    for repeat, epoch_s in enumerate((0.010, 0.030)):
        log = tmp_path / f"r{repeat}.log"
        # warm-up epochs 0-1, phase steps 2-4, measured 5-7, no-sync 8-10 (32 steps an epoch at two ranks)
        log.write_text("".join(f"@{100 + e * epoch_s:.6f} [GPU0] Epoch {e} | Batchsize: 32 | Steps: 32\n"
                               for e in range(10)) + "a line of its own\n")
        records.append({"kind": "run", "status": "ok", "logs": [str(log)],
                        "spec": {"world_size": 2, "batch_size": 32, "warmup_steps": 64, "steps": 96}})
    records.append({"kind": "run", "status": "failed", "logs": [], "spec": {}})
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    # 3 epochs of 2048 samples in each launch, over 3 x 10 ms and 3 x 30 ms
    assert corpus.same_steps(script, tmp_path) == {2: pytest.approx(2 * 3 * 2048 / (0.03 + 0.09))}
    # measured steps that are not whole epochs give nothing
    records[0]["spec"]["steps"] = 40
    records[1]["spec"]["steps"] = 40
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert corpus.same_steps(script, tmp_path) == {}


def test_a_stamped_line_is_timed_by_its_stamp_an_unstamped_one_by_its_arrival():
    script = corpus.BY_NAME["tutorial_torchrun"]
    lines = [(5.0, "@1.250000 [GPU0] Epoch 0 | Batchsize: 32"), (5.0, "[GPU1] Epoch 0 | Batchsize: 32"),
             (6.0, "[GPU0] Epoch 1 | Batchsize: 32"), (7.0, "@2.000000 [GPU0] Epoch 1 | twice")]
    assert corpus.epoch_starts(script, lines) == {0: 1.25, 1: 6.0}
