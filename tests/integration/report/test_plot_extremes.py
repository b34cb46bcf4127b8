"""Plots that cannot crash (issue 41): every figure of the report survives the values the results
validator lets through -- huge (1e308, 1.7e308), tiny (5e-324), 0, all equal, one row, NaN where a
figure may be missing, labels holding mathtext such as ``$\\frac{1$`` -- or is left out with one line
saying why (:func:`ddpbench.report.plots.common.guarded`), and the page still renders.

The figure functions are found as the page calls them: each section of the page runs once on a
few committed example folders with every guarded figure function replaced by a recorder
(:func:`recorded_calls`), and every figure function of ``ddpbench/report/plots`` must be among those
called. Hypothesis then changes the values of the recorded tables and calls the real function. One
end-to-end test writes a folder of 1e308 ms steps through the record writers and runs the command line.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import pkgutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ddpbench.analysis.history import compare
from ddpbench.analysis.history.changes import trend_changes
from ddpbench.analysis.history.gates import parse_gate
from ddpbench.analysis.history.trend import trend_table
from ddpbench.experiment.collectives import CollectiveSpec
from ddpbench.experiment.spec import JobSpec
from ddpbench.report import plots, sections
from ddpbench.report.build import SECTIONS, load_context, write_context
from ddpbench.report.page import ReportContext, Section, html
from ddpbench.report.plots import common
from ddpbench.report.plots.common import figure, guarded, leaving_out, save
from ddpbench.report.trend_page import families
from ddpbench.testing.fuzzing import examples
from ddpbench.testing.histories import synthetic_history
from ddpbench.testing.pages import assert_inert_page, assert_one_line_or_ok, run_reader
from ddpbench.testing.records import PNG_MAGIC, ok, write_results

EXAMPLES = Path(__file__).resolve().parents[3] / "reports" / "examples"
#: committed examples whose pages call every figure function between them
FOLDERS = ("quick-cpu", "network-cpu", "gpu-models-h100", "gpu-trace-frameworks-h100", "cost-cpu")
#: what the validator lets through, at both ends of a float, and 0 where a figure may be 0
EXTREMES = (1.7e308, 1e308, 1e300, 1e15, 1.0, 1e-300, 5e-324, 0.0)
#: labels a stored string may hold: mathtext that does not parse, and some that does
MATHTEXT = ("$\\frac{1$", "$x^$", "$5 and $6", "$\\alpha$")
#: the modules whose names may hold a figure function: the figures, the sections and pages calling them
MODULES = [importlib.import_module(f"{package.__name__}.{m.name}") for package in (plots, sections)
           for m in pkgutil.iter_modules(package.__path__)]
MODULES += [importlib.import_module(f"ddpbench.report.{name}") for name in ("page", "build", "compare_page",
                                                                          "trend_page")]


def figure_functions() -> dict[str, object]:
    """Every guarded figure function of ddpbench/report/plots, by name."""
    return {name: fn for m in MODULES if m.__name__.startswith(plots.__name__) for name, fn in vars(m).items()
            if getattr(fn, "guarded", None) is True and fn.__module__ == m.__name__}


@pytest.fixture(scope="module")
def recorded_calls(tmp_path_factory) -> dict[str, list[inspect.BoundArguments]]:
    """Each figure function's calls (its arguments) as the page's sections that name one make them on
    :data:`FOLDERS`, drawing nothing; the comparison's figure as ``compare`` calls it on a folder
    against itself."""
    calls: dict[str, list[inspect.BoundArguments]] = {}
    functions = figure_functions()

    def recorder(name, fn):
        def record(*args, **kwargs):
            calls.setdefault(name, []).append(inspect.signature(fn).bind(*args, **kwargs))
        return record

    with pytest.MonkeyPatch.context() as patch:
        for m in MODULES:
            for name, fn in list(vars(m).items()):
                if getattr(fn, "guarded", None) is True:
                    patch.setattr(m, name, recorder(fn.__name__, fn))
        drawing = [s for s in SECTIONS if any(name in inspect.getsource(s) for name in functions)]
        contexts = [load_context(EXAMPLES / folder, tmp_path_factory.mktemp(folder)) for folder in FOLDERS]
        for ctx in contexts:
            for section in drawing:
                section(ctx)
    ctx = contexts[0]
    table = compare.compare_tables(ctx.summary, ctx.steps, ctx.summary, ctx.steps)
    calls["ratio_plot"] = [inspect.signature(functions["ratio_plot"]).bind(table, [parse_gate("mean:5%")],
                                                                           ctx.image("ratios.png"))]
    # the history's figure, as the trend page calls it, on a small history with a step at world size 2
    root = tmp_path_factory.mktemp("history")
    trend = trend_table(synthetic_history(root, [10.0] * 5, [10.0] * 3 + [12.0] * 2))
    (_, title, rows), = families(trend)
    calls["trend_plot"] = [inspect.signature(functions["trend_plot"]).bind(rows, trend_changes(trend), title,
                                                                           root / "trend-1.png")]
    # a trace folder's figure, as ``traces`` calls it, on the committed example's traces
    from ddpbench.traces.folder import read_folder

    (job,) = read_folder(EXAMPLES / "traces-cpu" / "traces", workers=1)
    calls["rank_breakdown"] = [inspect.signature(functions["rank_breakdown"]).bind(job.steps, root / "breakdown-1.png",
                                                                                   job.name)]
    # a watched run's figure, as ``report DIR`` calls it, on a run of two ranks, one made a quarter slower
    from ddpbench.testing.watched import ddp_run, watched_folder
    from ddpbench.watch.windows import read_run

    watched_folder(root / "watched", ddp_run(0, slow_rank=1))
    steps, alarms = read_run(root / "watched")
    calls["steps_over_run"] = [inspect.signature(functions["steps_over_run"]).bind(steps, alarms,
                                                                                   root / "steps.png", "a run")]
    return calls


@pytest.fixture(scope="module", autouse=True)
def small_figures():
    """Figures at a ninth of their resolution: what fails, fails at any resolution, and there are
    fewer pixels to encode (most of a figure's time is its layout, which no resolution changes)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(common, "DPI", 12)
        yield


def test_every_figure_function_is_guarded_and_called_by_the_page(recorded_calls):
    """A figure function is one that writes a PNG (calls save); each is guarded, and the example
    folders reach each, so the tests below run all of them."""
    for m in MODULES:
        if not m.__name__.startswith(plots.__name__):
            continue
        for name, fn in vars(m).items():
            if inspect.isfunction(fn) and fn.__module__ == m.__name__ and fn is not common.save \
                    and "save(fig" in inspect.getsource(fn):
                assert getattr(fn, "guarded", None) is True or name.startswith("_"), f"{m.__name__}.{name}"
    assert set(recorded_calls) == set(figure_functions())
    assert len(recorded_calls) >= 19


def draw(fn, bound: inspect.BoundArguments, out: Path, change=None):
    """``fn`` called with ``bound``'s arguments (``change``d) writing into ``out``: (its return value,
    the figures left out). Fails on any error the guard lets through."""
    arguments = dict(bound.arguments)
    arguments["path"] = out / Path(arguments["path"]).name
    if change is not None:
        arguments = {name: change(value) if name != "path" else value for name, value in arguments.items()}
    with leaving_out() as left_out:
        returned = fn(**arguments)
    return returned, arguments["path"], left_out


def assert_drawn_or_left_out_in_one_line(returned, path: Path, left_out) -> None:
    if returned is None:
        assert not path.exists()
        assert len(left_out) <= 1
        for figure in left_out:
            assert figure.figure == path.name and figure.why and "\n" not in figure.why and len(figure.why) <= 200
    else:
        assert returned == path and not left_out
        assert path.read_bytes().startswith(PNG_MAGIC)


@pytest.mark.parametrize("name", sorted(figure_functions()))
def test_the_example_folders_draw_every_figure(recorded_calls, tmp_path, name):
    """The folders as committed: every figure drawn, none left out (a mistake in a figure's code that
    raises a ValueError would be left out on a user's page: here it fails)."""
    bound = recorded_calls[name][0]
    returned, path, left_out = draw(figure_functions()[name], bound, tmp_path)
    assert left_out == [] and returned == path and path.read_bytes().startswith(PNG_MAGIC)


# ---------------------------------------------------------------------------------------------
# the guard and the page
# ---------------------------------------------------------------------------------------------

@guarded
def unplaceable(table, path):
    """A figure function whose values matplotlib could not place."""
    raise ValueError("Data cannot be log-scaled because all values are <= 0.\nand more lines")


@guarded
def mistaken(table, path):
    """A figure function with a mistake in its code."""
    return table["no such column"]


@guarded
def titled(table, path, title: str = "a title"):
    """A figure titled ``title``, laid out before it is saved (as the projection plot is)."""
    fig = figure(3.0, 2.0)
    fig.add_subplot().set_title(title)
    fig.suptitle(title)
    fig.tight_layout()
    return save(fig, path)


def page_of(tmp_path: Path, *figures) -> str:
    """The page of a results folder with no job, one section per figure function in ``figures``."""
    empty = pd.DataFrame()
    ctx = ReportContext(empty, empty, empty, empty, empty, tmp_path, tmp_path)

    def section(draw):
        def make(ctx):
            path = draw(ctx.summary, ctx.image(f"{draw.__name__}.png"))
            return Section(draw.__name__, html("<p>{{ name }}</p>", name=draw.__name__), (path,) if path else ())
        return make
    return write_context(ctx, [section(draw) for draw in figures]).read_text(encoding="utf-8")


def test_a_figure_left_out_closes_the_page_in_one_line_and_leaves_no_png(tmp_path):
    (tmp_path / "unplaceable.png").write_bytes(PNG_MAGIC)  # an earlier report's
    page = page_of(tmp_path, unplaceable, titled)
    assert not (tmp_path / "unplaceable.png").exists() and (tmp_path / "titled.png").is_file()
    assert page.count("<img ") == 1 and '<img src="titled.png"' in page
    closing = page.split('<h2>Figures left out</h2>\n', 1)[1]
    assert closing.startswith('<p class="what">1 figure(s) left out')
    assert "<li><code>unplaceable.png</code>: Data cannot be log-scaled because all values are &lt;= 0.</li>" \
        in closing and "more lines" not in page
    assert closing.endswith("</section>\n</body>\n</html>\n")
    assert "Figures left out" not in page_of(tmp_path / "none", titled)


def test_the_guard_leaves_out_only_while_a_page_is_written_and_never_hides_a_mistake(tmp_path):
    with pytest.raises(ValueError, match="log-scaled"):
        unplaceable(None, tmp_path / "x.png")
    with leaving_out() as left_out, pytest.raises(KeyError):
        mistaken(pd.DataFrame(), tmp_path / "x.png")
    assert left_out == []


@pytest.mark.parametrize("title", MATHTEXT)
def test_a_label_is_drawn_as_it_is_never_as_mathtext(tmp_path, title):
    assert titled(None, tmp_path / "t.png", title) == tmp_path / "t.png"


def test_a_figure_reads_what_it_cannot_place_as_missing():
    table = pd.DataFrame({"step_ms": [1.7e308, 1e300, -1e301, 5e-324, math.nan, math.inf],
                          "bucket_mb": [[1.0, 1e308]] + [[2.0]] * 5, "label": ["$\\frac{1$"] * 6})
    seen = common.placeable_only(table)
    assert seen["step_ms"].isna().tolist() == [True, False, True, False, True, True]
    assert seen["step_ms"][1] == 1e300 and seen["step_ms"][3] == 5e-324
    assert seen["bucket_mb"][0][0] == 1.0 and math.isnan(seen["bucket_mb"][0][1]) and seen["label"][0] == "$\\frac{1$"
    assert table["step_ms"][0] == 1.7e308 and table["bucket_mb"][0][1] == 1e308  # the caller's table as it was
    placed = table.iloc[1:2][["step_ms", "label"]]
    assert common.placeable_only(placed) is placed
    assert common.placeable([1e300, 0.0, -1.0, 5e-324], log=True).tolist() == [True, False, False, True]


# ---------------------------------------------------------------------------------------------
# the values changed
# ---------------------------------------------------------------------------------------------

def changed(value, how: dict):
    """A figure function's argument with its values changed as ``how`` says (:data:`CHANGES`): the
    measured figures of a table (its float columns but :data:`SETTINGS`, and lists of floats in a
    cell) scaled so that the largest is ``target``, all set to ``value``, mixed from :data:`EXTREMES`,
    or half of them missing (NaN); labels given a mathtext suffix; a table cut to its first row."""
    if isinstance(value, str):
        return f"{value} {how['label']}" if how["label"] else value
    if not isinstance(value, pd.DataFrame):
        return value
    rng = np.random.default_rng(how["seed"])
    frame = value.iloc[:1].copy() if how["one_row"] else value.copy()

    def figures(values: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            if how["mode"] == "scaled":
                peak = np.nanmax(np.abs(values), initial=0.0)
                return values / peak * how["target"] if 0 < peak < math.inf else values
            if how["mode"] == "equal":
                return np.full(values.shape, how["value"])
            if how["mode"] == "mixed":
                return rng.choice(np.array(EXTREMES), values.shape)
            return np.where(rng.random(values.shape) < 0.5, np.nan, values)  # missing

    for column in frame.columns:
        cells = frame[column]
        if cells.dtype.kind == "f" and column not in SETTINGS:
            frame[column] = figures(cells.to_numpy(dtype=float))
        elif cells.dtype == object and len(cells) and cells.map(_floats).all():
            frame[column] = [figures(np.asarray(cell, dtype=float)).tolist() for cell in cells]
        elif cells.dtype == object and how["label"] and column in LABELS:
            frame[column] = [f"{cell} {how['label']}" if isinstance(cell, str) else cell for cell in cells]
    return frame


def _floats(cell) -> bool:
    return isinstance(cell, (list, tuple, np.ndarray)) and all(isinstance(v, (float, np.floating)) for v in cell)


#: float columns that are a job's settings or coordinates, not measured figures: left as they are
SETTINGS = {f.name for spec in (JobSpec, CollectiveSpec) for f in dataclasses.fields(spec)} | {"cores", "barrier_rank"}
#: the string columns figures write as labels (others are keys a figure selects on: status, op, ...)
LABELS = ("model", "model_args", "model_size", "workload", "setting", "framework", "link", "_label", "job", "name",
          "lane", "label")

CHANGES = st.fixed_dictionaries({
    "mode": st.sampled_from(("scaled", "equal", "mixed", "missing")),
    "target": st.sampled_from((1.7e308, 1e308, 1e300, 1e-300, 5e-324)),
    "value": st.sampled_from(EXTREMES),
    "one_row": st.booleans(),
    "label": st.sampled_from(("", *MATHTEXT)),
    "seed": st.integers(0, 2**16),
})
#: the validator's extremes: every figure scaled up to 1e308 with a label that does not parse as mathtext
HUGE = {"mode": "scaled", "target": 1e308, "value": 1.0, "one_row": False, "label": "$\\frac{1$", "seed": 0}


@settings(max_examples=examples(15), deadline=None)
@given(name=st.sampled_from(sorted(figure_functions())), how=CHANGES)
@example(name="projection_plot", how=HUGE)
@example(name="steps_over_run", how={**HUGE, "target": 1.7e308, "label": ""})  # every step past what a plot places
def test_every_figure_draws_or_is_left_out_in_one_line(recorded_calls, name, how):
    with tempfile.TemporaryDirectory() as out:
        returned, path, left_out = draw(figure_functions()[name], recorded_calls[name][0], Path(out),
                                        lambda value: changed(value, how))
        assert_drawn_or_left_out_in_one_line(returned, path, left_out)
        if name == "projection_plot" and how == HUGE:  # a panel of step times too large to draw says so
            assert returned == path


# ---------------------------------------------------------------------------------------------
# a folder of 1e308 ms steps through the command line
# ---------------------------------------------------------------------------------------------

def test_a_folder_of_1e308_ms_steps_gets_a_page_with_its_projection(tmp_path, capsys):
    """Step times of 1e308 ms (the validator allows any finite time > 0) and a model label holding
    mathtext that does not parse: once a matplotlib traceback from the projection plot."""
    label = {"model": "mypkg.models:make", "model_args": '{"note": "$\\\\frac{1$"}'}
    write_results(tmp_path, [ok(1e308, world_size=w, **label) for w in (1, 2, 4)]
                  + [ok(1e308, world_size=w, bucket_cap_mb=1.0, **label) for w in (2, 4)])
    code, out, err = run_reader(capsys, ["report", str(tmp_path)])
    assert_one_line_or_ok(code, out, err, "report")
    assert code == 0
    page = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert_inert_page(tmp_path / "index.html", tmp_path)
    assert "mypkg.models:make(note=$\\frac{1$)" in page
    assert '<img src="projection.png"' in page and (tmp_path / "projection.png").read_bytes().startswith(PNG_MAGIC)
    if "Figures left out" in page:
        closing = page.split("<h2>Figures left out</h2>", 1)[1]
        assert "projection.png" not in closing
