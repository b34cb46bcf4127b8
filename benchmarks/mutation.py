"""Do the tests fail when the code is wrong? Mutation testing (mutmut 3) of the modules whose figures users bet
on, and each module's score stored with its command, date and commit.

    python benchmarks/mutation.py [--module GLOB ...] [--max-children 2] [--resume]
                                  [--out benchmarks/mutation.md] [--json benchmarks/mutation.json]

The modules and the tests that may kill a mutant are mutmut's own configuration, ``[tool.mutmut]`` in
pyproject.toml (``only_mutate``; the tests that start no process). mutmut makes each mutant (one operator,
constant, argument or return value changed in one function), runs the tests that reach that function against
it, and says which were killed. A module's **score** is (killed + timed out + equivalent) / mutants: a mutant
with no test reaching it counts as surviving. An **equivalent** mutant is one no test can kill because it does
not change what the module does (a cache size, a message no one reads ...): each is listed in
``benchmarks/mutation.toml`` with one line saying why, and counts as killed only while it survives (one a test
kills is no longer equivalent and is said so).

Every run replaces the entries of the modules it ran (``--module`` runs those alone: a glob of the modules'
paths, e.g. ``--module 'ddpbench/traces/*'``) and keeps the others, each entry with the command, date and
commit that measured it; the Markdown table is written from the JSON whole. ``--resume`` keeps mutmut's
working copy (``mutants/``) and its results, to run again only what changed; the default starts afresh.
tests/unit/project/test_mutation_scores.py holds the stored scores to their targets (mutation.toml).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
HEADER = "<!-- written by benchmarks/mutation.py -->"
#: a module's score where mutants survive that no test reaches or kills
KILLED = ("killed", "timeout")


def modules(root: Path = ROOT) -> list[str]:
    """The mutated modules, as mutmut's ``only_mutate`` names them (its globs expanded), in order."""
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["mutmut"]["only_mutate"]
    found = []
    for pattern in patterns:
        found += [str(p.relative_to(root)) for p in sorted(root.glob(pattern)) if p.suffix == ".py"]
    return list(dict.fromkeys(found))


def settings(root: Path = ROOT) -> dict:
    """benchmarks/mutation.toml: the targets, the modules below theirs (with a floor and why) and the
    equivalent mutants (each with why)."""
    return tomllib.loads((root / "benchmarks" / "mutation.toml").read_text())


def target(module: str, table: dict) -> float:
    """A module's target score (%): the first of ``[targets]``'s globs that names it."""
    return next(float(score) for glob, score in table["targets"].items() if fnmatch.fnmatch(module, glob))


def module_of(mutant: str) -> str:
    """``ddpbench.audit.words.x_f__mutmut_3`` -> ``ddpbench/audit/words.py`` (a method's mutant names its class
    after the module: the module is the longest dotted prefix that is a file)."""
    parts = mutant.split(".")
    for end in range(len(parts) - 1, 0, -1):
        path = "/".join(parts[:end]) + ".py"
        if (ROOT / path).is_file():
            return path
    return ""


def statuses(mutants: Path) -> dict[str, str]:
    """Every mutant's status, as mutmut's results name it, from its working copy's ``.meta`` files."""
    from mutmut.stats import status_by_exit_code

    found = {}
    for meta in mutants.rglob("*.py.meta"):
        for key, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            found[key] = status_by_exit_code[code]
    return found


def durations(mutants: Path) -> dict[str, float]:
    found = {}
    for meta in mutants.rglob("*.py.meta"):
        found.update(json.loads(meta.read_text()).get("durations_by_key", {}))
    return found


