"""A generated run of hostile cases over every command that writes (issue 83): ``sweep``, ``run``, ``tune``,
``collectives``, ``report`` (and ``report --check``), ``compare``, ``ab`` (its refusals before a side starts),
``history add``, ``history page``, ``history check``, ``export-benchmark`` and ``whatif``, in this process
(:func:`ddpbench.testing.run_main`). The product of

* every writing command and every hostile target path (empty, a link, a link loop, a file, a path under a
  file, a non-UTF-8 name, a folder that cannot be written, the current folder),
* every writing command and every kind of folder as its target (a results folder, a compare folder, a
  store, an ``ab`` folder, a report folder, a history page's folder, a user's folder, an empty one, one with
  a marker written before markers named a kind), with ``--force`` and without,
* every command that reads a folder and every kind of folder as its input,
* hostile values (control characters, NaN, infinities, negative and huge numbers, ``-``-prefixed values
  that git would read as its options),
* ``report --check`` on a folder with nothing to check.

Each case holds to the writer's contract (:mod:`ddpbench.files.writing`): no traceback; exit 0, 1 (a gate)
or 3 (nothing tested) where done, 2 where refused, and a refusal is one line naming the flag or the file;
the case's expected outcome (refused or done) where the contract says it; no file outside the target
changed (a canary tree around it, the shared inputs, the current folder), and a refused target left as it
was. A sweep that gets past its checks reaches a probe in place of its runner (:class:`Reached`), and git is
a stand-in that fails a case where a typed value reaches it as an option: no case starts a process. The
counts by command and outcome are printed by the last test (``pytest -s`` or ``-rA``)."""

from __future__ import annotations

import collections
import errno
import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ddpbench.files.folders import LOCK, MARKER, OWNER
from ddpbench.testing import ROOT, TINY, run_main, write_experiment
from ddpbench.testing.cli import Reached, folder_marker, held, snapshot
from ddpbench.testing.histories import synthetic_history
from ddpbench.testing.records import ENV, ResultsFolder, ok, write_results

#: the commands that write, each by a short name: (its target's flag, the kind of folder it writes; None:
#: a file)
WRITERS = {"sweep": ("--out", "results"), "run": ("--out", "results"), "tune": ("--out", "results"),
           "collectives": ("--out", "results"), "report": ("--out", "report"), "compare": ("--out", "compare"),
           "ab": ("--out", "ab"), "add": ("--store", "store"), "page": ("--out", "page"),
           "export": ("--out", None)}
#: the hash the git stand-in gives for a commit it knows
SHA = "abcdef1" + "0" * 33
#: what a refused case's line must hold besides the flag, and each outcome a case may end in
REFUSED, DONE, EITHER = "refused", "done", "either"

#: outcome counts by command: printed by the last test
COUNTS: collections.Counter = collections.Counter()
#: ddpbench's own control files in a folder it writes
CONTROL = (MARKER, LOCK, OWNER)






# ---------------------------------------------------------------------------------------------
# the world: shared inputs, made once, and every kind of folder as a template
# ---------------------------------------------------------------------------------------------



