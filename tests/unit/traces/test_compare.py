"""Two trace folders before and after (ddpbench/traces/compare.py): only runs of one job are compared (the
world size, the device and its GPUs, the backend, the model by its gradients and by its kernels), a folder
against itself is said, kernel names are shortened so that two never read alike, and every figure of the
console, the page and the CSV carries its unit."""

import math
import shutil

import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ddpbench.testing import ROOT
from ddpbench.testing.fuzzing import examples
from ddpbench.testing.traces import tiny_trace, write_trace
from ddpbench.traces.compare import (
    ANYWAY,
    KERNEL_WIDTH,
    SHARED_KERNELS,
    compare_jobs,
    differences,
    gradient_elements,
    itself,
    kernel_shares,
    paired,
    short_names,
)
from ddpbench.traces.folder import read_folder

H100, A100 = "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"


def _write(folder, traces):
    folder.mkdir(parents=True, exist_ok=True)
    for rank, trace in enumerate(traces):
        write_trace(folder / f"rank{rank}.json.gz", trace)
    return folder


def _job(folder, traces):
    (job,) = read_folder(_write(folder, traces), workers=1)
    return job


def _two(folder, **kw):
    """A 2-rank job of tiny traces (10 steps), each rank's built with ``kw``."""
    world = kw.pop("world_size", 2)
    return _job(folder, [tiny_trace(rank, world, steps=10, **kw) for rank in range(2)])


def _sized(trace: dict, elements: int, dtype: str = "Float") -> dict:
    """``trace`` with each all-reduce carrying ``elements`` of ``dtype``."""
    for e in trace["traceEvents"]:
        if "AllReduce" in e["name"]:
            e["args"].update({"In msg nelems": elements, "Out msg nelems": elements, "dtype": dtype})
    return trace


def test_two_runs_of_one_job_have_no_difference(tmp_path):
    before = _two(tmp_path / "a", gpu=H100)
    after = _two(tmp_path / "b", gpu=H100, late_us=50.0)
    assert differences(before, after) == []
    assert kernel_shares(before, after) == (1.0, 1.0)
    assert gradient_elements(before) == gradient_elements(after) == 2**20


@pytest.mark.parametrize("after, words", [
    ({"world_size": 4}, "world size 2 before, 4 after"),
    ({"gpu": A100}, f"GPU {H100} before, {A100} after"),
    ({"backend": "gloo"}, "backend nccl before, gloo after"),
    # the gemm (half the step of the 0.6 of compute) renamed: 0.1 / 0.6 of the compute in kernels both ran
    ({"kernels": ("sm80_xmma_gemm", "elementwise_kernel")}, "model: only 17% of the before run's GPU compute time"),
])
def test_each_difference_between_two_jobs_is_named(tmp_path, after, words):
    before = _two(tmp_path / "a", gpu=H100)
    found = differences(before, _two(tmp_path / "b", **{"gpu": H100, **after}))
    assert len(found) == 1 and found[0].startswith(words), found


def test_most_kernels_in_common_are_one_model_and_the_device_decides_before_the_kernels(tmp_path):
    before = _two(tmp_path / "a", gpu=H100)
    # the small kernel renamed (a change of one operator): 0.5 / 0.6 of the compute is in kernels both ran
    same = _two(tmp_path / "b", gpu=H100, kernels=("sm90_gemm", "vectorized_elementwise_kernel"))
    assert kernel_shares(before, same) == pytest.approx((5 / 6, 5 / 6)) and 5 / 6 >= SHARED_KERNELS
    assert differences(before, same) == []
    # on another GPU the same model runs other kernels: the GPU is named, not the model
    other = _two(tmp_path / "c", gpu=A100, kernels=("ampere_sgemm_128x64_nn", "elementwise_kernel"))
    assert differences(before, other) == [f"GPU {H100} before, {A100} after"]


def test_the_gradients_a_step_tell_models_apart_and_a_compression_hook_does_not(tmp_path):
    before = _job(tmp_path / "a", [_sized(tiny_trace(r, 2, steps=10), 2**20) for r in range(2)])
    smaller = _job(tmp_path / "b", [_sized(tiny_trace(r, 2, steps=10), 2**19) for r in range(2)])
    assert differences(before, smaller) == ["model: 1.05 M gradient elements a step before, 0.524 M after"]
    # the same elements in half precision (an fp16 compression hook), or 0.5 % more: one model
    half = _job(tmp_path / "c", [_sized(tiny_trace(r, 2, steps=10), 2**20, "Half") for r in range(2)])
    near = _job(tmp_path / "d", [_sized(tiny_trace(r, 2, steps=10), int(2**20 * 1.005)) for r in range(2)])
    assert differences(before, half) == differences(before, near) == []
    # sizes the trace does not give: nothing said of them
    unsized = _job(tmp_path / "e", [_sized(tiny_trace(r, 2, steps=10), 2**19, "") for r in range(2)])
    assert math.isnan(gradient_elements(unsized)) and differences(before, unsized) == []


