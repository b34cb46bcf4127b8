"""Do the tests fail when the code is wrong? Mutation testing (mutmut 3) of the modules whose figures users bet
on, and each module's score stored with its command, date and commit.

    python benchmarks/mutation.py [--group NAME ...] [--max-children 2] [--keep DIR | --resume DIR]
                                  [--out benchmarks/mutation.md]

The modules come in groups, declared in ``benchmarks/mutation.toml``: each group's modules, the tests that may
kill their mutants (tests that start no process: a process test runs unmutated code in its children) and its
target score. A module too large for one session's run is measured in parts: groups that each name some of its
``functions`` (fnmatch patterns: ``derive``, ``_add_*``, a class's methods ``Figures.*``), each part a row of its own
(``path (group)``); together they name each of its functions once (tests/unit/project/test_mutation_scores.py).
For each group, in a copy of the committed tree (HEAD's: mutmut rewrites the package it runs, and
an uncommitted change is not what the stored table names), mutmut makes every mutant of the group's modules (one
operator, constant, argument or return value changed in one function), runs the group's tests that reach that
function against it, and says which were killed; the runner's settings are ``[tool.mutmut]`` in pyproject.toml.
mutmut stops a mutant's tests at the first failure; tests/conftest.py hands them over by file, the quickest files
first, so a mutant a quick unit test kills costs that test, not the slow ones listed before it.

A module's **score** is (killed + equivalent) / mutants: a mutant no test reaches counts as surviving, and so does
one that timed out (a loaded machine times out sound tests too). An **equivalent** mutant is one no test can kill
because it changes nothing a caller can see: each is listed in ``benchmarks/mutation.toml`` with one line saying
why, and counts as killed only while it survives (one a test kills is said so, to be taken off the list).

``--count`` runs nothing: it prints how many mutants mutmut makes of each module (or part) from the code now,
beside the count its stored row measured (a row whose count differs measured other code), without running a test.

``--group`` (repeatable) runs those groups alone; the default runs them all. ``--out`` writes the table (a new
file, or one this script wrote), and beside it the same as JSON with every surviving mutant by name
(``mutation.json`` beside ``mutation.md``). Each row names the run that measured its group, and each run is stored
whole: its command and date, the machine, its load and the commit of ddpbench it ran. A run writing over a table
this script wrote replaces the rows of the groups it measured and keeps the others' as their own run stored them
(with that run's lines): a run of every group takes longer than a working session has, and a session's machine
does not keep the last one's files. tests/unit/project/test_mutation_scores.py holds the scores to their targets.

A whole run takes hours on two cores (benchmarks/mutation.md gives each group's time), more than a working session
may hold the machine: ``--resume DIR`` goes on with a run kept in ``DIR`` (``--keep``) and stopped part way. Each
group's copy there is used as it stands, at the commit it was staged from (kept beside it in ``COMMIT``), its
checked mutants' results kept (mutmut checks only the rest) and its wall time added up (``SECONDS``); a group
with no copy yet is staged from HEAD as it starts. A copy whose package has not changed since its commit, only its
tests, is first brought to HEAD (:func:`brought_up`): tests written while a group ran count at its end. At a
group's end each mutant its run recorded as surviving, and not listed as equivalent, is run again alone (``mutmut
run NAME ...``), and that result is kept (the survivors so run are listed in ``ALONE``): a group's run has
recorded survivors that a run of each alone kills.
"""

from __future__ import annotations

import argparse
import fnmatch
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import ended  # noqa: E402  (a sibling module)
from scale import machine  # noqa: E402  (a sibling benchmark)
from written import check_out, write_out  # noqa: E402