class World:
    """The inputs every case reads (never written: checked after each case) and the templates of every
    kind of folder, copied to each case's target."""

    def __init__(self, root: Path):
        self.root = root
        inputs = root / "inputs"
        self.a = write_results(inputs / "A", [ok(10.0, world_size=1), ok(6.0, world_size=2)])
        self.b = write_results(inputs / "B", [ok(10.5, world_size=1), ok(6.1, world_size=2)])
        self.store = synthetic_history(inputs / "history", [10.0] * 3, [6.0] * 3)
        # a store, marked as one by its command
        assert run_main("history", "add", self.b, "--store", self.store, "--commit", "abcdef1").returncode == 0
        self.tiny = write_experiment(inputs / "tiny.toml", TINY)
        self.tiny_b = write_experiment(inputs / "tiny-b.toml", TINY.replace('"tiny"', '"tiny-b"'))
        self.collectives = ROOT / "experiments" / "collectives.toml"
        kinds = root / "kinds"
        self.kinds = kinds
        # a results folder with its report; a compare folder; a report folder; a page's folder: each
        # written by its command
        shutil.copytree(self.a, kinds / "results")
        assert run_main("report", kinds / "results").returncode == 0
        assert run_main("compare", self.a, self.b, "--out", kinds / "compare").returncode == 0
        assert run_main("report", self.a, "--out", kinds / "report").returncode == 0
        assert run_main("history", "page", "--store", self.store, "--out", kinds / "page").returncode == 0
        shutil.copytree(self.store, kinds / "store")
        # an A/B's folder: its marker, and its sides' results folders
        ab = kinds / "ab"
        shutil.copytree(self.a, ab / "A")
        shutil.copytree(self.b, ab / "B")
        (ab / "ab.json").write_text('{"calls": []}\n')
        (ab / MARKER).write_text(json.dumps({"written_by": "ddpbench", "kind": "ab", "writer": "ab", "run": "",
                                             "created": "2026-11-28T00:00:00Z"}) + "\n")
        user = kinds / "user"
        user.mkdir()
        (user / "notes.txt").write_text("mine\n")
        (user / "data.csv").write_text("a,b\n1,2\n")
        (kinds / "empty").mkdir()
        # a marker written before markers named a kind (ddpbench 2026 and earlier), over compare's files
        legacy = kinds / "legacy"
        shutil.copytree(kinds / "compare", legacy, ignore=shutil.ignore_patterns(*CONTROL))
        (legacy / MARKER).write_text('{"written_by": "ddpbench", "created": "2026-01-01T00:00:00Z"}\n')
        # ... and the same in a user's folder that one old `compare --force` marked (the u1)
        shutil.copytree(legacy, kinds / "legacy-user")
        (kinds / "legacy-user" / "notes.txt").write_text("mine\n")
        for folder in kinds.iterdir():  # no writer holds a template; its lock file is not copied
            for name in (".ddpbench.lock", ".ddpbench.owner"):
                (folder / name).unlink(missing_ok=True)
        self.shared = snapshot(root)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:  # as every test here runs: no report helper, no git (processes)
        patch.setenv("DDPBENCH_REPORT_HELPER", "0")
        patch.setattr("ddpbench.sweep.revisions.git", Git())
        return World(tmp_path_factory.mktemp("world"))


@pytest.fixture(autouse=True)
def probes(monkeypatch):
    """A sweep past its checks reaches a probe, not its runner; an A/B's rounds too: no case runs a job."""
    def reached(*args, **kw):
        raise Reached

    for name in ("ddpbench.sweep.runner.run_sweep", "ddpbench.sweep.runner.run_collectives",
                 "ddpbench.sweep.search.run_search", "ddpbench.sweep.ab.run_ab"):
        monkeypatch.setattr(name, reached)


class Git:
    """git's stand-in (:func:`ddpbench.sweep.revisions.git`, the one place git runs): a folder holding
    ``.git`` is a repository whose ``HEAD`` and ``abcdef1`` are commits; every call is kept, to check that
    no value a user typed reached git where git reads options."""

    def __init__(self):
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, repo, *args):
        self.calls.append(tuple(map(str, args)))
        where = Path(str(repo) or ".")
        if args[:2] == ("rev-parse", "--show-toplevel"):
            if (where / ".git").is_dir():
                return subprocess.CompletedProcess(args, 0, f"{where.resolve()}\n", "")
            return subprocess.CompletedProcess(args, 128, "", "fatal: not a git repository\n")
        if args[:1] == ("rev-parse",):
            rev = args[-1].removesuffix("^{commit}")
            known = rev in ("HEAD", "HEAD~1", "abcdef1", SHA)
            return subprocess.CompletedProcess(args, 0 if known else 1, SHA + "\n" if known else "", "")
        if args[:1] == ("show",):
            return subprocess.CompletedProcess(args, 0, "2026-11-01T10:00:00+00:00\n", "")
        if args[:2] == ("cat-file", "-e"):
            return subprocess.CompletedProcess(args, 0, "", "")
        return subprocess.CompletedProcess(args, 1, "", "fatal: unknown\n")

    def as_options(self, value: str) -> list[tuple[str, ...]]:
        """The calls that passed ``value`` before ``--end-of-options`` or ``--``: where git reads options."""
        found = []
        for call in self.calls:
            for arg in call:
                if arg in ("--end-of-options", "--"):
                    break
                if value in arg:
                    found.append(call)
                    break
        return found


