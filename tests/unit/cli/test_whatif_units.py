"""whatif's answers in the units people ask for, through the command: sizes in whole nodes where --gpus-per-node is
typed, the memory fit in the table and the answers (never a size that does not fit), the model's limit on every
path, every default in --help, and each bad input one line, exit 2."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpbench.testing import run_main

LLAMA = ("whatif", "--model", "llama-7b", "--compute-ms", "900", "--grad-dtype", "bf16", "--inter-gbit", "800")
MLP = ("whatif", "--model", "mlp", "--compute-ms", "100")
FOLDER = "reports/examples/world-sizes-cpu"


def _line(out, head: str) -> str:
    assert out.returncode == 0, out.stderr
    return next(line for line in out.stdout.splitlines() if line.startswith(head))


def _rows(out, head: str = " devices") -> list[list[str]]:
    lines = out.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(head))
    rows = []
    for line in lines[start + 1:]:
        if not line.split() or not line.split()[0].isdigit():
            break
        rows.append(line.split())
    return rows


def test_sizes_typed_in_whole_nodes_are_multiples_with_a_nodes_column_and_the_largest_is_whole_nodes():
    out = run_main(*MLP, "--gpus-per-node", "8", "--inter-gbit", "100")
    rows = _rows(out)
    assert [int(r[0]) for r in rows] == [8, 16, 32, 64, 128, 256, 512, 1024]
    assert [int(r[1]) for r in rows] == [1, 2, 4, 8, 16, 32, 64, 128]  # the nodes column
    largest = _line(out, "largest world size at 90% or better in whole nodes of 8")
    found = re.search(r"whole nodes of 8: (\d+)", largest)
    assert found is None or int(found.group(1)) % 8 == 0
    assert int(re.search(r"in whole nodes of 8: none \(one node of 8 misses it\)|: (\d+) \(", largest).group(1)
               or 0) % 8 == 0


def test_sizes_within_one_node_may_be_asked_beside_whole_nodes():
    out = run_main(*MLP, "--gpus-per-node", "8", "--inter-gbit", "100", "--world-sizes", "1,2,4,8,64")
    assert out.returncode == 0, out.stderr
    assert [int(r[0]) for r in _rows(out)] == [1, 2, 4, 8, 64]


@pytest.mark.parametrize(("target", "anywhere", "whole"), [
    ("0.9", "5", "none (one node of 8 misses it)"),  # the "largest world size at 90 %: 5" on 8-GPU nodes
    ("0.8", "140", "136 (17 node(s))"),
])
def test_typed_whole_nodes_search_whole_nodes_untyped_any_size_as_before(target, anywhere, whole):
    args = (*MLP, "--inter-gbit", "100", "--target-efficiency", target)
    head = f"largest world size at {float(target):.0%} or better"
    assert _line(run_main(*args), head).startswith(f"{head}: {anywhere};")
    assert _line(run_main(*args, "--gpus-per-node", "8"), head).startswith(f"{head} in whole nodes of 8: {whole};")


def test_a_model_that_does_not_fit_is_marked_in_every_table_and_recommended_nowhere():
    out = run_main(*LLAMA, "--gpus-per-node", "8", "--device-memory-gb", "80", "--batch-size", "8",
                   "--samples", "20000000", "--world-sizes", "8,16")
    assert "memory: 6.74 billion trainable parameters x 16 bytes" in out.stdout
    assert [r[-2] for r in _rows(out)] == ["no", "no"]  # the step table's fits column
    assert [r[-1] for r in _rows(out, "devices  nodes  efficiency")] == ["no", "no"]  # the time to finish's
    assert _line(out, "which size to ask for").endswith("no size asked holds its parameters, gradients and optimizer "
                                                        "state in 80 GB a device (memory, above)")
    assert "finishes first" not in out.stdout and "cheapest in device-hours" not in out.stdout
    assert "none that fits" in _line(out, "largest world size at 90% or better")


def test_under_zero3_the_answers_start_at_the_smallest_size_that_fits():
    out = run_main(*LLAMA, "--gpus-per-node", "8", "--device-memory-gb", "10", "--shard", "zero3", "--batch-size",
                   "8", "--samples", "20000000", "--world-sizes", "8,16,32")
    assert [r[-3] for r in _rows(out)] == ["no", "yes", "yes"]  # 108 GB over 8 is 13.5, over 16 6.7
    assert "does not fit at 8 device(s)" in out.stdout
    for head in ("finishes first", "cheapest in device-hours", "largest whose efficiency band"):
        answer = _line(out, head)
        assert "(of the sizes that fit: 16 and up)" in answer
        assert not re.search(r": 8\b|\b8 or\b|, 8\b", answer.split("(of the sizes that fit: 16 and up)")[1])


def test_the_gpus_own_memory_from_a_folder_and_the_memory_answered_on_the_measured_link():
    out = run_main("whatif", "--from", "reports/examples/gpu-h200-2", "--inter-gbit", "400", "--world-sizes", "8")
    assert "against 141 GB a device (NVIDIA H200: NVIDIA H200 datasheet: 141 GB HBM3e)" in out.stdout
    on_link = run_main("whatif", "--from", FOLDER, "--device-memory-gb", "0.05", "--target-efficiency", "0.3")
    assert "does not fit: 0.0803 GB a device against 0.05 GB at every size (DDP)" in on_link.stdout  # SGD: 12 bytes
    assert "on the link it measured: none that fits" in on_link.stdout
    assert "devices a node at" not in on_link.stdout  # never swapped for a described cluster


def test_the_inter_node_rate_is_named_for_whole_nodes():
    out = run_main(*MLP, "--gpus-per-node", "6", "--inter-gbit", "100")
    assert _line(out, "inter-node rate").startswith("inter-node rate 1020 devices need for 90%")  # 170 nodes of 6


@pytest.mark.parametrize("cluster", [(), ("--inter-gbit", "100")])  # on the link it measured, on a cluster described
def test_the_memory_counts_the_optimizer_the_folder_trained_with_unless_typed(cluster):
    sgd = run_main("whatif", "--from", FOLDER, *cluster, "--device-memory-gb", "80")
    assert sgd.returncode == 0, sgd.stderr
    assert "x 12 bytes" in sgd.stdout and "the optimizer sgd: the one its jobs trained with" in sgd.stdout
    adam = run_main("whatif", "--from", FOLDER, *cluster, "--device-memory-gb", "80", "--optimizer", "adam")
    assert "x 16 bytes" in adam.stdout and "the one its jobs trained with" not in adam.stdout
    assert ("devices a node at" in adam.stdout) == bool(cluster)  # typed, it never swaps the link measured
    bad = run_main("whatif", "--from", FOLDER, *cluster, "--optimizer", "lamb")
    assert bad.returncode == 2 and bad.stderr.strip() == "error: command line: --optimizer: must be one of adam, sgd " \
        "(got 'lamb')"


@pytest.mark.parametrize("argv", [
    (*MLP, "--world-sizes", "2,70000"),
    ("whatif", "--from", FOLDER, "--world-sizes", "2,70000"),
    ("whatif", "--from", FOLDER, "--inter-gbit", "100", "--world-sizes", "2,70000"),
    (*MLP, "--global-batch", "1024", "--micro-batch", "8", "--world-sizes", "1,70000"),
])
def test_sizes_past_the_models_limit_are_refused_on_every_path(argv):
    out = run_main(*argv)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip() == ("error: command line: --world-sizes: at most 65536 devices (the model's limit; got "
                                  "70000)")


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([
    (("--device-memory-gb", "0"), "--device-memory-gb: must be a number of GB above 0 (got 0)"),
    (("--device-memory-gb", "-80"), "--device-memory-gb: must be a number of GB above 0 (got -80)"),
    (("--device-memory-gb", "1"), "--device-memory-gb: 1 GB holds less than one copy of the parameters (13.5 GB in "
                                  "bf16), which every device keeps whole under DDP"),
    (("--device-memory-gb", "5", "--shard", "zero2"), "which every device keeps whole under zero2"),
    (("--gpus-per-node", "0"), "--gpus-per-node: must be 1 or more (got 0)"),
    (("--gpus-per-node", "8", "--world-sizes", "4,8,12,20"), "--world-sizes: 12, 20 not whole nodes of 8 devices "
                                                             "(--gpus-per-node): past one node give multiples of 8"),
]), st.sampled_from([("--world-sizes", "8"), ("--batch-size", "4", "--samples", "1000000"), ()]))
def test_each_bad_input_is_one_line_and_exit_2(case, extra):
    flags, said = case
    more = () if extra[:1] and extra[0] in flags else extra
    out = run_main(*LLAMA, *flags, *more)
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and said in out.stderr, out.stderr


def test_every_whatif_option_says_its_default_or_that_it_has_none():
    from ddpbench.cli.program import build_parser

    parser = build_parser()  # every option of whatif, each checked
    whatif = next(a for a in parser._subparsers._group_actions[0].choices.items() if a[0] == "whatif")[1]
    missing = [a.option_strings[-1] for a in whatif._actions
               if a.option_strings and a.dest != "help" and "default" not in (a.help or "")]
    assert len(whatif._actions) > 30 and missing == []


def test_a_folder_measured_at_three_sizes_gives_its_own_band_where_narrower_and_says_so():
    out = run_main("whatif", "--from", FOLDER, "--inter-gbit", "100", "--gpus-per-node", "1", "--world-sizes",
                   "2,4,8,16")
    used = [line for line in out.stdout.splitlines() if line.startswith("band used:")]
    assert len(used) == 2 and all("your folder's own hold-out check" in line and "at 2, 4, 8 device(s)" in line
                                  for line in used)
    two = next(line.split() for line in out.stdout.splitlines() if line.split()[:1] == ["2"])
    assert two[-3] == "65-100%"  # mlp-m at 2: 90 % over a step 38 % longer, 65 %; the published band is wider


def test_a_folder_not_checked_says_the_published_band_is_used_and_why():
    out = run_main("whatif", "--from", "reports/examples/quick-cpu", "--inter-gbit", "100", "--world-sizes", "2,4")
    assert out.returncode == 0, out.stderr
    assert "band used: the published one (python -m ddpbench whatif --validate): your folder's own hold-out check " \
           "gives none (not checked: measured at fewer than 3 world sizes" in out.stdout