ROOT = HERE.parent
HEADER = "<!-- written by benchmarks/mutation.py -->"
#: the statuses a score counts as caught (mutmut's names). Not a timeout: on a loaded machine mutmut's time limit
#: catches slow runs of sound tests as well as mutants that hang, so a timed-out mutant counts as surviving
CAUGHT = ("killed",)
def settings(root: Path = ROOT) -> dict:
    """benchmarks/mutation.toml: the groups (modules, tests, target), the modules below their target (a floor and
    why) and the equivalent mutants (each with why)."""
    return tomllib.loads((root / "benchmarks" / "mutation.toml").read_text())


def unit(module: str, name: str, group: dict) -> str:
    """What a group's row measures of ``module``: the module, or where the group names ``functions`` (a module too
    large for one session's run, measured in parts) the part, ``"path (group)"``."""
    return f"{module} ({name})" if group.get("functions") else module


def units(table: dict) -> dict[str, str]:
    """Every measured module or part of one (:func:`unit`) and its group, in the order declared."""
    return {unit(module, name, group): name for name, group in table["groups"].items() for module in group["modules"]}


def target(measured: str, table: dict) -> float:
    return float(table["groups"][units(table)[measured]]["target"])


def module_of(mutant: str) -> str:
    """The module a mutant's name is in: its dotted path less the last part (``x_f__mutmut_3``, or a method's
    ``xǁClassǁf__mutmut_3``), as a file."""
    return mutant.rsplit(".", 1)[0].replace(".", "/") + ".py"


def function_of(mutant: str) -> str:
    """The function a mutant changes, as its module names it: ``f`` (``x_f__mutmut_3``), a method ``Class.f``
    (``xǁClassǁf__mutmut_3``)."""
    name = mutant.rsplit(".", 1)[1].rsplit("__mutmut_", 1)[0]
    return ".".join(name[2:].split("ǁ", 1)) if name.startswith("xǁ") else name[2:]


def in_group(mutant: str, group: dict) -> bool:
    """Whether ``group`` measures ``mutant``: one of its modules', and of a function its ``functions`` (patterns
    as fnmatch reads them: ``Figures.*``, ``_add_*``) name where it names any."""
    return module_of(mutant) in group["modules"] and (
        not group.get("functions") or any(fnmatch.fnmatchcase(function_of(mutant), p) for p in group["functions"]))


def selected(group: dict, found: dict[str, str]) -> list[str]:
    """What mutmut is asked to run for ``group``: nothing (every mutant of its modules not yet checked), or, for a
    part, the names of its mutants not yet checked (``found``: :func:`statuses`), or before mutmut has made them, of
    its functions' mutants as patterns (mutmut matches them with fnmatch). mutmut runs every mutant it is named
    again, checked or not: a part resumed is named only what it has left."""
    if group.get("functions") and found:
        return sorted(k for k, status in found.items() if status == "not checked")
    out = []
    for module in group["modules"] if group.get("functions") else ():
        dotted = module[:-len(".py")].replace("/", ".")
        for pattern in group["functions"]:
            owner, _, name = pattern.rpartition(".")
            out.append(f"{dotted}.xǁ{owner}ǁ{name}__mutmut_*" if owner else f"{dotted}.x_{name}__mutmut_*")
    return out


def statuses(mutants: Path, group: dict) -> dict[str, str]:
    """Every mutant ``group`` measures (:func:`in_group`) and its status, as mutmut names it, from its working
    copy's ``.meta`` files."""
    from mutmut.stats import status_by_exit_code

    found = {}
    for meta in mutants.rglob("*.py.meta"):
        for key, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            if in_group(key, group):
                found[key] = status_by_exit_code[code]
    return found


def counted(table: dict, root: Path = ROOT) -> dict[str, int]:
    """Each module or part of one (:func:`unit`) and how many mutants mutmut makes of it from the code in ``root``
    now, nothing run: a stored row whose count differs measured other code (``--count``)."""
    from mutmut.mutation.file_mutation import mutate_file_contents

    made: dict[str, list[str]] = {}
    out = {}
    for name, group in table["groups"].items():
        for module in group["modules"]:
            if module not in made:
                dotted = module[:-len(".py")].replace("/", ".")
                code = (root / module).read_text()
                made[module] = [f"{dotted}.{m}" for m in mutate_file_contents(module, code).mutant_names]
            out[unit(module, name, group)] = sum(in_group(m, group) for m in made[module])
    return out