def test_a_cpu_trace_against_a_gpu_one_names_the_device(tmp_path):
    folder = tmp_path / "cpu"
    folder.mkdir()
    for f in sorted((ROOT / "reports/examples/trace-cpu/traces").glob("1a96d3955def-r0.rank*.json.gz")):
        shutil.copy(f, folder / f.name)
    (cpu,) = read_folder(folder, workers=1)
    gpu = _two(tmp_path / "gpu", backend="gloo")
    assert cpu.world_size == 2 and cpu.backend == "gloo"
    assert differences(cpu, gpu)[0] == "device cpu before, gpu after"


def test_paired_refuses_two_jobs_in_one_line_unless_told(tmp_path):
    from ddpbench.errors import InputError

    before, after = _two(tmp_path / "a"), _two(tmp_path / "b", world_size=4)
    with pytest.raises(InputError) as refused:
        paired([before], [after], "before/", against="after/")
    line = str(refused.value)
    assert line.startswith("before/: --before: is not a run of the same job as after/: world size 2 before, 4 after")
    assert ANYWAY in line and "\n" not in line
    (compared,) = paired([before], [after], "before/", anyway=True, against="after/")
    assert compared["overridden"] == ["world size 2 before, 4 after"]
    assert paired([before], [_two(tmp_path / "c")], "before/")[0]["overridden"] == []


def test_a_folder_against_itself_or_its_copy_is_said_and_another_run_is_not(tmp_path):
    folder = _write(tmp_path / "a", [tiny_trace(0, 2), tiny_trace(1, 2)])
    assert "the same folder" in itself(folder, tmp_path / "a" / ".." / "a")["itself"]
    copy = shutil.copytree(folder, tmp_path / "copy")
    (copy / "rank0.json.gz").rename(copy / "other-name.json.gz")
    assert "byte for byte" in itself(folder, copy)["itself"]
    other = _write(tmp_path / "b", [tiny_trace(0, 2), tiny_trace(1, 2, late_us=1.0)])
    assert itself(folder, other) is None


# kernel names as PyTorch and its libraries write them, and names made to differ only where a cut hides it
NAMES = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, "
    "at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> >(int, "
    "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, "
    "at::detail::Array<char*, 3>)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, "
    "at::native::binary_internal::DivFunctor<float> >, at::detail::Array<char*, 3> >(int, "
    "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::DivFunctor<float> >, "
    "at::detail::Array<char*, 3>)",
    *(f"void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_{how}_per_row_1<float, float, "
      f"float, {n}ul>(at::GenericPackedTensorAccessor<float, 2ul, at::RestrictPtrTraits, int>)"
      for how in ("cta", "warp") for n in (2, 5)),
    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)",  # alike but for its parameters
    "void first::space::gemm_kernel<float>(float*)",
    "void second::space::gemm_kernel<float>(float*)",  # alike but for its namespace
    "Memcpy HtoD (Pinned -> Device)",
    "Memcpy HtoD (Pageable -> Device)",
    "volta_sgemm_128x64_nn",
]


def test_kernel_names_are_shortened_and_two_never_read_alike():
    shown = short_names(NAMES)
    assert len(set(shown.values())) == len(NAMES)
    assert all(len(s) <= KERNEL_WIDTH for s in shown.values()), shown
    # the noise goes (void, namespaces, the parameters); a spaced parenthesis is the name's own
    assert shown["volta_sgemm_128x64_nn"] == "volta_sgemm_128x64_nn"
    assert shown["Memcpy HtoD (Pinned -> Device)"] == "Memcpy HtoD (Pinned -> Device)"
    assert short_names(["void at::native::foo<float>(int, float*)"]) == {
        "void at::native::foo<float>(int, float*)": "foo<float>"}
    # where names differ, that part is shown: the functor, the kind of row, the size
    assert "MulFunctor" in shown[NAMES[0]] and "DivFunctor" in shown[NAMES[1]]
    embedding = [shown[n] for n in NAMES[2:6]]
    assert [("cta" in s, "warp" in s, "2ul" in s, "5ul" in s) for s in embedding] == [
        (True, False, True, False), (True, False, False, True), (False, True, True, False), (False, True, False, True)]
    # names alike but for the noise keep what tells them apart
    assert shown[NAMES[6]] != shown[NAMES[7]] and shown[NAMES[8]] != shown[NAMES[9]]


#: names each differing from the others in a letter of its own: the words where one differs from each other name
#: do not fit in 10 characters, so most are cut alike, and only their numbers tell them apart
CUT_ALIKE = ["a_b_c_d_e_f_g_h_i_j_k_l", *("a_b_c_d_e_f_g_h_i_j_k_l".replace(x, x.upper()) for x in "cdefghijkl")]


