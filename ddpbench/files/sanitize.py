"""Stored values on their way out to a terminal, a spreadsheet or a strict JSON reader.

A results folder may come from someone else, and its strings (job names, errors, environment
values, notes) may hold what a terminal or a spreadsheet would act on:

  :func:`printable`  a string for a terminal: escape sequences (ESC [ ... , ESC ] ... BEL), every
                     other control character and the bidirectional overrides removed; a line break
                     or tab becomes a space, so a cell stays on its line
  :func:`without_controls`  the same, line breaks kept (a figure's labels)
  :func:`csv_cell`   a string cell for a CSV file: one that a spreadsheet would run as a formula
                     (leading ``=``, ``+``, ``-``, ``@``, tab or carriage return) gets a leading
                     ``'``, which spreadsheets show as text (OWASP's advice for CSV injection)
  :func:`csv_text`   a DataFrame as CSV text with every string cell passed through :func:`csv_cell`
  :func:`json_value` a value for strict JSON: every float that is not finite (NaN, an infinite end)
                     None, in lists and dicts however deep (what ``json.dumps(allow_nan=False)`` takes)
"""

from __future__ import annotations

import math
import re
from typing import Any

#: ANSI escape sequences: CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), other two-byte escapes,
#: and their 8-bit forms (CSI 0x9b, OSC 0x9d)
_ESCAPES = re.compile(r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
                      r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
                      r"|\x1b[@-Z\\-_]")
#: control characters (C0 but tab and line breaks, DEL, C1) and the bidirectional overrides that
#: make text read differently from how it is stored
_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_BREAKS = re.compile(r"[\t\r\n]+")

#: what a spreadsheet takes as the start of a formula
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def printable(value: Any) -> str:
    """``value`` as text a terminal shows and never obeys (see the module docstring)."""
    text = str(value)
    text = _ESCAPES.sub("", text)
    text = _CONTROLS.sub("", text)
    return _BREAKS.sub(" ", text)


def without_controls(value: Any) -> str:
    """``value`` as text without escape sequences or control characters; line breaks are kept (a
    figure's label may have several lines)."""
    return _CONTROLS.sub("", _ESCAPES.sub("", str(value)))


def csv_cell(value: Any) -> Any:
    """A string that would start a formula, prefixed with ``'``; any other value as it is."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def csv_text(frame) -> str:
    """``frame.to_csv(index=False)`` with every string cell neutralised (:func:`csv_cell`)."""
    safe = frame.copy()
    for column in safe.columns:
        if safe[column].dtype.kind not in "biufcmM":  # numbers and times are never formulas
            safe[column] = safe[column].map(csv_cell)
    safe.columns = [csv_cell(str(c)) for c in safe.columns]
    return safe.to_csv(index=False)


def json_value(value: Any) -> Any:
    """``value`` with every float that is not finite made None, in lists and dicts however deep (module doc)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: json_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(item) for item in value]
    return value