@pytest.fixture(autouse=True)
def git(monkeypatch):
    fake = Git()
    monkeypatch.setattr("ddpbench.sweep.revisions.git", fake)
    import ddpbench.sweep.ab as ab

    if hasattr(ab, "git"):
        monkeypatch.setattr(ab, "git", fake)
    return fake


# ---------------------------------------------------------------------------------------------
# one case: its command line, run, and what must hold after it
# ---------------------------------------------------------------------------------------------

def writer_argv(world: World, command: str, target) -> list:
    """``command`` writing into ``target`` with inputs that are valid."""
    return {"sweep": ["sweep", world.tiny, "--out", target],
            "run": ["run", "--model-size", "xs", "--world-size", "1", "--device", "cpu", "--backend", "gloo",
                    "--steps", "2", "--out", target],
            "tune": ["tune", world.tiny, "--budget", "8", "--out", target],
            "collectives": ["collectives", world.collectives, "--world-sizes", "2", "--sizes", "1K", "--out", target],
            "report": ["report", world.a, "--out", target],
            "compare": ["compare", world.a, world.b, "--out", target],
            "ab": ["ab", world.tiny, world.tiny_b, "--max-rounds", "1", "--out", target],
            "add": ["history", "add", world.a, "--store", target, "--commit", "abcdef1"],
            "page": ["history", "page", "--store", world.store, "--out", target],
            "export": ["export-benchmark", world.a, "--out", target]}[command]


class Case:
    """A work folder for one case: ``cwd`` (a git repository, holding a file of the user's) and a canary
    tree around the target, ``canary/target``; the rest of ``tmp_path`` must not change."""

    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path
        self.cwd = tmp_path / "cwd"
        (self.cwd / ".git").mkdir(parents=True)
        (self.cwd / "notes.txt").write_text("mine\n")
        self.canary = tmp_path / "canary"
        (self.canary / "sub").mkdir(parents=True)
        (self.canary / "mine.txt").write_text("mine\n")
        (self.canary / "sub" / "notes.txt").write_text("mine\n")
        self.target = self.canary / "target"


def run_case(world: World, case: Case, git: Git, command: str, argv: list, expect: str, names: tuple,
             target: Path | None = None, codes: tuple = (0,), injected: str | None = None, warned: bool = False):
    """Run ``argv`` in ``case``; check every rule (module docstring); count the outcome under ``command``.
    ``names``: what a refusal's line must name (any of them: the flag, the file); ``target``: the one place
    it may write (None: nowhere); ``codes``: the exit codes of a done case; ``warned``: a refusal may follow
    one warning line (damaged records, counted in it)."""
    target = Path(os.path.abspath(target)) if target is not None else None
    before = snapshot(case.tmp)
    try:
        done = run_main(*argv, cwd=case.cwd, timeout=120)
    except Reached:
        done = subprocess.CompletedProcess(argv, 0, "", "")  # past every check, into the runner's place
    text = done.stdout + done.stderr
    assert "Traceback" not in text, text
    refused = done.returncode == 2
    if expect == REFUSED:
        assert refused, f"not refused (exit {done.returncode}): {done.stdout[-300:]} {done.stderr[-300:]}"
    elif expect == DONE:
        assert not refused, done.stderr
    after = snapshot(case.tmp)
    if target is not None and target.is_relative_to(case.tmp):
        inside = os.path.relpath(target, case.tmp)

        def outside(found):
            return {k: v for k, v in found.items() if k != inside and not k.startswith(inside + os.sep)}
    else:
        def outside(found):
            return found
    assert outside(after) == outside(before), "a file outside the target changed"
    assert snapshot(world.root) == world.shared, "an input or a template changed"
    assert not [k for k in after if k.endswith(".tmp")], "a temporary file was left behind"
    if injected is not None:
        assert git.as_options(injected) == [], f"{injected!r} reached git as an option"
    if refused:
        lines = done.stderr.strip().splitlines()
        if warned and len(lines) == 2 and lines[0].startswith("warning:"):
            lines = lines[1:]
        assert len(lines) == 1, done.stderr
        assert any(str(name) in lines[0] for name in names), (names, lines[0])
        assert after == before, "a refused case wrote"
    else:
        assert done.returncode in codes, (done.returncode, done.stdout, done.stderr)
    COUNTS[(command, "refused" if refused else "done")] += 1
    return done


