"""Where the suite's wall time goes: by folder, by kind of process a test starts, by fixture and by file.

    python benchmarks/suite_durations.py --out TABLES.md --costs COSTS.json \\
        [--json DURATIONS.json] [-- PYTEST_ARGS...]
    python benchmarks/suite_durations.py --from DURATIONS.json [--out ...] [--costs ...]  # a kept run's

Runs ``python -m pytest -p ddpbench.testing.accounting --suite-durations=JSON PYTEST_ARGS`` (default:
``-q -n 0 -p no:cacheprovider`` and the test files of tests/processes, tests/benchmarks and tests/examples,
those the suite runs alone first, then those it runs one at a time, then the rest: what the suite waits
on is measured first, should the run be stopped part way; :func:`default_files`), which records each
test's setup, call and teardown seconds, each fixture's setup and the kinds of process the test
started (:mod:`ddpbench.testing.accounting`; under pytest-xdist each worker records its own), then
writes the tables, headed by this command, to ``--out`` (default: printed). A test that starts
several kinds of process is counted under the costliest (Slurm, a Ray cluster, a browser, a
TensorFlow import, a sweep's ranks, then any other process). ``-n 0`` gives each test's time as if
it ran alone; under xdist a test's seconds are its worker's, beside whatever the others ran.
Unset ``PYTHONDONTWRITEBYTECODE`` first, as CI does (``.ci/run``).

``--costs`` keeps each test file's seconds in a small JSON file, ``{"command": ..., "files": {path:
seconds}}``: the suite's schedule hands files out costliest first by it (:mod:`ddpbench.testing.scheduling`).
A run of some files updates theirs and keeps the others'.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from ddpbench.testing.accounting import NONE, PLAIN, TEST_KINDS, read
from ddpbench.testing.scheduling import runs_alone, runs_one_at_a_time

sys.path.insert(0, str(Path(__file__).resolve().parent))
from written import check_out, write_out  # noqa: E402  (a sibling module)

#: the first line of the note the script writes
HEADER = "<!-- written by benchmarks/suite_durations.py -->"
DEFAULT_OPTIONS = ("-q", "-n", "0", "-p", "no:cacheprovider")
DEFAULT_FOLDERS = ("tests/processes", "tests/benchmarks", "tests/examples")
KIND_ORDER = [name for name, _ in TEST_KINDS] + [PLAIN, NONE]


def default_files(root: Path = Path(".")) -> list[str]:
    """The test files of :data:`DEFAULT_FOLDERS`: those the schedule runs alone, then those it runs one at a
    time, then the others (:mod:`ddpbench.testing.scheduling`), each group in the suite's order."""
    files = [path.as_posix() for folder in DEFAULT_FOLDERS for path in sorted((root / folder).glob("**/test_*.py"))]
    return sorted(files, key=lambda f: (not runs_alone(f), not runs_one_at_a_time(f), files.index(f)))


def _total(entry: dict) -> float:
    return entry["setup"] + entry["call"] + entry["teardown"]


def folder_of(nodeid: str) -> str:
    """``tests/<kind>/<stage>`` of a test (``tests/benchmarks`` has no stage)."""
    parts = nodeid.split("::", 1)[0].split("/")
    return "/".join(parts[:3]) if len(parts) > 3 else "/".join(parts[:2])


def tables(tests: dict[str, dict], top: int = 25) -> list[str]:
    """The markdown tables of one run's records."""
    wall = sum(_total(e) for e in tests.values()) or 1.0
    lines = [f"{len(tests)} tests, {wall:.1f} s of setup, call and teardown in all.", ""]

    def group(key) -> dict[str, list]:
        grouped = defaultdict(list)
        for nodeid, entry in tests.items():
            grouped[key(nodeid, entry)].append(entry)
        return grouped

    by_kind = group(lambda _n, e: e["kind"])
    lines += ["## By kind of process started", "",
              "| kind | tests | seconds | share | of it in setup | slowest test (s) |",
              "|---|---:|---:|---:|---:|---:|"]
    for kind in sorted(by_kind, key=lambda k: -sum(map(_total, by_kind[k]))):
        entries = by_kind[kind]
        seconds = sum(map(_total, entries))
        lines.append(f"| {kind} | {len(entries)} | {seconds:.1f} | {100 * seconds / wall:.1f}% | "
                     f"{sum(e['setup'] for e in entries):.1f} | {max(map(_total, entries)):.1f} |")
    by_folder = group(lambda n, _e: folder_of(n))
    lines += ["", "## By folder", "", "| folder | tests | seconds | share | "
              + " | ".join(KIND_ORDER) + " |", "|---|---:|---:|---:|" + "---:|" * len(KIND_ORDER)]
    for folder in sorted(by_folder, key=lambda f: -sum(map(_total, by_folder[f]))):
        entries = by_folder[folder]
        seconds = sum(map(_total, entries))
        kinds = [sum(_total(e) for e in entries if e["kind"] == kind) for kind in KIND_ORDER]
        lines.append(f"| {folder} | {len(entries)} | {seconds:.1f} | {100 * seconds / wall:.1f}% | "
                     + " | ".join(f"{s:.1f}" if s else "" for s in kinds) + " |")
    by_file = group(lambda n, _e: n.split("::", 1)[0])
    lines += ["", f"## The {top} costliest files", "", "| file | tests | seconds | setup | kinds (tests) |",
              "|---|---:|---:|---:|---|"]
    for path in sorted(by_file, key=lambda f: -sum(map(_total, by_file[f])))[:top]:
        entries = by_file[path]
        counts = defaultdict(int)
        for entry in entries:
            counts[entry["kind"]] += 1
        kinds = ", ".join(f"{k} ({c})" for k, c in sorted(counts.items(), key=lambda kc: -kc[1]))
        lines.append(f"| {path} | {len(entries)} | {sum(map(_total, entries)):.1f} | "
                     f"{sum(e['setup'] for e in entries):.1f} | {kinds} |")
    fixtures = defaultdict(lambda: [0.0, 0])
    for entry in tests.values():
        for name, seconds in entry["fixtures"].items():
            fixtures[name][0] += seconds
            fixtures[name][1] += 1
    lines += ["", f"## The {top} costliest fixtures (their setup, each time it ran)", "",
              "| fixture (scope) | seconds | set up |", "|---|---:|---:|"]
    for name, (seconds, count) in sorted(fixtures.items(), key=lambda nf: -nf[1][0])[:top]:
        lines.append(f"| {name} | {seconds:.1f} | {count} |")
    lines += ["", f"## The {top} costliest tests", "", "| test | kind | seconds | setup |", "|---|---|---:|---:|"]
    for nodeid, entry in sorted(tests.items(), key=lambda ne: -_total(ne[1]))[:top]:
        lines.append(f"| {nodeid} | {entry['kind']} | {_total(entry):.1f} | {entry['setup']:.1f} |")
    return lines


