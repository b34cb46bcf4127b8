"""The corpus of real public training scripts (experiments/corpus/, docs/scripts.md): each runs
through ``python -m ddpbench sweep`` at world sizes 1 and 2, as its authors wrote it but for the
CPU and gloo changes listed in experiments/corpus/README.md, and ddpbench sees what its shape does.

Few steps and one launch per job; whether ddpbench's samples/s agree with the script's own timing
is benchmarks/script_corpus.py's question, not a test's.
"""

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