# ---------------------------------------------------------------------------------------------
# hostile target paths
# ---------------------------------------------------------------------------------------------

PATHS = ("empty", "link", "link loop", "file", "under a file", "non-UTF-8 name", "unwritable", "current folder")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("command", WRITERS)
def test_a_hostile_target_path_is_refused_in_one_line_or_written_whole(world, tmp_path, monkeypatch, git, command,
                                                                       path):
    case = Case(tmp_path)
    flag, kind = WRITERS[command]
    target, expect, cwd_target = case.target, REFUSED, None
    if path == "empty":
        target = ""
    elif path == "link":
        (case.canary / "elsewhere").mkdir()
        target.symlink_to(case.canary / "elsewhere")
    elif path == "link loop":
        target.symlink_to(case.canary / "loop")
        (case.canary / "loop").symlink_to(target)
    elif path == "file":
        target.write_text("mine\n")
    elif path == "under a file":
        (case.canary / "file").write_text("mine\n")
        target = case.canary / "file" / "target"
    elif path == "non-UTF-8 name":
        target = case.canary / os.fsdecode(b"target-\xff")
        expect = EITHER
    elif path == "unwritable":  # a read-only file system answers so (root ignores modes)
        target.mkdir()
        real_open = os.open
        under = str(target) if kind is not None else str(case.canary)

        def no_writes(p, flags, *args, **kw):
            if flags & (os.O_CREAT | os.O_WRONLY | os.O_RDWR) and os.path.abspath(p).startswith(under):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), p)
            return real_open(p, flags, *args, **kw)

        monkeypatch.setattr(os, "open", no_writes)
        if kind is None:
            target = case.canary / "new.json"
    elif path == "current folder":  # the current folder, holding a file of the user's
        target, cwd_target = ".", case.cwd
    run_case(world, case, git, command, writer_argv(world, command, target), expect, (flag, "target"),
             target=cwd_target or (target if target else None))


# ---------------------------------------------------------------------------------------------
# every kind of folder as every writer's target
# ---------------------------------------------------------------------------------------------

KINDS = ("new", "empty", "user", "legacy", "legacy-user", "results", "compare", "store", "ab", "report", "page")


def target_expectation(command: str, found: str, force: bool) -> str:
    """What the contract says of ``command`` writing into a folder of the kind ``found``."""
    kind = WRITERS[command][1]
    if kind is None:  # export-benchmark writes a file: a folder is never it
        return DONE if found == "new" else REFUSED
    if found in ("new", "empty"):
        return DONE
    if found == "user":
        return DONE if force else REFUSED
    if found == "legacy":  # compare's files under a kindless marker: compare's folder, no one else's
        return DONE if kind == "compare" else REFUSED
    if found == "legacy-user":  # the u1: one old --force blesses it for nothing later
        return DONE if force else REFUSED
    if found != kind:  # a folder of another kind: refused, --force or not
        return REFUSED
    if kind in ("results", "ab"):  # a sweep into another experiment's results, an A/B of other sides
        return EITHER
    return DONE  # the same run again (the templates were written by the same command lines)


#: (command, kind of folder, --force): --force only where it may change the outcome
TARGETS = [(command, found, force) for command in WRITERS for found in KINDS for force in (False, True)
           if not (force and found in ("new", "empty", "legacy"))]


@pytest.mark.parametrize("command, found, force", TARGETS,
                         ids=[f"{c}-{k}{'-force' if f else ''}" for c, k, f in TARGETS])
