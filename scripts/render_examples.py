"""Re-render every committed example report into OUT, and fingerprint what it wrote.

For a change that must not change what users see (a refactor): run it before and after, from the
two checkouts, into two folders, and compare the fingerprints::

    python scripts/render_examples.py /tmp/before      # at the old commit
    python scripts/render_examples.py /tmp/after       # at the new one
    diff /tmp/before/fingerprints.txt /tmp/after/fingerprints.txt

Each folder of ``reports/examples/`` holding a ``results.jsonl`` is copied under OUT and its report
built there (``report DIR``, its pages and plots), its independent check run (``report DIR --check``,
the output kept), and the history example's trend page built from its store (``history page``).
``fingerprints.txt`` lists the SHA-256 of every file written and of every command's output, each with
the output folder and the checkout written as ``OUT`` and ``ROOT`` and a folder marker's creation time left
out (:func:`comparable`), so that two renders of the same code agree; the committed folders are only
read. Run from the checkout whose code is to render, with ``OUT`` outside it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "reports" / "examples"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="an empty or absent folder outside the checkout")
    parser.add_argument("--only", default="", help="render only folders whose path contains this text")
    args = parser.parse_args()
    out = args.out.resolve()
    if out.exists() and any(out.iterdir()):
        sys.exit(f"render_examples: {out} is not empty")
    sys.path.insert(0, str(ROOT))
    from ddpbench.testing import run_main

    outputs: dict[str, str] = {}
    folders = sorted(path.parent for path in EXAMPLES.rglob("results.jsonl") if args.only in str(path))
    for folder in folders:
        rel = folder.relative_to(EXAMPLES).as_posix()
        copy = out / rel
        shutil.copytree(folder, copy)
        for name in ("index.html",):
            (copy / name).unlink(missing_ok=True)
        for png in copy.glob("*.png"):
            png.unlink()
        for command in (("report", copy), ("report", copy, "--check")):
            done = run_main(*command)
            outputs[f"{rel} {' '.join(command[2:]) or 'report'}"] = f"{done.returncode}\n{done.stdout}{done.stderr}"
        print(rel, flush=True)
    store = EXAMPLES / "history-cpu" / "store"
    if store.is_dir() and args.only in str(store):
        done = run_main("history", "page", "--store", store, "--out", out / "history-page")
        outputs["history page"] = f"{done.returncode}\n{done.stdout}{done.stderr}"
    lines = []
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        lines.append(f"{hashlib.sha256(comparable(path, out)).hexdigest()}  {path.relative_to(out).as_posix()}")
    for name, text in sorted(outputs.items()):
        text = text.replace(str(out), "OUT")
        (out / "outputs").mkdir(exist_ok=True)
        lines.append(f"{hashlib.sha256(text.encode()).hexdigest()}  output: {name}")
        (out / "outputs" / (name.replace("/", "+").replace(" ", "_") + ".txt")).write_text(text)
    (out / "fingerprints.txt").write_text("\n".join(lines) + "\n")
    print(f"{len(folders)} folders, {len(lines)} fingerprints: {out / 'fingerprints.txt'}")
    return 0


def comparable(path: Path, out: Path) -> bytes:
    """What of a written file two renders can agree on: the output folder and the checkout named as ``OUT``
    and ``ROOT`` (a page names its results folder, the history page its store), and a folder marker without
    the time it was written (its ``created``)."""
    from ddpbench.files.folders import MARKER

    data = path.read_bytes().replace(str(out).encode(), b"OUT").replace(str(ROOT).encode(), b"ROOT")
    if path.name == MARKER:
        data = json.dumps({k: v for k, v in json.loads(data).items() if k != "created"}, sort_keys=True).encode()
    return data


if __name__ == "__main__":
    raise SystemExit(main())