def count_lines(table: dict, stored: dict, root: Path = ROOT) -> list[str]:
    """``--count``'s lines: each module or part, the mutants mutmut makes of it now, and those its stored row
    (``stored``: the JSON's modules) counted, with that row's commit; "differs" where the two differ, "not stored"
    where no row is."""
    lines = []
    for measured, now in counted(table, root).items():
        row = stored.get(measured)
        said = "not stored" if row is None else (
            f"stored {row['mutants']} at {row['commit']}" + ("" if row["mutants"] == now else ", differs"))
        lines.append(f"{measured}: {now} mutants now; {said}")
    return lines


def finished(found: dict[str, str]) -> bool:
    """Whether mutmut made mutants and checked every one of them."""
    return bool(found) and "not checked" not in found.values()


def scores(found: dict[str, str], equivalent: dict[str, str], name: str, group: dict) -> dict:
    """The counts and score (%) of each module of ``group`` (or its part, :func:`unit`) from every mutant's status:
    killed, equivalent (not killed, and listed), surviving (by name; how many of those no test reached, and how many
    timed out)."""
    out = {}
    for module in group["modules"]:
        mine = {k: s for k, s in found.items() if module_of(k) == module and in_group(k, group)}
        same = sorted(k for k, s in mine.items() if s not in CAUGHT and k in equivalent)
        survived = sorted(k for k, s in mine.items() if s not in CAUGHT and k not in equivalent)
        caught = sum(s in CAUGHT for s in mine.values())
        out[unit(module, name, group)] = {
            "mutants": len(mine), "killed": sum(s == "killed" for s in mine.values()),
            "timeout": sum(mine[k] == "timeout" for k in survived), "equivalent": len(same),
            "survived": len(survived), "no_tests": sum(mine[k] == "no tests" for k in survived),
            "score": round(100 * (caught + len(same)) / len(mine), 1) if mine else 0.0, "survivors": survived,
            "killed_equivalents": sorted(k for k, s in mine.items() if s in CAUGHT and k in equivalent)}
    return out


#: beside a group's copy: the commit it was staged from, and the seconds mutmut has run in it (``--resume``)
COMMIT, SECONDS = "COMMIT", "SECONDS"
#: the file beside a group's copy that says its survivors were run again alone (:func:`run_group`)
ALONE = "ALONE"


def _git(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=True).stdout


def _extract(root: Path, commit: str, into: Path, *paths: str) -> None:
    """``commit``'s tree (or those of its ``paths``) written into ``into``."""
    with tarfile.open(fileobj=io.BytesIO(_git(root, "archive", "--format=tar", commit, *paths))) as archive:
        archive.extractall(into, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))


#: what a resumed copy keeps at its own commit: the package mutmut mutates and its settings
KEPT = ("ddpbench", "pyproject.toml")
#: the tests, and the package's own test support (nothing of ddpbench imports it: import-linter's layers), which
#: a resumed copy takes from HEAD
TESTS = ("tests", "ddpbench/testing")


