"""Do the tests fail when the code is wrong? Mutation testing (mutmut 3) of the modules whose figures users bet
on, and each module's score stored with its command, date and commit.

    python benchmarks/mutation.py [--group NAME ...] [--max-children 2] [--keep DIR]
                                  [--out benchmarks/mutation.md] [--json benchmarks/mutation.json]

The modules come in groups, declared in ``benchmarks/mutation.toml``: each group's modules, the tests that may
kill their mutants (tests that start no process: a process test runs unmutated code in its children) and its
target score. For each group, in a copy of the tree (mutmut rewrites the package it runs), mutmut makes every
mutant of the group's modules (one operator, constant, argument or return value changed in one function), runs
the group's tests that reach that function against it, and says which were killed; the runner's settings are
``[tool.mutmut]`` in pyproject.toml. A module's **score** is (killed + timed out + equivalent) / mutants: a mutant
no test reaches counts as surviving. An **equivalent** mutant is one no test can kill because it changes nothing a
caller can see: each is listed in ``benchmarks/mutation.toml`` with one line saying why, and counts as killed only
while it survives (one a test kills is said so, to be taken off the list).

Every run replaces the entries of the groups it ran (``--group``, repeatable; the default runs them all) and keeps
the others, each entry with the command, date and commit that measured it; the Markdown table is written from the
JSON whole. tests/unit/project/test_mutation_scores.py holds the stored scores to their targets.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
HEADER = "<!-- written by benchmarks/mutation.py -->"
#: the statuses a score counts as caught (mutmut's names)
CAUGHT = ("killed", "timeout")
#: what the copy of the tree leaves out: what git ignores (reports/ but its committed examples, the environments)
NOT_COPIED = (".git", ".venv", ".venv-plain", "mutants", "__pycache__", ".pytest_cache", ".hypothesis", "build", "dist")


def _not_copied(folder: str, names: list[str]) -> set[str]:
    if Path(folder).name == "reports":
        return {n for n in names if n not in ("examples", "README.md")}
    return {n for n in names if n in NOT_COPIED or n.endswith(".egg-info")}


def settings(root: Path = ROOT) -> dict:
    """benchmarks/mutation.toml: the groups (modules, tests, target), the modules below their target (a floor and
    why) and the equivalent mutants (each with why)."""
    return tomllib.loads((root / "benchmarks" / "mutation.toml").read_text())


def modules(table: dict) -> dict[str, str]:
    """Every mutated module and its group, in the order declared."""
    return {module: name for name, group in table["groups"].items() for module in group["modules"]}


def target(module: str, table: dict) -> float:
    return float(table["groups"][modules(table)[module]]["target"])


def module_of(mutant: str) -> str:
    """``ddpbench.audit.words.x_f__mutmut_3`` -> ``ddpbench/audit/words.py`` (a method's mutant,
    ``...words.xǁClassǁf__mutmut_3``, names its class in the last part too)."""
    return mutant.rsplit(".", 1)[0].replace(".", "/") + ".py"


def statuses(mutants: Path) -> dict[str, str]:
    """Every mutant's status, as mutmut names it, from its working copy's ``.meta`` files."""
    from mutmut.stats import status_by_exit_code

    found = {}
    for meta in mutants.rglob("*.py.meta"):
        for key, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            found[key] = status_by_exit_code[code]
    return found


def scores(found: dict[str, str], equivalent: dict[str, str], names: list[str]) -> dict:
    """Each module's counts and score (%) from every mutant's status: killed, timed out, equivalent (surviving
    and listed), surviving (by name), and how many of those no test reached."""
    out = {}
    for module in names:
        mine = {k: s for k, s in found.items() if module_of(k) == module}
        same = sorted(k for k, s in mine.items() if s not in CAUGHT and k in equivalent)
        survived = sorted(k for k, s in mine.items() if s not in CAUGHT and k not in equivalent)
        caught = sum(s in CAUGHT for s in mine.values())
        out[module] = {"mutants": len(mine), "killed": sum(s == "killed" for s in mine.values()),
                       "timeout": sum(s == "timeout" for s in mine.values()), "equivalent": len(same),
                       "survived": len(survived), "no_tests": sum(mine[k] == "no tests" for k in survived),
                       "score": round(100 * (caught + len(same)) / len(mine), 1) if mine else 0.0,
                       "survivors": survived,
                       "killed_equivalents": sorted(k for k, s in mine.items() if s in CAUGHT and k in equivalent)}
    return out


def staged(root: Path, into: Path, group: dict) -> Path:
    """A copy of the tree whose ``[tool.mutmut]`` mutates ``group``'s modules against its tests."""
    shutil.copytree(root, into, ignore=_not_copied, symlinks=True)
    text = (into / "pyproject.toml").read_text()
    own = (f"only_mutate = {json.dumps(group['modules'])}\n"
           f"pytest_add_cli_args_test_selection = {json.dumps(group['tests'])}\n")
    (into / "pyproject.toml").write_text(re.sub(r"^\[tool\.mutmut\]\n", lambda m: m.group(0) + own, text,
                                                count=1, flags=re.M))
    return into


