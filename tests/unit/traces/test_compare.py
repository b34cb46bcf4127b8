"""Two trace folders before and after (ddpbench/traces/compare.py): kernel names are shortened so that two
never read alike, and every figure of the console, the page and the CSV carries its unit."""

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpbench.testing.fuzzing import examples
from ddpbench.testing.traces import tiny_trace, write_trace
from ddpbench.traces.compare import KERNEL_WIDTH, compare_jobs, short_names
from ddpbench.traces.folder import read_folder


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


@settings(max_examples=examples(300), deadline=None)
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

    before = _two(tmp_path / "a")
    after = _two(tmp_path / "b", late_us=50.0)  # the gemm 50 µs longer: a line in ms and a kernel in µs moved
    c = compare_jobs(before, after)
    assert (c["kernels"]["verdict"] == "differs").any()
    print_trace_comparison([c])
    out = capsys.readouterr().out
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│")]
    units = {row[0]: {cell.split()[-1] for cell in row[1:5] if cell != "-"} for row in rows}
    assert units["step"] == units["compute"] == {"ms"} and units["sm90_gemm"] == {"µs"}, units
    (tmp_path / "out").mkdir()
    page = write_trace_report([after], tmp_path / "b", tmp_path / "out", [c])
    html = page.read_text()
    for unit in ("ms", "µs"):
        assert all(f"{what} ({unit})" in html for what in ("before", "after", "shift", "95 % interval"))
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

