"""The report's Agg canvas: a figure made without pyplot, placed by fixed margins, drawn once in room
around it and cropped to what was drawn, and written as a PNG (:func:`save`), never through a link.

matplotlib is imported inside the functions, so importing the figure modules stays cheap.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np

from ddpbench.files.sanitize import without_controls
from ddpbench.files.sidefiles import replace_file

DPI = 110
#: what a figure's values can make matplotlib raise (a log axis with nothing positive on it, limits or
#: a canvas past what a float or an image holds): the figure is left out, not the page. Other errors
#: (a KeyError, a TypeError) are mistakes in the code and propagate.
UNPLACEABLE = (ValueError, ArithmeticError)


def figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def margins(fig, left: float, bottom: float, right: float, top: float, wspace: float = 0.0,
            hspace: float = 0.0) -> None:
    """Place the figure's grid of panels by fixed margins and gaps in inches, where ``tight_layout``
    would measure every label first (a tenth of a second a figure); what reaches past the canvas is
    drawn in the room around it and kept (:func:`pixels`)."""
    width, height = fig.get_size_inches()
    rows, columns = fig.axes[0].get_subplotspec().get_gridspec().get_geometry()
    panel_width = (width - left - right - (columns - 1) * wspace) / columns
    panel_height = (height - bottom - top - (rows - 1) * hspace) / rows
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height,
                        wspace=wspace / panel_width, hspace=hspace / panel_height)


def text_width(fig, texts, size) -> float:
    """The width of the widest of ``texts`` at font ``size`` (points or a name, "small"), in inches."""
    from matplotlib.font_manager import FontProperties

    renderer, font = fig.canvas.get_renderer(), FontProperties(size=size)
    widths = [renderer.get_text_width_height_descent(without_controls(t), font, ismath=False)[0] for t in texts]
    return max(widths, default=0.0) / fig.dpi


def _has_controls(text) -> bool:
    return any(c < " " and c != "\n" or "\x7f" <= c <= "\x9f" for c in str(text))


#: room drawn around a figure's own canvas, in inches (left, bottom, right, top), for what lies outside
#: it (a legend right of the axes, one under the panels); the PNG is then cropped to what was drawn
ROOM = (4.0, 3.0, 6.0, 1.5)
#: what is drawn this close to the room's edge, in inches, may have been cut there (a label's gap between
#: two words can fall on the edge itself): the figure is drawn again with more room
EDGE = 0.25
#: white space kept around what was drawn, in inches (as matplotlib's ``savefig.pad_inches``)
PAD_INCHES = 0.1
#: zlib's effort for the PNGs: 1 writes them in a fraction of the default's time, a third larger
PNG_COMPRESSION = 1


def save(fig, path: Path) -> Path:
    """Write the figure as a PNG at ``path``: a new regular file, never through a link planted at
    that name (:func:`~ddpbench.files.sidefiles.replace_file`). Every text is drawn literally:
    a ``$...$`` pair in a workload's name or arguments is not mathtext (it could not even parse).

    The figure is drawn once (:func:`pixels`) and cropped to what was drawn, as
    ``bbox_inches="tight"`` crops it, which draws it twice over to measure the crop."""
    from PIL import Image

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for text in texts(fig):
        text.set_parse_math(False)
        if _has_controls(text.get_text()):
            text.set_text(without_controls(text.get_text()))  # no glyph to draw a control character with
    for ax in fig.axes:  # tick labels given as text are made while drawing: clean them where they are kept
        for axis in (ax.xaxis, ax.yaxis):
            for formatter in (axis.get_major_formatter(), axis.get_minor_formatter()):
                if isinstance(getattr(formatter, "seq", None), list) and any(map(_has_controls, formatter.seq)):
                    formatter.seq = [without_controls(label) for label in formatter.seq]
    image = pixels(fig)
    buffer = io.BytesIO()
    Image.fromarray(image, "RGB").save(buffer, format="PNG", compress_level=PNG_COMPRESSION)
    replace_file(path, buffer.getvalue())
    return path


def texts(artist) -> list:
    """Every text of ``artist`` and its children (``artist.findobj(Text)``), but of an axis only the
    ticks it has made: ``findobj`` would make all of them (a tenth of a second a figure), and a tick
    made while drawing takes the texts' settings then (:func:`pixels`) and its label from the
    axis' formatter (which :func:`save` cleans)."""
    from matplotlib.axis import Axis
    from matplotlib.text import Text

    found = [artist] if isinstance(artist, Text) else []
    if isinstance(artist, Axis):
        children = [artist.label, artist.offsetText, *artist.__dict__.get("majorTicks", ()),
                    *artist.__dict__.get("minorTicks", ())]
    else:
        children = artist.get_children()
    for child in children:
        found += texts(child)
    return found