def test_a_writer_takes_only_a_folder_of_its_own_kind(world, tmp_path, git, command, found, force):
    case = Case(tmp_path)
    if found != "new":
        shutil.copytree(world.kinds / found, case.target, symlinks=True)
    mine = {k: v for k, v in snapshot(case.target).items() if "/" not in k and k in ("notes.txt", "data.csv")}
    flag, _ = WRITERS[command]
    expect = target_expectation(command, found, force)
    argv = writer_argv(world, command, case.target) + (["--force"] if force else [])
    done = run_case(world, case, git, command, argv, expect, (flag,), target=case.target)
    kind = WRITERS[command][1]
    if done.returncode != 2 and kind is None:  # a whole file of pytest-benchmark's
        assert json.loads(case.target.read_text())["benchmarks"]
    elif done.returncode != 2 and command != "ab":  # an A/B's rounds (its sides' claims) are not run here
        assert folder_marker(case.target).get("kind") == kind and not held(case.target)
    after = snapshot(case.target) if case.target.is_dir() else {}
    # --force replaces only the command's own files: a user's are as they were
    assert {k: after.get(k) for k in mine} == mine


# ---------------------------------------------------------------------------------------------
# every kind of folder as every reader's input
# ---------------------------------------------------------------------------------------------

INPUT_KINDS = ("results", "compare", "store", "ab", "ab side", "report", "page", "user", "empty", "legacy",
               "missing")
#: each command that reads a folder: its command line around the input, the kind it reads, where it writes
READERS = {
    "report": (lambda w, i, out: ["report", i, "--out", out], "results", "--out"),
    "report --check": (lambda w, i, out: ["report", i, "--check"], "results", None),
    "compare A": (lambda w, i, out: ["compare", i, w.b, "--out", out], "results", "--out"),
    "compare B": (lambda w, i, out: ["compare", w.a, i, "--out", out], "results", "--out"),
    "add": (lambda w, i, out: ["history", "add", i, "--store", out, "--commit", "abcdef1"], "results", "--store"),
    "page": (lambda w, i, out: ["history", "page", "--store", i, "--out", out], "store", "--out"),
    "check": (lambda w, i, out: ["history", "check", "--store", i], "store", None),
    "export": (lambda w, i, out: ["export-benchmark", i, "--out", Path(out).with_suffix(".json")], "results", "--out"),
    "whatif": (lambda w, i, out: ["whatif", "--from", i, "--gpus-per-node", "8", "--intra-gbit", "100",
                                  "--inter-gbit", "100"], "results", None),
}
#: the exit codes of a reader that is done: a check's 1 (a problem, a series slower) and history check's 3
DONE_CODES = {"report --check": (0, 1), "check": (0, 1, 3)}


@pytest.mark.parametrize("found", INPUT_KINDS)
@pytest.mark.parametrize("reader", READERS)
def test_a_reader_reads_only_a_folder_of_the_kind_it_reads(world, tmp_path, git, reader, found):
    case = Case(tmp_path)
    given = case.canary / "input"
    if found == "ab side":
        shutil.copytree(world.kinds / "ab" / "A", given)
    elif found != "missing":
        shutil.copytree(world.kinds / found, given, symlinks=True)
    build, kind, flag = READERS[reader]
    out = case.target if flag else None
    wanted = "results" if found in ("results", "ab side") else found
    expect = DONE if wanted == kind else REFUSED
    command = reader.split()[0] if reader != "report --check" else reader
    run_case(world, case, git, command, build(world, given, case.target), expect, (given.name, "input"),
             target=out if reader != "export" else Path(case.target).with_suffix(".json"),
             codes=DONE_CODES.get(reader, (0,)))


# ---------------------------------------------------------------------------------------------
# hostile values
# ---------------------------------------------------------------------------------------------