def commit(root: Path) -> str:
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "ddpbench", "tests", "benchmarks"],
                           capture_output=True, text=True).stdout.strip()
    return (head.stdout.strip() or "unknown") + (" with uncommitted changes" if dirty else "")


def run_group(name: str, group: dict, table: dict, max_children: int, work: Path) -> tuple[dict, float]:
    """(each module's score, the group's wall time in seconds)."""
    copy = staged(ROOT, work / name, group)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children)], cwd=copy,
                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - started
    found = statuses(copy / "mutants")
    unchecked = sum(s == "not checked" for s in found.values())
    if not found or unchecked:
        sys.exit(f"group {name}: mutmut made {len(found)} mutants and left {unchecked} unchecked (exit "
                 f"{done.returncode}); nothing stored: {done.stderr.strip()[-2000:]}")
    return scores(found, table.get("equivalent", {}), group["modules"]), wall


def markdown(stored: dict, table: dict) -> str:
    lines = [HEADER, "", "Each module's mutation score as `python benchmarks/mutation.py` stored it in "
             "benchmarks/mutation.json, where the surviving mutants are listed by name; each row names the command, "
             "date and commit that measured it. Score: (killed + timed out + equivalent) / mutants; a mutant no test "
             "reaches counts as surviving; the equivalent mutants are listed with why in benchmarks/mutation.toml. "
             "Time: the group's wall time, on the machine and load of its run (2-core VM).", "",
             "| module | mutants | killed | timed out | equivalent | surviving (no test) | score | target | group, "
             "time | measured by |", "|---|---|---|---|---|---|---|---|---|---|"]
    for module, row in stored.items():
        lines.append(f"| `{module}` | {row['mutants']} | {row['killed']} | {row['timeout']} | {row['equivalent']} | "
                     f"{row['survived']} ({row['no_tests']}) | {row['score']:.1f} % | {target(module, table):g} % | "
                     f"{row['group']}, {row['group_seconds']:.0f} s | `{row['command']}`, {row['date']}, "
                     f"{row['commit']} |")
    return "\n".join(lines) + "\n"


def write(path: Path, text: str) -> None:
    """``text`` into ``path``: a new file, or one this script wrote (never through a link)."""
    if path.is_symlink():
        sys.exit(f"{path}: a symbolic link; give a file of its own")
    if path.exists() and path.suffix == ".md" and not path.read_text(errors="replace").startswith(HEADER):
        sys.exit(f"{path}: holds what this script did not write; give a new file")
    path.write_text(text)


def main(argv: list[str] | None = None) -> None:
    table = settings()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--group", action="append", choices=list(table["groups"]), help="a group to run (repeatable)")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="a new folder to keep the copies and mutmut's results in")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "mutation.md")
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "mutation.json")
    args = parser.parse_args(argv)
    if args.keep and args.keep.exists():
        sys.exit(f"--keep: {args.keep} exists; give a new folder")
    groups = args.group or list(table["groups"])
    command = "python benchmarks/mutation.py" + "".join(f" --group {g}" for g in args.group or ())
    stored = json.loads(args.json.read_text()) if args.json.exists() else {}
    work = args.keep or Path(tempfile.mkdtemp(prefix="ddpbench-mutation-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        for name in groups:
            found, wall = run_group(name, table["groups"][name], table, args.max_children, work)
            when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
            for module, row in found.items():
                stored[module] = {**row, "group": name, "group_seconds": round(wall), "command": command,
                                  "date": when, "commit": commit(ROOT)}
            print(f"{name}: {sum(r['mutants'] for r in found.values())} mutants in {wall:.0f} s")
            for key in (k for row in found.values() for k in row["killed_equivalents"]):
                print(f"listed as equivalent but killed (take it off benchmarks/mutation.toml): {key}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    stored = {m: stored[m] for m in modules(table) if m in stored}
    write(args.json, json.dumps(stored, indent=1, ensure_ascii=False) + "\n")
    write(args.out, markdown(stored, table))
    print(markdown({m: r for m, r in stored.items() if r["group"] in groups}, table))


if __name__ == "__main__":
    main()