def scores(found: dict[str, str], spent: dict[str, float], equivalent: dict[str, str], names: list[str]) -> dict:
    """Each module's counts and score (%) from every mutant's status: killed, timed out, equivalent (surviving
    and listed), surviving (listed survivors left out), no test reaching it."""
    out = {}
    for module in names:
        mine = {k: s for k, s in found.items() if module_of(k) == module}
        killed = sum(s == "killed" for s in mine.values())
        timeout = sum(s == "timeout" for s in mine.values())
        same = sorted(k for k, s in mine.items() if s not in KILLED and k in equivalent)
        survived = sorted(k for k, s in mine.items() if s not in KILLED and k not in equivalent)
        total = len(mine)
        out[module] = {"mutants": total, "killed": killed, "timeout": timeout, "equivalent": len(same),
                       "survived": len(survived), "no_tests": sum(mine[k] == "no tests" for k in survived),
                       "score": round(100 * (killed + timeout + len(same)) / total, 1) if total else None,
                       "seconds": round(sum(spent.get(k, 0.0) for k in mine), 1),
                       "survivors": survived,
                       "killed_equivalents": sorted(k for k, s in mine.items() if s in KILLED and k in equivalent)}
    return out


def commit(root: Path) -> str:
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "ddpbench", "tests"],
                           capture_output=True, text=True).stdout.strip()
    return (head.stdout.strip() or "unknown") + (" with uncommitted changes" if dirty else "")


def markdown(stored: dict, table: dict) -> str:
    lines = [HEADER, "", "Each module's mutation score, as `python benchmarks/mutation.py` stored it in "
             "benchmarks/mutation.json (the surviving mutants are listed there by name); each row names the "
             "command, date and commit that measured it. Score: (killed + timed out + equivalent) / mutants; "
             "equivalent mutants are listed with why in benchmarks/mutation.toml.", "",
             "| module | mutants | killed | timed out | equivalent | surviving (no test) | score | target | time |"
             " measured by |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for module, row in stored.items():
        lines.append(f"| `{module}` | {row['mutants']} | {row['killed']} | {row['timeout']} | {row['equivalent']} | "
                     f"{row['survived']} ({row['no_tests']}) | {row['score']:.1f} % | {target(module, table):g} % | "
                     f"{row['seconds']:.0f} s | `{row['command']}`, {row['date']}, {row['commit']} |")
    return "\n".join(lines) + "\n"


def write(path: Path, text: str, header: str | None) -> None:
    """``text`` into ``path``: a new file, or one this script wrote (never through a link)."""
    if path.is_symlink():
        sys.exit(f"{path}: a symbolic link; give a file of its own")
    if header and path.exists() and not path.read_text(errors="replace").startswith(header):
        sys.exit(f"{path}: holds what this script did not write; give a new file")
    path.write_text(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", action="append", default=[], help="a glob of the modules to run (repeatable)")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--resume", action="store_true", help="keep mutants/ and run only what changed")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "mutation.md")
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "mutation.json")
    args = parser.parse_args(argv)
    names = [m for m in modules() if not args.module or any(fnmatch.fnmatch(m, g) for g in args.module)]
    if not names:
        sys.exit(f"--module {args.module}: names none of [tool.mutmut] only_mutate's modules: {', '.join(modules())}")
    table = settings()
    mutants = ROOT / "mutants"
    if not args.resume and mutants.exists():
        shutil.rmtree(mutants)
    patterns = [] if not args.module else [m[:-3].replace("/", ".") + ".*" for m in names]
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(args.max_children), *patterns],
                         cwd=ROOT, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - started
    if run.returncode not in (0, 1):
        sys.exit(f"mutmut run exited {run.returncode}; nothing stored")
    command = "python benchmarks/mutation.py" + "".join(f" --module '{g}'" for g in args.module)
    found = scores(statuses(mutants), durations(mutants), table.get("equivalent", {}), names)
    stored = json.loads(args.json.read_text()) if args.json.exists() else {}
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    for module, row in found.items():
        stored[module] = {**row, "command": command, "date": when, "commit": commit(ROOT)}
    stored = {m: stored[m] for m in modules() if m in stored}
    write(args.json, json.dumps(stored, indent=1) + "\n", None)
    write(args.out, markdown(stored, table), HEADER)
    print(markdown({m: stored[m] for m in names}, table))
    print(f"{sum(r['mutants'] for r in found.values())} mutants in {wall:.0f} s")
    for row in found.values():
        for key in row["killed_equivalents"]:
            print(f"listed as equivalent but killed (take it off benchmarks/mutation.toml): {key}")


if __name__ == "__main__":
    main()