#: (command, flag, value): each refused in one line naming the flag
VALUES = [
    *[("sweep", "--timeout", v) for v in ("nan", "inf", "-1", "1e309", "0")],
    *[("sweep", "--stall", v) for v in ("nan", "inf", "-1", "1e309", "0")], ("run", "--stall", "0.2"),
    ("sweep", "--out", "out\nx"), ("sweep", "--out", "out\x1b[2Jx"),
    *[("run", "--steps", v) for v in ("nan", "-1", "1" + "0" * 30)],
    *[("run", "--bucket-cap-mb", v) for v in ("nan", "inf", "-1", "1e309")],
    ("run", "--world-size", "-2"), ("run", "--batch-size", "9" * 30), ("run", "--model", "mlp\n"),
    ("run", "--out", "out\rx"),
    *[("tune", "--budget", v) for v in ("-1", "0", "nan")], ("tune", "--out", "out\tx\n"),
    *[("collectives", "--iters", v) for v in ("-1", "nan")], ("collectives", "--sizes", "nan"),
    ("collectives", "--factor", "inf"), ("collectives", "--world-sizes", "-2"), ("collectives", "--out", "a\nb"),
    *[("report", "--price-per-device-hour", v) for v in ("nan", "inf", "-1", "1e309")],
    ("report", "--train-samples", "-5"), ("report", "--deadline-h", "inf"), ("report", "--currency", "US\nD"),
    ("report", "--price-source", "a\x00b"), ("report", "--price-date", "2026-13-45"), ("report", "--out", "a\nb"),
    *[("compare", "--fail-on", v) for v in ("median:nan%", "median:inf%", "median:-5%", "median:\n5%",
                                            "mean:1e400%", "median:5%\n", "--upload-pack=x")],
    ("compare", "--out", "a\nb"),
    *[("ab", "--budget", v) for v in ("nan", "inf", "-1", "1e309")],
    *[("ab", "--max-rounds", v) for v in ("-1", "0", "1" + "0" * 30)],
    *[("ab", "--same-within", v) for v in ("nan", "inf", "-5", "100")],
    ("ab", "--repo", "--upload-pack=x"), ("ab", "--repo", ""), ("ab", "BASE", "--upload-pack=x"),
    ("ab", "BASE", "HEAD\n"), ("ab", "--out", "a\nb"),
    *[("add", "--commit", v) for v in ("--upload-pack=x", "--output=victim", "", "HEAD\nx", "HEAD\x00",
                                       "-n", "HEAD..HEAD~1")],
    ("add", "--repo", "--upload-pack=x"), ("add", "--repo", ""), ("add", "--repo", "a\nb"), ("add", "--store", "a\nb"),
    *[("page", "--newest", v) for v in ("-1", "0", "nan", "1e3")], ("page", "--job", "mlp\n"),
    ("page", "--machine", "../inputs"), ("page", "--out", "a\nb"),
    *[("check", "--newest", v) for v in ("-1", "nan")], ("check", "--machine", "../inputs"),
    ("check", "--job", "a\x07"),
    ("export", "--out", "a\nb.json"),
    *[("whatif", "--compute-ms", v) for v in ("nan", "inf", "-1", "1e309")],
    *[("whatif", "--intra-gbit", v) for v in ("0", "-1", "nan")],
    *[("whatif", "--target-efficiency", v) for v in ("2", "nan", "-0.5")],
    ("whatif", "--world-sizes", "-1,2"), ("whatif", "--gpus-per-node", "0"),
    ("whatif", "--gpus-per-node", "-8"), ("whatif", "--currency", "a\nb"),
]
#: a value git would read as an option, checked never to reach it as one
GIT_OPTIONS = ("--upload-pack=x", "--output=victim", "-n")


#: the flags a flag needs beside it to be used at all (else it is refused as a flag without effect)
NEEDS = {"--price-source": ("--price-per-device-hour", "2"), "--price-date": ("--price-per-device-hour", "2"),
         "--currency": ("--price-per-device-hour", "2"), "--deadline-h": ("--train-samples", "1000"),
         "--batch-size": ("--price-per-device-hour", "2")}