def pixels(fig) -> np.ndarray:
    """The figure drawn once at :data:`DPI` with :data:`ROOM` around its canvas, cropped to what was
    drawn with :data:`PAD_INCHES` of white around it: (height, width, 3) RGB bytes.

    Where something reaches the edge of the room (a legend of many jobs, long labels), the figure is
    drawn again in the room that matplotlib measures it needs (:func:`room_for`), then in four times
    that should it not do, never past 16 times :data:`ROOM` (the most it was ever drawn in); a figure
    crowded enough to need more room (:func:`crowded`) is measured before its first drawing, not
    drawn twice. The room only changes where the figure lies on the canvas, by whole pixels: the
    pixels kept are the same."""
    from matplotlib.transforms import Bbox

    width, height = fig.get_size_inches()
    room = room_for(fig) if crowded(fig) else ROOM
    for attempt in range(3):
        left, bottom, right, top = room
        _draw(fig, Bbox.from_extents(-left, -bottom, width + right, height + top))
        drawn = np.asarray(fig.canvas.renderer.buffer_rgba())
        ink = drawn.view(np.uint32)[:, :, 0] != _WHITE  # opaque: the figure's patch is white
        rows, columns = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
        if not len(rows):
            return np.full((1, 1, 3), 255, np.uint8)
        edge = round(EDGE * DPI)
        if min(rows[0], columns[0], ink.shape[0] - 1 - rows[-1], ink.shape[1] - 1 - columns[-1]) >= edge:
            break
        # cut at the room's edge: the room measured, never less than this one; four times it where the
        # measure asks no more (or a second time); never past 16 times ROOM, where what is cut stays cut
        grown = tuple(max(a, b) for a, b in zip(room_for(fig), room)) if attempt == 0 else room
        if grown == room:
            grown = tuple(min(4 * side, 16 * base) for side, base in zip(room, ROOM))
        if grown == room:
            break
        room = grown
    pad = round(PAD_INCHES * DPI)
    crop = np.full((rows[-1] - rows[0] + 1 + 2 * pad, columns[-1] - columns[0] + 1 + 2 * pad, 3), 255, np.uint8)
    crop[pad:-pad, pad:-pad] = drawn[rows[0]:rows[-1] + 1, columns[0]:columns[-1] + 1, :3]
    return crop



def _draw(fig, box) -> None:
    """Draw ``fig`` on its Agg canvas at :data:`DPI`, ``box`` (inches) around it, its titles left
    where they stand (:func:`_held_titles`); drawn again as matplotlib places titles should one of
    them have had to move (:func:`_titles_clear`): the pixels are those of matplotlib's placing."""
    from matplotlib import rc_context

    held = _held_titles(fig)
    clear = []  # whether the titles held stood clear, judged as the drawing ends (at its scale and crop)
    listening = fig.canvas.mpl_connect(
        "draw_event", lambda event: clear.append(all(_titles_clear(ax, event.renderer) for ax in held)))
    try:
        for _ in range(2):
            clear.clear()
            with rc_context({"text.parse_math": False}):  # tick labels are made while drawing
                fig.savefig(_Discard(), format="rgba", dpi=DPI, bbox_inches=box)
            if clear == [True]:
                return
            for ax in held:  # one did not, or the drawing was not seen: drawn as matplotlib places titles
                ax._autotitlepos = True
            held.clear()
    finally:
        fig.canvas.mpl_disconnect(listening)
        for ax in held:
            ax._autotitlepos = True


