"""scripts/render_examples.py's fingerprints agree on two renders of the same code (the output folder, the
checkout and a marker's creation time left out) and differ where what was written differs."""

from __future__ import annotations

import importlib.util
import json

from ddpbench.files.folders import MARKER
from ddpbench.testing import ROOT

_spec = importlib.util.spec_from_file_location("render_examples", ROOT / "scripts" / "render_examples.py")
render = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(render)


def test_two_renders_agree_but_for_what_they_wrote(tmp_path):
    a, b = tmp_path / "a", tmp_path / "render-b"
    for out, created in ((a, "2026-11-29T22:54:00Z"), (b, "2026-11-30T01:02:03Z")):
        (out / "quick").mkdir(parents=True)
        (out / "quick" / "index.html").write_text(f"<p>Results folder: {out}/quick, code at {ROOT}</p>")
        (out / "quick" / MARKER).write_text(json.dumps({"kind": "report", "created": created}) + "\n")
    for name in ("index.html", MARKER):
        assert render.comparable(a / "quick" / name, a) == render.comparable(b / "quick" / name, b)
    (b / "quick" / "index.html").write_text(f"<p>Results folder: {b}/quick, code at {ROOT}!</p>")
    (b / "quick" / MARKER).write_text(json.dumps({"kind": "sweep", "created": "x"}) + "\n")
    for name in ("index.html", MARKER):
        assert render.comparable(a / "quick" / name, a) != render.comparable(b / "quick" / name, b)
