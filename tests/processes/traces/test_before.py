"""``python -m ddpbench traces AFTER --before BEFORE`` as a user runs it, on generated folders: two folders of
different jobs (world size, GPU, model) refused in one line naming the difference and the flag that
overrides it, exit 2, nothing printed or written; with ``--compare-anyway`` compared, the difference said
above the comparison on the console and the page; a change of bucket size compared without a word; a folder
against itself (or its copy) said in one line. Then on Holistic Trace Analysis's public traces where present
(a V100 rank of a 2-rank job against an A100 rank of an 8-rank one): refused, and with the flag, every kernel
shown under a name of its own."""

import shutil

import pandas as pd
import pytest

from ddpbench.testing import run_cli, run_main
from ddpbench.testing.traces import PUBLIC_TRACES, public_folder, tiny_trace, write_job, write_trace
from ddpbench.traces.compare import ANYWAY, KERNEL_WIDTH


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """Generated 10-step jobs of the H100 layout: 2 ranks in 4 buckets of 25 MB, the same in 2 of 50 (one
    model, its buckets changed), in 4 of 10 MB (another model: fewer gradients), and 4 ranks."""
    root = tmp_path_factory.mktemp("jobs")
    made = {"two": {}, "two-buckets": {"buckets": 2, "bucket_mb": 50.0}, "smaller": {"bucket_mb": 10.0}}
    folders = {}
    for name, kw in made.items():
        folders[name] = root / name
        write_job(folders[name], 2, repeat=2, variants=2, **kw)
    folders["four"] = root / "four"
    write_job(folders["four"], 4, repeat=2, variants=2)
    return folders


def _refused(done, *words) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout == "", done.stdout  # refused before anything is said
    for word in ("--before", ANYWAY, *words):
        assert word in lines[0], (word, lines[0])
    return lines[0]


def test_two_world_sizes_are_refused_in_one_line_and_compared_when_told(jobs, tmp_path):
    out = tmp_path / "out"
    _refused(run_cli("traces", jobs["four"], "--before", jobs["two"], "--out", out, "--workers", "1"),
             "world size 2 before, 4 after")
    assert not out.exists()
    done = run_main("traces", jobs["four"], "--before", jobs["two"], "--out", out, "--workers", "1", ANYWAY)
    assert done.returncode == 0, done.stderr
    said = done.stdout.index(f"compared although these are not runs of one job ({ANYWAY}): world size 2 before, "
                             "4 after")
    assert said < done.stdout.index("four against two")
    page = (out / "index.html").read_text()
    assert page.index("world size 2 before, 4 after") < page.index("four against the traces before")
    assert set(pd.read_csv(out / "compare.csv")["job"]) == {"four"}


def test_another_gpu_is_refused(tmp_path):
    for name, gpu in (("h100", "NVIDIA H100 80GB HBM3"), ("a100", "NVIDIA A100-SXM4-80GB")):
        (tmp_path / name).mkdir()
        for rank in range(2):
            write_trace(tmp_path / name / f"rank{rank}.json.gz", tiny_trace(rank, 2, steps=8, gpu=gpu))
    _refused(run_main("traces", tmp_path / "a100", "--before", tmp_path / "h100", "--out", tmp_path / "out",
                      "--workers", "1"), "GPU NVIDIA H100 80GB HBM3 before, NVIDIA A100-SXM4-80GB after")


def test_another_model_is_refused_and_other_buckets_of_one_model_are_compared(jobs, tmp_path):
    _refused(run_main("traces", jobs["smaller"], "--before", jobs["two"], "--out", tmp_path / "a", "--workers", "1"),
             "model: 26.2 M gradient elements a step before, 10.5 M after")
    done = run_main("traces", jobs["two-buckets"], "--before", jobs["two"], "--out", tmp_path / "b", "--workers", "1")
    assert done.returncode == 0, done.stderr
    assert "not runs of one job" not in done.stdout and "two-buckets against two" in done.stdout
    # a model whose kernels are others (its gemm, most of its compute, renamed): refused by its kernels
    for name, kernels in (("one", ("sm90_gemm", "elementwise_kernel")), ("other", ("sm90_conv", "elementwise_kernel"))):
        (tmp_path / name).mkdir()
        for rank in range(2):
            write_trace(tmp_path / name / f"rank{rank}.json.gz", tiny_trace(rank, 2, steps=8, kernels=kernels))
    _refused(run_main("traces", tmp_path / "other", "--before", tmp_path / "one", "--out", tmp_path / "c",
                      "--workers", "1"), "model: only 17% of the before run's GPU compute time",
             "torch.compile changes the kernels too")


def test_a_folder_against_itself_or_its_copy_says_so_in_one_line(jobs, tmp_path):
    for before, why in ((jobs["two"], "the same folder"),
                        (shutil.copytree(jobs["two"], tmp_path / "copy"), "the same trace files, byte for byte")):
        out = tmp_path / f"out-{before.name}"
        done = run_main("traces", jobs["two"], "--before", before, "--out", out, "--workers", "1")
        assert done.returncode == 0, done.stderr
        said = [line for line in done.stdout.splitlines() if line.startswith("before and after:")]
        assert said == [f"before and after: --before names {why}: a run against itself differs by nothing, so "
                        "nothing is compared"]
        assert "medians over steps" not in done.stdout  # no table of zeros
        assert "nothing is compared" in (out / "index.html").read_text()
        assert not (out / "compare.csv").exists() and not (out / "compare_kernels.csv").exists()


def _public(name: str):
    folder = public_folder() / PUBLIC_TRACES[name].split("/")[0]
    if not folder.is_dir():
        pytest.skip(f"the public traces are not at {public_folder()} (read where present, never copied)")
    return folder


def test_a_v100_rank_of_2_against_an_a100_rank_of_8_is_refused_and_with_the_flag_its_kernels_read_apart(tmp_path):
    v100, a100 = _public("v100"), _public("a100")
    _refused(run_main("traces", v100, "--before", a100, "--out", tmp_path / "no", "--workers", "1"),
             "world size 8 before, 2 after", "GPU NVIDIA A100-PG509-200 before, Tesla V100-SXM2-16GB after")
    done = run_main("traces", v100, "--before", a100, "--out", tmp_path / "out", "--workers", "1", ANYWAY)
    assert done.returncode == 0, done.stderr
    kernels = pd.read_csv(tmp_path / "out" / "compare_kernels.csv")
    assert kernels["shown"].is_unique and kernels["shown"].str.len().max() <= KERNEL_WIDTH
    assert kernels["kernel"].str.len().max() > KERNEL_WIDTH  # whole in the CSV
    shown = [row.split("│")[1].strip() for row in done.stdout.splitlines() if row.startswith("│")]
    moved = kernels[kernels["verdict"] == "differs"]["shown"]
    assert set(moved) <= set(shown) and len(moved) > 10  # on the console as in the CSV, each its own