def _held_titles(fig) -> list:
    """The axes whose titles matplotlib would place above them, which it does only where something
    reaches above the axes, measured before each drawing: the y axis' ticks laid out and measured
    once more (labels, offset), a twentieth of a figure's drawing for each titled panel. Only axes
    with nothing on top that could (no ticks or label on top, no twin, no child axes, no titles
    aligned with other axes' by ``align_titles``); held where they stand for the drawing (:func:`_draw`)."""
    held = []
    for ax in fig.axes:
        if (getattr(ax, "_autotitlepos", None) is not True
                or not any(t.get_text() for t in (ax.title, ax._left_title, ax._right_title))
                or ax.child_axes or ax.xaxis.get_ticks_position() in ("top", "unknown")
                or ax.xaxis.get_label_position() == "top" or len(ax._twinned_axes.get_siblings(ax)) > 1
                or len(fig._align_label_groups["title"].get_siblings(ax)) > 1):
            continue
        ax._autotitlepos = False
        held.append(ax)
    return held


def _titles_clear(ax, renderer) -> bool:
    """Whether matplotlib would have left ``ax``'s titles where they were drawn: each above the top of
    the axes, and none meeting the y axis' offset text (``1e6``, drawn above the axes' top left)."""
    from matplotlib.transforms import Bbox

    top = ax.get_window_extent(renderer).y1
    titles = [t for t in (ax.title, ax._left_title, ax._right_title) if t.get_text()]
    offset = ax.yaxis.offsetText
    if offset.get_visible() and offset.get_text():
        box = offset.get_tightbbox(renderer)
        if any(Bbox.intersection(box, t.get_tightbbox(renderer)) is not None for t in titles):
            return False
    return top >= 0 and all(t.get_window_extent(renderer).y0 >= top for t in titles)


#: a legend of more entries than this, or an axis of more ticks set one by one, likely reaches past
#: :data:`ROOM` (they grow with the jobs drawn): its figure is measured before it is drawn (:func:`pixels`)
CROWDED_ENTRIES = 12
CROWDED_LABELS = 20


def crowded(fig) -> bool:
    """Whether ``fig`` has a legend of more than :data:`CROWDED_ENTRIES` entries or an axis of more than
    :data:`CROWDED_LABELS` ticks set one by one (a label per job): likely to need more than :data:`ROOM`.
    Measuring every figure first would cost a third of drawing it (``get_tightbbox`` lays out every tick)."""
    try:
        return _crowded(fig)
    except (TypeError, ValueError):  # a guess only: a figure it cannot judge is drawn in ROOM, and grown if cut
        return False


def _crowded(fig) -> bool:
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes)]
    if any(legend is not None and len(legend.texts) > CROWDED_ENTRIES for legend in legends):
        return True
    return any(len(np.atleast_1d(getattr(axis.get_major_locator(), "locs", ()))) > CROWDED_LABELS  # set_yticks
               for ax in fig.axes for axis in (ax.xaxis, ax.yaxis))


def room_for(fig) -> tuple[float, float, float, float]:
    """The room (left, bottom, right, top, in inches, as :data:`ROOM`) that everything drawn around
    ``fig``'s canvas needs, by matplotlib's measure of it (``get_tightbbox``, a layout without
    drawing), with :data:`EDGE` and half an inch more: :data:`ROOM` where that holds it, else each
    side that much or :data:`ROOM`'s, whichever is larger (at most 16 times :data:`ROOM`'s), rounded
    up to whole inches. Whole inches, as in 4 or 16 times :data:`ROOM`, put the figure on the
    canvas's pixel grid, and a hatch's pattern (one inch, tiled from the canvas's corner) on the
    figure, where they were: the pixels drawn are the same."""
    from matplotlib import rc_context

    width, height = fig.get_size_inches()
    try:
        with rc_context({"text.parse_math": False}):
            box = fig.get_tightbbox(fig.canvas.get_renderer())
    except UNPLACEABLE:  # what cannot be measured is drawn in ROOM, then grown as it is cut
        return ROOM
    need = [extent + EDGE + 0.5 if math.isfinite(extent) else 0.0
            for extent in (-box.x0, -box.y0, box.x1 - width, box.y1 - height)]
    if all(n <= room for n, room in zip(need, ROOM)):
        return ROOM
    # at most the 16 times ROOM a figure was ever drawn in: a text placed far off is cut there, as before
    return tuple(float(math.ceil(min(max(n, room), 16 * room))) for n, room in zip(need, ROOM))


#: an opaque white pixel of an RGBA buffer, read as one 32-bit number
_WHITE = np.frombuffer(bytes((255, 255, 255, 255)), np.uint32)[0]


class _Discard(io.RawIOBase):
    """Where the figure's raw pixels are written while they are read from its canvas: nowhere."""

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        return len(data)