def write_costs(path: Path, tests: dict[str, dict], command: str) -> None:
    """Each test file's seconds into ``path``'s ``files``, the other files' kept."""
    try:
        kept = json.loads(path.read_text()).get("files", {})
    except (OSError, ValueError, AttributeError):
        kept = {}
    files = defaultdict(float)
    for nodeid, entry in tests.items():
        files[nodeid.split("::", 1)[0]] += _total(entry)
    kept.update({name: round(seconds, 1) for name, seconds in files.items()})
    write_out(path, json.dumps({"command": command, "files": dict(sorted(kept.items()))}, indent=1) + "\n",
              flag="--costs")


def _commit() -> str:
    found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    return found.stdout.strip() or "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="the markdown file to write (default: printed)")
    parser.add_argument("--json", type=Path, help="keep the per-test records here (default: a temporary file)")
    parser.add_argument("--costs", type=Path, help="update each test file's seconds in this JSON file")
    parser.add_argument("--from", dest="source", type=Path, help="the tables (and costs) of a kept run; run nothing")
    parser.add_argument("--top", type=int, default=25, help="files, fixtures and tests to list (default: 25)")
    parser.add_argument("pytest_args", nargs="*", help="after --: pytest's arguments")
    args = parser.parse_args()
    for flag, path, header in (("--out", args.out, HEADER), ("--costs", args.costs, None), ("--json", args.json, None)):
        if path is not None:
            check_out(path, header, flag)
    if args.source is not None:
        if not args.source.is_file():
            print(f"suite_durations: --from {args.source}: no such file", file=sys.stderr)
            return 2
        tests, shown = read(args.source), " ".join(shlex.quote(a) for a in ["python", "benchmarks/suite_durations.py",
                                                                              *sys.argv[1:]])
        text = "\n".join([HEADER, "# Where the suite's time goes", "", f"The tables of a kept run, by `{shown}`.", ""]
                         + tables(tests, args.top)) + "\n"
        _emit(args, text, tests, shown)
        return 0
    pytest_args = list(args.pytest_args or [*DEFAULT_OPTIONS, *default_files()])
    with tempfile.TemporaryDirectory(prefix="suite-durations-") as folder:
        out_json = (args.json or Path(folder) / "durations.json").resolve()
        for stale in [out_json, *out_json.parent.glob(f"{out_json.stem}.gw*.json")]:
            stale.unlink(missing_ok=True)
        command = [sys.executable, "-m", "pytest", "-p", "ddpbench.testing.accounting",
                   f"--suite-durations={out_json}", *pytest_args]
        started, start = datetime.datetime.now(datetime.timezone.utc), time.monotonic()
        code = subprocess.run(command, check=False).returncode
        wall = time.monotonic() - start
        tests = read(out_json)
    shown = " ".join(shlex.quote(a) for a in ["python", "benchmarks/suite_durations.py", *sys.argv[1:]])
    ran = (f"`python -m pytest {shlex.join(pytest_args)}`" if args.pytest_args else
           f"`python -m pytest {shlex.join(DEFAULT_OPTIONS)}` on the {len(pytest_args) - len(DEFAULT_OPTIONS)} test "
           f"files of {', '.join(DEFAULT_FOLDERS)} (those the suite runs alone first, then one at a time, "
           "then the rest)")
    stopped = " (stopped part way: the tests it ran)" if code == 2 or code < 0 else ""
    header = [
        HEADER, f"`{shown}`, {started:%Y-%m-%d %H:%M} UTC", "",
        f"{os.cpu_count()} CPUs ({platform.machine()}), ddpbench at {_commit()}, `nice` before the command; it ran "
        f"{ran} with the durations plugin, and pytest exited {code}{stopped} after {wall:.1f} s of wall time.", "",
        "# Where the suite's time goes", "",
        "Seconds are a test's setup, call and teardown as pytest measured them; a fixture's setup is counted in the "
        "test that first needed it. The machine was shared (other work ran beside it): compare shares and ratios of "
        "one run, not seconds across runs.", ""]
    text = "\n".join(header + tables(tests, args.top)) + "\n"
    _emit(args, text, tests, shown)
    return code


def _emit(args, text: str, tests, shown: str) -> None:
    """The tables to ``--out`` (else printed), and each file's seconds to ``--costs`` where asked."""
    if args.costs:
        write_costs(args.costs, tests, shown)
    if args.out:
        write_out(args.out, text, HEADER)
    else:
        print(text)


if __name__ == "__main__":
    sys.exit(main())
