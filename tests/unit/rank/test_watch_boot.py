"""The watch's boot ``sitecustomize`` hands on to the user's own, and never to a watch's: not its own copy's, nor
another copy of ddpbench's on the path (a source tree on ``PYTHONPATH`` beside the installed one), which would
import the first again, and again (no process started)."""

import sys

from ddpbench.rank.script.watched import BOOT, chain_sitecustomize


def test_the_user_s_sitecustomize_is_imported_past_every_watch_boot_folder(tmp_path, monkeypatch):
    other = tmp_path / "src" / "ddpbench" / "rank" / "script" / "watch_boot"  # another copy's
    user = tmp_path / "user"
    for folder, body in ((other, "raise RuntimeError('a watch boot folder was imported as the user one')\n"),
                         (user, "IMPORTED = True\n")):
        folder.mkdir(parents=True)
        (folder / "sitecustomize.py").write_text(body)
    monkeypatch.setattr(sys, "path", [str(BOOT), str(other), str(user), *sys.path])
    monkeypatch.delitem(sys.modules, "sitecustomize", raising=False)
    chain_sitecustomize()
    assert getattr(sys.modules["sitecustomize"], "IMPORTED", False)
