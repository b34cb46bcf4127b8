"""A script job's label: its script and the arguments that differ between the sweep's jobs running it,
never its whole command line (a Hugging Face ``Trainer`` script's is about 350 characters), and never one
label for two different command lines."""

from __future__ import annotations

import json
import shlex

from hypothesis import given, settings
from hypothesis import strategies as st

from ddpbench.analysis.core.jobs import describe, label_fields
from ddpbench.analysis.folder import load
from ddpbench.experiment.script_names import script_label, script_labels
from ddpbench.report.build import write_report
from ddpbench.testing import ROOT

#: the arguments of a Hugging Face Trainer language-model script, as a user would give them
TRAINER = ["--model_type", "gpt2", "--config_overrides", "n_embd=64,n_layer=2,n_head=2", "--tokenizer_name", "gpt2",
           "--dataset_name", "wikitext", "--dataset_config_name", "wikitext-2-raw-v1", "--per_device_train_batch_size",
           "8", "--do_train", "--output_dir", "/tmp/clm", "--overwrite_output_dir", "--max_steps", "40",
           "--logging_steps", "10", "--report_to", "none", "--dataloader_num_workers", "0", "--save_strategy", "no"]


def args(*values: str) -> str:
    return json.dumps(list(values))


def test_a_trainer_script_is_named_by_the_one_argument_its_jobs_change():
    small = args(*TRAINER)
    large = args(*[("16" if a == "8" else a) for a in TRAINER])
    labels = script_labels([("examples/run_clm.py", small), ("examples/run_clm.py", large)])
    assert labels == {("examples/run_clm.py", small): "run_clm.py --per_device_train_batch_size 8",
                      ("examples/run_clm.py", large): "run_clm.py --per_device_train_batch_size 16"}
    assert len(script_label("examples/run_clm.py", small)) > 300  # what it was named before
    # one command line for every job (world sizes 1 and 2): the script's name alone
    assert script_labels([("examples/run_clm.py", small)]) == {("examples/run_clm.py", small): "run_clm.py"}


def test_arguments_in_another_order_keep_their_whole_command_lines():
    a, b = args("--x", "1", "--y", "2"), args("--y", "2", "--x", "1")
    assert script_labels([("t.py", a), ("t.py", b)]) == {("t.py", a): "t.py --x 1 --y 2",
                                                          ("t.py", b): "t.py --y 2 --x 1"}


TOKENS = st.sampled_from(["--lr", "--epochs", "--batch-size", "--fp16", "-v", "--seed=1", "--seed=2", "1", "2", "0.5",
                          "data", "out dir", "-3"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(TOKENS, max_size=8), min_size=1, max_size=5))
def test_generated_command_lines_get_distinct_short_labels_that_name_their_script(lines):
    jobs = [("scripts/train.py", args(*line)) for line in lines]
    labels = script_labels(jobs)
    assert set(labels) == set(jobs)
    for (script, given_args), label in labels.items():
        words = shlex.split(label)
        assert words[0] == "train.py"
        assert set(words[1:]) <= set(json.loads(given_args))  # only its own arguments
        assert len(label) <= len(script_label(script, given_args))
    by_label = {}
    for pair, label in labels.items():
        by_label.setdefault(label, set()).add(pair)
    assert all(len(pairs) == 1 for pairs in by_label.values()), by_label  # never one label for two command lines


def test_the_script_examples_verdict_names_its_jobs_by_script_alone():
    measured = load(ROOT / "reports" / "examples" / "script-cpu")
    summary = measured.summary
    names = {describe(r, label_fields(summary), summary) for _, r in summary.iterrows()}
    assert names == {"train_cnn.py ws=1", "train_cnn.py ws=2"}
    assert all("--epochs" not in text for _, text in measured.verdict)
    assert measured.contradictions == []  # the checker names the jobs the same way, from the records


def test_the_report_keeps_each_script_jobs_whole_command_line_beside_its_name(tmp_path):
    import shutil

    for name in ("results.jsonl", "experiment.toml"):
        shutil.copy(ROOT / "reports" / "examples" / "script-cpu" / name, tmp_path / name)
    page = write_report(tmp_path).read_text(encoding="utf-8")
    whole = "scripts/train_cnn.py --epochs 4 --batch-size 32 --samples 4096 --snapshot-every 1"
    assert page.count(whole) == 1 and "<td>train_cnn.py</td>" in page  # once, in the experiment's table