def brought_up(root: Path, into: Path, commit: str) -> str:
    """A resumed copy brought to HEAD where only the tests (:data:`TESTS`, or the rest but :data:`KEPT`) moved since
    its commit, and the commit it then stands at: tests added while a group ran count at its end, where each
    survivor is run again (mutmut finds the new tests and maps them), and the row names HEAD. Its mutants' results
    are kept: one killed at the copy's commit is taken as killed at HEAD, which is sound while no test was taken
    away, so a copy whose package or settings changed, or one a test file was deleted from since, stays at its own
    commit."""
    head = _git(root, "rev-parse", "--short", "HEAD").decode().strip()
    if head == commit:
        return commit
    try:  # each changed path with its status, a renamed file as deleted and added
        changed = [line.split("\t") for line in _git(root, "diff", "--no-renames", "--name-status", commit, head, "--",
                                                     *KEPT, *TESTS).decode().splitlines()]
    except subprocess.CalledProcessError:
        changed = [["?", "its commit is not in this repository"]]
    tested = [(status, path) for status, path in changed if path.startswith(tuple(f"{t}/" for t in TESTS))]
    moved = [path for status, path in changed if (status, path) not in tested]
    deleted = [path for status, path in tested if status == "D"]
    if moved or deleted:
        why = f"{moved[0]} changed" if moved else f"{len(deleted)} test files were deleted or renamed"
        print(f"{into.name}: the copy stays at {commit}, not brought to {head}: {why} since", flush=True)
        return commit
    for path in [*into.iterdir(), into / "ddpbench" / "testing", into / "mutants" / "ddpbench" / "testing"]:
        if path.name not in (*KEPT, "mutants") and path.exists():  # mutmut copies the package's anew where gone
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    rest = [p for p in _git(root, "ls-tree", "--name-only", head).decode().split() if p not in KEPT]
    _extract(root, head, into, *rest, "ddpbench/testing")
    (into.parent / f"{into.name}.{COMMIT}").write_text(head + "\n")
    print(f"{into.name}: the copy brought from {commit} to {head} (the package unchanged; its results kept)",
          flush=True)
    return head


def staged(root: Path, into: Path, group: dict) -> tuple[Path, str]:
    """The committed tree (HEAD's: what the stored table names, never an uncommitted change) in a folder of its own,
    its ``[tool.mutmut]`` mutating ``group``'s modules against its tests, and that commit (short). Each group takes
    HEAD as it starts, so its row names the commit it measured. A copy already there (``--resume``) is used as it
    stands, at its own commit, or brought to HEAD where only its tests moved (:func:`brought_up`)."""
    if (into.parent / f"{into.name}.{COMMIT}").is_file():
        return into, brought_up(root, into, (into.parent / f"{into.name}.{COMMIT}").read_text().strip())
    into.mkdir(parents=True)
    commit = _git(root, "rev-parse", "--short", "HEAD").decode().strip()
    _extract(root, commit, into)
    text = (into / "pyproject.toml").read_text()
    own = (f"only_mutate = {json.dumps(group['modules'])}\n"
           f"pytest_add_cli_args_test_selection = {json.dumps(group['tests'])}\n")
    (into / "pyproject.toml").write_text(re.sub(r"^\[tool\.mutmut\]\n", lambda m: m.group(0) + own, text,
                                                count=1, flags=re.M))
    (into.parent / f"{into.name}.{COMMIT}").write_text(commit + "\n")
    return into, commit


