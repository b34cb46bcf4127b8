"""Issue 83: every file a page writes (a report's ``index.html`` and PNGs, compare's page, plot and
CSV, the history page's) is written whole under a temporary name in its folder and renamed into place,
so a reader polling it never sees one half-written. Each command is run as the user runs it, and every
rename it makes is recorded."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ddpbench.cli.program import main
from ddpbench.testing import ROOT

EXAMPLES = ROOT / "reports" / "examples"


@pytest.mark.parametrize("words", [
    ["report", "{quick}", "--out", "{out}"],
    ["compare", "{quick}", "{other}", "--out", "{out}"],
    ["history", "page", "--store", "{store}", "--out", "{out}"],
], ids=["report", "compare", "history page"])
def test_every_file_a_page_writes_is_renamed_into_place_from_a_temporary_name(tmp_path, monkeypatch, capsys, words):
    quick, other = tmp_path / "quick", tmp_path / "other"
    shutil.copytree(EXAMPLES / "quick-cpu", quick)
    shutil.copytree(EXAMPLES / "quick-cpu", other)
    out = tmp_path / "out"
    renames: list[tuple[Path, Path]] = []
    replace = os.replace

    def recording(src, dst, *args, **kwargs):
        renames.append((Path(src), Path(dst)))
        return replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", recording)
    args = [w.format(quick=quick, other=other, out=out, store=EXAMPLES / "history-cpu" / "store") for w in words]
    assert main(args) in (0, 1), capsys.readouterr().err  # compare's gate may fail; its files are written
    written = sorted(p for p in out.rglob("*") if p.is_file() and p.name != ".ddpbench.lock")
    assert written and any(p.name == "index.html" for p in written), written
    renamed = {dst: src for src, dst in renames}
    assert [p.name for p in written if p not in renamed] == []  # every file came by a rename
    for path in written:
        src = renamed[path]
        assert src.parent == path.parent and src.name.startswith(".") and not src.exists(), (src, path)
    if words[0] == "report":
        assert any(p.suffix == ".png" for p in written), written