@settings(max_examples=examples(300), deadline=None)
@example(names=CUT_ALIKE, width=10)
@given(st.lists(st.lists(st.sampled_from(["a", "kernel", "<", ">", ", ", "::", "float", "2ul", "_", "(int)"]),
                         min_size=1, max_size=40).map("".join), min_size=1, max_size=12, unique=True),
       st.integers(10, 80))
def test_no_two_names_are_ever_shown_alike(names, width):
    shown = short_names(names, width)
    assert len(set(shown.values())) == len(names)
    assert all(len(s) <= width or s.endswith("]") for s in shown.values())


def test_every_figure_carries_its_unit_on_the_console_the_page_and_the_csv(tmp_path, capsys):
    from ddpbench.report.traces_page import write_trace_report
    from ddpbench.show.answers import print_trace_comparison

    before = _two(tmp_path / "a", world_size=4)
    after = _two(tmp_path / "b", late_us=50.0)  # the gemm 50 µs longer: a line in ms and a kernel in µs moved
    (c,) = paired([before], [after], "a", anyway=True, against="b")
    assert (c["kernels"]["verdict"] == "differs").any()
    print_trace_comparison([c])
    out = capsys.readouterr().out
    said = out.index(f"({ANYWAY}): world size 4 before, 2 after")
    assert said < out.index("against")  # above the table
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│")]
    units = {row[0]: {cell.split()[-1] for cell in row[1:5] if cell != "-"} for row in rows}
    assert units["step"] == units["compute"] == {"ms"} and units["sm90_gemm"] == {"µs"}, units
    (tmp_path / "out").mkdir()
    page = write_trace_report([after], tmp_path / "b", tmp_path / "out", [c])
    html = page.read_text()
    for unit in ("ms", "µs"):
        assert all(f"{what} ({unit})" in html for what in ("before", "after", "shift", "95 % interval"))
    assert "Compared although these are not runs of one job" in html and "world size 4 before, 2 after" in html
    lines = pd.read_csv(tmp_path / "out" / "compare.csv")
    kernels = pd.read_csv(tmp_path / "out" / "compare_kernels.csv")
    assert list(lines.columns) == ["job", "before_job", "line", "label", "before_ms", "after_ms", "shift_ms",
                                   "low_ms", "high_ms", "verdict"]
    assert list(kernels.columns) == ["job", "before_job", "kernel", "shown", "before_us", "after_us", "shift_us",
                                     "low_us", "high_us", "verdict"]
    assert kernels.set_index("kernel").loc["sm90_gemm", "shift_us"] == pytest.approx(50.0)
    assert lines.set_index("line").loc["compute_ms", "shift_ms"] == pytest.approx(0.05)


def test_the_csv_keeps_whole_kernel_names_where_the_page_shows_them_short(tmp_path):
    from ddpbench.report.traces_page import write_trace_report

    long_a, long_b = (f"void at::native::{'very_long_' * 6}kernel<float, {n}ul>(int)" for n in (2, 5))
    before = _two(tmp_path / "a", kernels=(long_a, long_b))
    after = _two(tmp_path / "b", kernels=(long_a, long_b), late_us=50.0)
    c = compare_jobs(before, after)
    ours = c["kernels"][c["kernels"]["what"].isin([long_a, long_b])]
    assert len(ours) == 2 and len(set(ours["label"])) == 2 and all(len(s) <= KERNEL_WIDTH for s in ours["label"])
    (tmp_path / "out").mkdir()
    write_trace_report([after], tmp_path / "b", tmp_path / "out", [c])
    kernels = pd.read_csv(tmp_path / "out" / "compare_kernels.csv")
    assert {long_a, long_b} <= set(kernels["kernel"]) and list(kernels["shown"]) == list(c["kernels"]["label"])
    assert f'title="{long_a}"' in (tmp_path / "out" / "index.html").read_text().replace("&lt;", "<").replace(
        "&gt;", ">")


def test_the_committed_h100_traces_tell_the_transformer_from_the_mlp_as_the_docs_say():
    """docs/traces.md: of transformer-l's compute time on an H100, 39 % is in kernels mlp-xl also ran (refused);
    mlp-xl's in buckets of 25 MB and of 100 MB share 100 %."""
    jobs = {job.name: job for job in read_folder(ROOT / "reports/examples/gpu-trace-frameworks-h100", workers=1)}
    mlp25, mlp100, transformer = (jobs[f"{key}-r0"] for key in ("d62b1d479ac2", "c3b715b26852", "59e9a46ee1e3"))
    assert round(100 * kernel_shares(transformer, mlp25)[0]) == 39
    assert differences(transformer, mlp25) == [
        "model: only 39% of the before run's GPU compute time is in kernels both runs ran (runs of one model share at "
        "least 50%)"]
    assert kernel_shares(mlp25, mlp100) == (1.0, 1.0) and differences(mlp25, mlp100) == []