def run_group(name: str, group: dict, table: dict, max_children: int, work: Path) -> tuple[dict, float, str]:
    """(each module's score, the group's wall time in seconds, the commit it measured)."""
    copy, commit = staged(ROOT, work / name, group)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    spent = work / f"{name}.{SECONDS}"
    before = float(spent.read_text()) if spent.is_file() else 0.0
    alone = work / f"{name}.{ALONE}"
    found = statuses(copy / "mutants", group)
    if finished(found) and alone.is_file():  # a group a resumed run finished is read, not run again: its time stays
        return scores(found, table.get("equivalent", {}), name, group), before, commit
    started, said, code = time.monotonic(), work / f"{name}.stderr", 0

    def mutmut(*args: str) -> int:  # stopped (Ctrl-C, SIGTERM), mutmut is asked to end and waited for (ended.py)
        try:
            ended.run([sys.executable, "-m", "mutmut", "run", *args], cwd=copy, env=env, stdout=subprocess.DEVNULL,
                      stderr=stderr)
        except subprocess.CalledProcessError as failed:
            return failed.returncode
        return 0

    try:
        with open(said, "w") as stderr:
            if not finished(found):
                code = mutmut(*selected(group, found), "--max-children", str(max_children))
            # a group's run has recorded as surviving mutants that a run of each alone kills (mutants of a function
            # whose every mapped test fails on them by hand): each survivor is run again alone, and its result kept;
            # not those listed as equivalent (each costs every test that reaches it, a minute or two on 2 cores)
            found = statuses(copy / "mutants", group)
            survivors = sorted(k for k, status in found.items()
                               if status == "survived" and k not in table.get("equivalent", {}))
            if finished(found):
                code = mutmut(*survivors) if survivors else code
                alone.write_text("".join(f"{k}\n" for k in survivors))
    finally:  # a run stopped here is resumed with the time it has spent
        wall = before + time.monotonic() - started
        spent.write_text(f"{wall:.0f}\n")
    found = statuses(copy / "mutants", group)
    if not finished(found) or not alone.is_file():
        unchecked = sum(s == "not checked" for s in found.values())
        sys.exit(f"group {name}: mutmut made {len(found)} mutants and left {unchecked} unchecked (exit "
                 f"{code}); nothing stored: {said.read_text().strip()[-2000:]}")
    return scores(found, table.get("equivalent", {}), name, group), wall, commit


#: the line that opens each run's lines in the table
RUN = "### Run {}"


def markdown(found: dict, table: dict, runs: list[list[str]]) -> str:
    lines = [HEADER, "", "Score: (killed + equivalent) / mutants; a mutant no test reaches, or that timed out, counts "
             "as surviving (mutation.json beside this file names every survivor); the equivalent mutants are listed "
             "with why in benchmarks/mutation.toml. Run: the run that measured the group (below the table: its "
             "command, date, machine and load); commit: the committed tree the group measured (each group takes HEAD "
             "as it starts); time: the group's wall time, on the machine and load of that run.",
             "", "| module | mutants | killed | equivalent | surviving (no test, timed out) | score | target | group, "
             "run, commit, time |", "|---|---|---|---|---|---|---|---|"]
    for module, row in found.items():
        lines.append(f"| `{module}` | {row['mutants']} | {row['killed']} | {row['equivalent']} | {row['survived']} "
                     f"({row['no_tests']}, {row['timeout']}) | {row['score']:.1f} % | {target(module, table):g} % | "
                     f"{row['group']}, run {row['run']}, {row['commit']}, {row['group_seconds']:.0f} s |")
    for number, run in enumerate(runs, 1):
        lines += ["", RUN.format(number), "", *run]
    return "\n".join(lines) + "\n"


def kept(path: Path | None, measured: list[str], table: dict) -> tuple[list[list[str]], dict]:
    """The runs and rows of the table at ``path`` (its JSON beside it) that a run measuring the groups ``measured``
    keeps: every row of another group, and the runs those rows name, renumbered in their order. A table of one run
    (a ``run`` of lines, as stored before runs were kept) is read as that one run."""
    store = path.with_suffix(".json") if path is not None else None
    if store is None or not store.is_file():
        return [], {}
    text = json.loads(store.read_text())
    runs = text.get("runs") or [text["run"]]
    rows = {m: row for m, row in text["modules"].items()
            if m in units(table) and row["group"] not in measured and units(table)[m] == row["group"]}
    named = sorted({row.get("run", 1) for row in rows.values()})
    return [runs[n - 1] for n in named], {m: {**row, "run": named.index(row.get("run", 1)) + 1}
                                           for m, row in rows.items()}


def joined(runs: list[list[str]], rows: dict, now: list[str], found: dict, table: dict) -> tuple[list, dict]:
    """The kept ``runs`` and ``rows`` with this run (its lines ``now``, its rows ``found``) after them; the rows in
    the order benchmarks/mutation.toml declares their modules."""
    mine = {m: {**row, "run": len(runs) + 1} for m, row in found.items()}
    every = {**rows, **mine}
    return [*runs, now], {m: every[m] for m in units(table) if m in every}