def value_argv(world: World, case: Case, command: str, flag: str, value: str) -> list:
    """``command`` with one hostile ``value`` at ``flag`` (an --out value: under the canary folder), and
    the flags it needs to be used (:data:`NEEDS`)."""
    if command in ("report", "whatif") and flag in NEEDS:
        return [*value_argv(world, case, command, "", ""), *NEEDS[flag], flag, value]
    if flag in ("--out", "--store"):
        value = str(case.canary / value)
    if command == "whatif":
        argv = ["whatif", "--model", "resnet50", "--gpus-per-node", "8", "--intra-gbit", "100", "--inter-gbit", "100"]
        return argv + (["--compute-ms", "100"] if flag != "--compute-ms" else []) + ([flag, value] if flag else [])
    if command == "check":
        return ["history", "check", "--store", world.store, flag, value]
    if command == "ab" and flag == "BASE":
        return ["ab", value, "HEAD", "tiny.toml", "--repo", case.cwd, "--out", case.target]
    if command == "ab" and flag == "--repo":
        return ["ab", "HEAD~1", "HEAD", "tiny.toml", "--repo", value, "--out", case.target]
    argv = writer_argv(world, command, case.target)
    if not flag:
        return argv
    if flag in argv:
        at = argv.index(flag)
        return argv[:at + 1] + [value] + argv[at + 2:]
    return argv + [flag, value]


@pytest.mark.parametrize("command, flag, value", VALUES, ids=[f"{c} {f} {v!r}" for c, f, v in VALUES])
def test_a_hostile_value_is_refused_in_one_line_naming_its_flag(world, tmp_path, git, command, flag, value):
    case = Case(tmp_path)
    argv = value_argv(world, case, command, flag, value)
    injected = value if value in GIT_OPTIONS else None
    # the flag, or (collectives, which a file's keys may set too) its key
    names = (flag, flag.lstrip("-").replace("-", "_")) if flag != "BASE" else ("BASE", value.strip())
    run_case(world, case, git, command, argv, REFUSED, names, target=None, injected=injected)


# ---------------------------------------------------------------------------------------------
# report --check with nothing to check
# ---------------------------------------------------------------------------------------------

def nothing_to_check(folder: Path, case: str) -> None:
    folder.mkdir()
    if case == "empty results.jsonl":
        (folder / "results.jsonl").write_bytes(b"")
    elif case == "random bytes":
        (folder / "results.jsonl").write_bytes(bytes(range(256)) * 80)
    elif case == "environment only":
        ResultsFolder(folder, env=ENV)  # a sweep record and no launch
    elif case == "blank lines":
        (folder / "results.jsonl").write_text("\n\n  \n")


@pytest.mark.parametrize("found", ["empty results.jsonl", "random bytes", "environment only", "blank lines",
                                   "being written"])
def test_report_check_refuses_a_folder_with_nothing_to_check(world, tmp_path, git, found):
    case = Case(tmp_path)
    folder = case.canary / "input"
    if found == "being written":  # a sweep's folder while it runs: its first launches stored, its lock held
        shutil.copytree(world.a, folder)
        (folder / MARKER).write_text(json.dumps({"written_by": "ddpbench", "kind": "results", "writer": "sweep",
                                                 "run": "", "created": "2026-11-28T00:00:00Z"}) + "\n")
        (folder / OWNER).write_text(json.dumps({"pid": os.getpid(), "host": "here", "writer": "sweep",
                                                "short": False, "since": "2026-11-28T00:00:00Z"}) + "\n")
        fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            before = snapshot(case.tmp)
            done = run_main("report", folder, "--check", cwd=case.cwd)
            assert snapshot(case.tmp) == before
        finally:
            os.close(fd)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "Traceback" not in done.stderr and folder.name in done.stderr
        COUNTS[("report --check", "refused")] += 1
        return
    nothing_to_check(folder, found)
    run_case(world, case, git, "report --check", ["report", folder, "--check"], REFUSED, ("input",),
             warned=found == "random bytes")


def test_zz_the_counts_of_every_case():
    """The outcomes of this module's cases, by command (run last: ``pytest -s`` or ``-rA`` shows them)."""
    commands = sorted({command for command, _ in COUNTS})
    total = sum(COUNTS.values())
    lines = [f"{total} hostile cases: {sum(v for (c, o), v in COUNTS.items() if o == 'refused')} refused, "
             f"{sum(v for (c, o), v in COUNTS.items() if o == 'done')} done"]
    lines += [f"  {command:16} refused {COUNTS[(command, 'refused')]:4}  done {COUNTS[(command, 'done')]:4}"
              for command in commands]
    print("\n" + "\n".join(lines))
    if total:  # the whole module ran (not one test picked alone)
        assert total >= 300, lines[0]
