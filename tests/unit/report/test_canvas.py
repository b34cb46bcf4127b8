"""The report's Agg canvas (ddpbench.report.plots.canvas): titles held where they stand while a
figure is drawn give the pixels matplotlib's own placing of them gives."""

from __future__ import annotations

import numpy as np
import pytest

from ddpbench.report.plots import canvas


def _panels(fig, values, title):
    for ax in fig.axes:
        ax.plot([1, 2, 3], values, label="a line")
        ax.set_title(title)
        ax.set_xlabel("world size")
    return fig


def simple():
    fig = canvas.figure(4.0, 3.0)
    fig.subplots(1, 2)
    canvas.margins(fig, 0.6, 0.5, 0.2, 0.4, wspace=0.6)
    return _panels(fig, [1.0, 2.0, 3.0], "a title")


def offset():
    """A y axis whose offset text (``1e9``, above the axes' top left) meets a long title: moved up."""
    fig = canvas.figure(3.0, 2.5)
    fig.subplots()
    canvas.margins(fig, 0.7, 0.5, 0.2, 0.4)
    return _panels(fig, [1.0e9, 2.0e9, 3.0e9], "a title long enough to reach the axes' left edge and on")


def ticks_on_top():
    fig = simple()
    fig.axes[0].xaxis.tick_top()
    return fig


def twinned():
    fig = simple()
    fig.axes[1].twinx().plot([1, 2, 3], [3.0, 1.0, 2.0])
    return fig


def aligned():
    fig = simple()
    fig.axes[1].xaxis.tick_top()
    fig.align_titles()
    return fig


def legend_outside():
    fig = simple()
    fig.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


@pytest.mark.parametrize("make", [simple, offset, ticks_on_top, twinned, aligned, legend_outside])
def test_titles_held_give_the_pixels_of_matplotlibs_placing(make, monkeypatch):
    held = make()
    drawn = canvas.pixels(held)
    assert all(ax._autotitlepos is True for ax in held.axes if ax.get_title())  # as it was before drawing
    monkeypatch.setattr(canvas, "_held_titles", lambda fig: [])
    placed = canvas.pixels(make())
    assert drawn.shape == placed.shape and np.array_equal(drawn, placed)


def test_only_titles_nothing_could_reach_stand_held():
    assert len(canvas._held_titles(simple())) == 2
    top = ticks_on_top()
    assert canvas._held_titles(top) == [top.axes[1]]
    twins = twinned()
    assert canvas._held_titles(twins) == [twins.axes[0]]
    assert canvas._held_titles(aligned()) == []


def test_the_offset_case_is_one_matplotlib_moves_a_title_in():
    """The pixels of :func:`offset` with its title held where it stood differ from matplotlib's."""
    placed = canvas.pixels(offset())
    fig = offset()
    for ax in fig.axes:
        ax._autotitlepos = False
    held = canvas.pixels(fig)
    assert placed.shape != held.shape or not np.array_equal(placed, held)


def _draws(fig) -> list:
    seen = []
    fig.canvas.mpl_connect("draw_event", lambda event: seen.append(event))
    canvas.pixels(fig)
    return seen


def test_a_title_the_offset_meets_is_drawn_again_as_matplotlib_places_it():
    assert len(_draws(simple())) == 1
    assert len(_draws(offset())) == 2