def main(argv: list[str] | None = None) -> None:
    table = settings()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--group", action="append", choices=list(table["groups"]), help="a group to run (repeatable)")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="a new folder to keep the copies and mutmut's results in")
    parser.add_argument("--resume", type=Path, metavar="DIR",
                        help="go on with the run kept in DIR (--keep), stopped part way (module docstring)")
    parser.add_argument("--out", type=Path, help="the table to write (.md), its JSON beside it")
    parser.add_argument("--count", action="store_true",
                        help="run nothing: each module's mutants now beside its stored row's (--out's, else the "
                             "committed table's)")
    args = parser.parse_args(argv)
    if args.count:
        store = (args.out or HERE / "mutation.md").with_suffix(".json")
        stored = json.loads(store.read_text())["modules"] if store.is_file() else {}
        print("\n".join(count_lines(table, stored)))
        return
    # a run stopped by SIGTERM (kill, a session's end) ends as Ctrl-C does: each group's time is kept for --resume
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    if args.keep and args.keep.exists():
        sys.exit(f"--keep: {args.keep} exists; give a new folder, or --resume it")
    if args.resume and not any(args.resume.glob(f"*.{COMMIT}")):
        sys.exit(f"--resume: {args.resume} holds no run of this script (no group's {COMMIT}); give its --keep folder")
    if args.keep and args.resume:
        sys.exit("--keep and --resume: give one (--resume keeps the folder it goes on with)")
    if args.out and args.out.suffix != ".md":
        sys.exit(f"--out: {args.out} is not a .md file")
    if args.out:  # before hours of mutants, not after: a table this script did not write is not written over
        check_out(args.out, HEADER)
        check_out(args.out.with_suffix(".json"), flag="--out's JSON")
    command = "`python benchmarks/mutation.py " + " ".join(argv if argv is not None else sys.argv[1:]) + "`"
    head = [f"{command}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "", machine(ROOT),
            f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}"]
    if args.resume:
        head.append(f"resumed: each group's copy in {args.resume} as it stood, at the commit its row names")
    work = args.keep or args.resume or Path(tempfile.mkdtemp(prefix="ddpbench-mutation-"))
    work.mkdir(parents=True, exist_ok=True)
    groups = args.group or list(table["groups"])
    runs, rows = kept(args.out, groups, table)
    found, now = {}, head
    try:
        for done, name in enumerate(groups, 1):
            scored, wall, commit = run_group(name, table["groups"][name], table, args.max_children, work)
            found.update({m: {**row, "group": name, "commit": commit, "group_seconds": round(wall)}
                          for m, row in scored.items()})
            print(f"{name}: {sum(r['mutants'] for r in scored.values())} mutants in {wall:.0f} s", flush=True)
            for key in (k for row in scored.values() for k in row["killed_equivalents"]):
                print(f"listed as equivalent but killed (take it off benchmarks/mutation.toml): {key}")
            # each finished group stored at once: a run stopped part way keeps what it measured, and says so
            reached = f"groups measured: {', '.join(groups[:done])}" + (
                f"; not reached: {', '.join(groups[done:])}" if done < len(groups) else "")
            now = [*head, f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", reached]
            if args.out:
                every, stored = joined(runs, rows, now, found, table)
                write_out(args.out, markdown(stored, table, every), HEADER)
                write_out(args.out.with_suffix(".json"), json.dumps({"runs": every, "modules": stored}, indent=1,
                                                                    ensure_ascii=False) + "\n", flag="--out's JSON")
    finally:
        if not (args.keep or args.resume):
            shutil.rmtree(work, ignore_errors=True)
    every, stored = joined([], {}, now, found, table)
    print(markdown(stored, table, every))


if __name__ == "__main__":
    main()
