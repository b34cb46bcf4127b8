"""``ddpbench ab BASE CANDIDATE [EXPERIMENT]``: two versions of a training measured in randomized
interleaved rounds, until the answer is decided or the time is up.

**The sides.** Each of BASE and CANDIDATE is an experiment file (a path that exists: the
experiment is swept from the current folder, so two files that differ in a setting, a model or a
script are two versions), or a git revision of the repository holding EXPERIMENT (default
``experiments/quick.toml``): the revision is checked out into a worktree of its own (``git
worktree add --detach``, as ``history bisect`` does) and the experiment, the user's model module and
the scripts are read from that commit's files; the worktree is removed after, however the A/B ended.
The ddpbench that runs a side is the installed one, unless the repository holds a ``ddpbench``
package of its own (``python -m`` puts the side's folder first).

**The rounds.** Both sides start at once as sweeps told their rounds one at a time
(:mod:`ddpbench.sweep.paced`), each into its own results folder (``OUT/A``, ``OUT/B``), and each says
when its imports are done; only then do the rounds begin, so neither side's start runs beside the
other's launches. Every round runs one launch of every job not yet decided on each side (Abedi and
Brecht, ICPE 2017: randomized multiple interleaved trials): the first round each whole side in
turn, in random order (its launches make each job's checks, once); every later round the jobs in
random order, each on both sides back to back in random order, so a pair's two launches are one
launch apart and a neighbour that comes and goes falls on both. A job once called runs no more (its
call stands at any later round), so the rounds shorten as jobs are decided.

**The stop.** After every round both folders are read and every job judged
(:mod:`ddpbench.analysis.history.ab`: every job of either side paired with one of the other, or said
to stand alone; a job left unpaired runs in the first round only): the A/B stops once every job is
called (slower, faster or the same within the margin), once ``budget_s`` seconds have passed since the
first round began (the round under way finishes), or after ``max_rounds``. The interval behind each
call is a confidence sequence, valid at whatever round the A/B stops, so looking after each round does
not add false calls.

**What it says meanwhile.** While a side runs its round the A/B reads the launches it stores
(``report_launch``: each as it ends, from the first), so a first round of a minute is not a minute of
silence.

``OUT/ab.json`` keeps what was run (the sides, each round's order and time), the calls and the jobs left
unpaired, as strict JSON (null where a figure has no value: no NaN, no Infinity); the two folders are
ordinary results folders (``ddpbench report OUT/A``).
"""

from __future__ import annotations

import json
import os
import random
import select
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ddpbench.analysis.core import machine_difference, own_label, recorded_cpus
from ddpbench.analysis.history import ABCall, ABUnpaired, judge_sides, rounds_text
from ddpbench.errors import InputError
from ddpbench.files.sanitize import json_value
from ddpbench.files.sidefiles import replace_file
from ddpbench.files.writing import AB, Claim, check_claim, sweep_claim
from ddpbench.owner import owned_command
from ddpbench.results.schema import RESULTS_FILE, step_rows
from ddpbench.results.tables import load_tables
from ddpbench.sweep.revisions import commit as resolve_commit
from ddpbench.sweep.revisions import git, said, toplevel
from ddpbench.sweep.worktrees import inside_repository

LOG_FILE = "ab.json"
SIDES = ("A", "B")
#: seconds a side may take to say it is ready (its interpreter, torch's imports, the workload checks)
READY_TIMEOUT_S = 600.0
#: seconds a side's round may take before the A/B gives up on it: each launch of it has the experiment's
#: timeout, which the side's sweep enforces; this only guards against a side stuck outside its launches
ROUND_TIMEOUT_S = 24 * 3600.0
#: seconds between two looks at a side's stored launches while it runs its round
WATCH_S = 0.5


class SideFailed(RuntimeError):
    """A side's sweep ended or stopped answering before the A/B was done: its exit code (None where it
    still runs) and one line saying why, its log's last line among it."""

    def __init__(self, message: str, code: int | None):
        super().__init__(message)
        self.code = code

    @property
    def interrupted(self) -> bool:
        """Whether the side was ended by Ctrl-C or SIGTERM (the exit codes a sweep gives them, or the
        signal itself): it shares the A/B's terminal group, so the A/B was interrupted too, even where
        its own KeyboardInterrupt was lost (raised in a callback Python ignores)."""
        return self.code in (128 + signal.SIGINT, 128 + signal.SIGTERM, -signal.SIGINT, -signal.SIGTERM)


@dataclass(frozen=True)
class SidePlan:
    """Where one side runs: its name (A or B), what the user gave, the folder its sweep runs in and
    the experiment it is given there; for a revision, the commit's hash."""

    name: str
    given: str
    folder: Path
    experiment: str
    sha: str = ""

    @property
    def kind(self) -> str:
        return "revision" if self.sha else "experiment file"


@dataclass
class Outcome:
    """What an A/B did: its rounds (each: the order the sides ran in, seconds from the first round's
    start), why it stopped, and the last calls."""

    rounds: list[dict] = field(default_factory=list)
    stopped: str = ""
    calls: list[ABCall] = field(default_factory=list)
    #: the jobs of either side that no job of the other is set against
    unpaired: list[ABUnpaired] = field(default_factory=list)
    #: how the two sides' machines differed over their launches (:func:`ddpbench.analysis.core.machine_difference`):
    #: the rounds pair them, so it does not enter the calls; it says what the rounds ran beside
    machine: str = ""


def plan_sides(base: str, candidate: str, experiment: str, repo: Path, scratch: Path) -> list[SidePlan]:
    """The two sides of ``base`` and ``candidate`` (module doc); a revision's worktree is made under
    ``scratch``. One line (:class:`InputError`) for a side that is neither an experiment file nor a
    revision of ``repo``, or a revision without ``experiment``."""
    given = {"A": (base, "BASE"), "B": (candidate, "CANDIDATE")}
    files, shas, top = {}, {}, None
    for name, (side, flag) in given.items():  # every side read before any is checked against the experiment
        path = Path(side)
        if path.suffix == ".toml" or path.is_file():
            if not path.is_file():
                raise InputError("command line", flag, f"{side} is not a file (an experiment file, or a git "
                                 "revision of the repository)")
            files[name] = path
            continue
        try:
            top = top or toplevel(repo)
            shas[name] = resolve_commit(top, side, flag)
        except InputError:
            what = _not_a_side(path)
            if not what:
                raise
            raise InputError("command line", flag, f"{side} is {what}, not an experiment file nor a git revision; "
                             "give an experiment file (.toml) or a revision of the repository") from None
    plans = []
    for name, (side, flag) in given.items():
        if name in files:
            plans.append(SidePlan(name, side, Path.cwd(), str(files[name].resolve())))
            continue
        inside = inside_repository(top, experiment)
        if git(top, "cat-file", "-e", f"{shas[name]}:{inside}").returncode != 0:
            raise InputError("command line", "EXPERIMENT", f"{inside} is not in {flag} {side!r} ({shas[name][:12]})")
        plans.append(SidePlan(name, side, scratch / f"{name}-{shas[name][:12]}", inside, shas[name]))
    return plans


def ab_claim(plans: list[SidePlan]) -> Claim:
    """What an A/B writes into its ``--out`` (:mod:`ddpbench.files.writing`): an ab folder, its run
    the two sides as given (and the experiment, of revisions), held from before the sides start until
    ``ab.json`` is written."""
    run = " vs ".join(plan.given for plan in plans)
    revisions = [plan for plan in plans if plan.sha]
    if revisions:
        run += f" of {revisions[0].experiment}"
    return Claim(AB, "ab", run=run, writes=(*SIDES, *(f"{s}.log" for s in SIDES), LOG_FILE), short=False)


def check_sides(out_dir: Path, force: bool = False) -> None:
    """Each side's folder (``OUT/A``, ``OUT/B``) checked as the results folder its sweep writes, before
    anything starts: one line naming ``--out`` where a side would refuse it (``force`` is handed on)."""
    for name in SIDES:
        check_claim(out_dir / name, sweep_claim(flag="--out"), force)


def _not_a_side(path: Path) -> str:
    """What ``path`` is where it names something other than a regular file ("a folder", "a character
    device"), for a side that is no revision either; "" where nothing is there."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "a link to nothing" if os.path.islink(path) else ""
    for test, what in ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return "not a regular file"


class Side:
    """One side's sweep, running: started owned by this process (:mod:`ddpbench.owner`), told its
    rounds through a pipe, its output in ``OUT/<name>.log``."""

    def __init__(self, plan: SidePlan, out_dir: Path, force: bool = False):
        self.plan, self.folder = plan, out_dir / plan.name
        self.log_path = out_dir / f"{plan.name}.log"
        ask_read, self._ask = os.pipe()
        self._answers, answer_write = os.pipe()
        command = owned_command("ddpbench", ["sweep", plan.experiment, "--out", str(self.folder),
                                             "--paced", f"{ask_read},{answer_write}", *(["--force"] if force else [])])
        with open(self.log_path, "w", encoding="utf-8") as log:
            self.process = subprocess.Popen(command, cwd=plan.folder, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, pass_fds=(ask_read, answer_write))
        os.close(ask_read)
        os.close(answer_write)
        self._buffer = b""
        self._read_to = 0  # the bytes of the side's results.jsonl read by :meth:`stored`

    def stored(self) -> list[dict]:
        """The launch records the side has stored since the last call (whole lines only; a line
        that does not read is passed over)."""
        try:
            with open(self.folder / RESULTS_FILE, "rb") as handle:
                handle.seek(self._read_to)
                data = handle.read()
        except OSError:
            return []
        whole = data[:data.rfind(b"\n") + 1]
        self._read_to += len(whole)
        records = []
        for line in whole.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("kind") == "run" and isinstance(record.get("spec"), dict):
                records.append(record)
        return records

    def tell(self, line: str) -> None:
        try:
            os.write(self._ask, line.encode() + b"\n")
        except BrokenPipeError:
            pass  # the side has ended: the next answer says so

    def answer(self, timeout_s: float, waiting: Callable[[], None] | None = None) -> str:
        """The side's next line, or "" where it ended (or said nothing within ``timeout_s``);
        ``waiting()`` every :data:`WATCH_S` seconds meanwhile."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return ""
            if not select.select([self._answers], [], [], min(left, WATCH_S) if waiting else left)[0]:
                if waiting is None or deadline <= time.monotonic():
                    return ""
                waiting()
                continue
            chunk = os.read(self._answers, 4096)
            if not chunk:
                return ""
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode(errors="replace").strip()

    def failure(self) -> SideFailed:
        """Why the side stopped answering: its exit code and its log's last line."""
        try:
            self.process.wait(timeout=5)  # a side that closed its pipe is ending: its code, where it has one
        except subprocess.TimeoutExpired:
            pass
        code = self.process.poll()
        lines = [line for line in self.log_path.read_text(errors="replace").splitlines() if line.strip()]
        last = lines[-1].strip() if lines else "no output"
        return SideFailed(f"side {self.plan.name} ({self.plan.given}) " + (f"exited with code {code}" if code
                          is not None else "stopped answering") + f": {last[:300]} (its log: {self.log_path})", code)

    def close(self) -> None:
        """Tell the side to stop, and wait for it; a side that does not end is stopped as bisect stops
        a sweep (SIGTERM, then SIGKILL)."""
        self.tell("stop")
        os.close(self._ask)
        for sig, wait_s in ((None, 30), (signal.SIGTERM, 30), (signal.SIGKILL, 10)):
            if sig is not None and self.process.poll() is None:
                self.process.send_signal(sig)
            try:
                self.process.wait(timeout=wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
        os.close(self._answers)


def run_ab(plans: list[SidePlan], out_dir: Path, *, budget_s: float, max_rounds: int, same_within: float,
           seed: int | None, round_timeout_s: float = ROUND_TIMEOUT_S,
           report: Callable[[int, list[ABCall]], None] | None = None, repo: Path | None = None,
           report_launch: Callable[[int, str, dict], None] | None = None, force: bool = False) -> Outcome:
    """Run the A/B of the two ``plans`` into ``out_dir`` (held by the caller, its sides' folders checked:
    :func:`check_sides`) and return what it did, ``force`` handed to the sides' sweeps;
    ``report(round, calls)`` after every round and ``report_launch(round, side, record)`` for each
    launch a side stores, as it stores it (the console). Worktrees of revisions are made here and
    removed however the A/B ends; so are the sides."""
    rng = random.Random(seed)
    outcome = Outcome()
    made: list[Path] = []
    sides: list[Side] = []
    try:
        for plan in plans:
            if plan.sha and not plan.folder.exists():
                done = git(repo, "worktree", "add", "--detach", str(plan.folder), plan.sha)
                if done.returncode != 0:
                    raise InputError("command line", plan.name, f"cannot check out {plan.given!r}: {said(done)}")
                made.append(plan.folder)
        sides = [Side(plan, out_dir, force) for plan in plans]
        for side in sides:
            if side.answer(READY_TIMEOUT_S) != "ready":
                raise side.failure()
            side.stored()  # from here on: a launch the folder held before the rounds is not shown as new
        start = time.monotonic()
        for number in range(max_rounds):
            began = time.monotonic() - start
            order = run_round(number, sides, outcome.calls, rng, round_timeout_s, report_launch)
            outcome.rounds.append({"round": number, "order": order,
                                   "jobs": sum(not c.decided for c in outcome.calls) if outcome.calls else None,
                                   "began_s": round(began, 3), "ended_s": round(time.monotonic() - start, 3)})
            outcome.calls, outcome.unpaired, outcome.machine = judged(out_dir, same_within)
            if report is not None:
                report(number, outcome.calls)
            if not outcome.calls:
                outcome.stopped = "no job of A pairs with one of B"
                break
            if all(call.decided for call in outcome.calls):
                outcome.stopped = "every job decided"
                break
            if time.monotonic() - start >= budget_s:
                outcome.stopped = f"the budget of {budget_s:g} s was spent"
                break
        else:
            outcome.stopped = f"{rounds_text(max_rounds)} run (--max-rounds)"
        return outcome
    finally:
        for side in sides:
            side.close()
        for tree in made:
            if git(repo, "worktree", "remove", "--force", str(tree)).returncode != 0:
                shutil.rmtree(tree, ignore_errors=True)
                git(repo, "worktree", "prune")
        write_log(out_dir, plans, outcome, seed)


def run_round(number: int, sides: list[Side], calls: list[ABCall], rng: random.Random,
              timeout_s: float, report_launch: Callable[[int, str, dict], None] | None = None) -> list[str]:
    """Run round ``number``; the order it ran the sides in, one entry per launch pair or whole side.

    The first round (no calls yet) runs each whole side in turn, in random order: its launches also
    make each job's checks, once. Every later round takes the jobs not yet decided in random order and
    runs each on both sides back to back, the sides in random order, so the two launches of a pair
    are one launch apart (a neighbour that comes and goes for tens of seconds falls on both).
    ``report_launch(number, side, record)`` for each launch record a side stores meanwhile."""
    by_name = {side.plan.name: side for side in sides}
    if not calls:
        steps = [(side.plan.name, "") for side in rng.sample(sides, len(sides))]
    else:
        steps = []
        left = [c for c in calls if not c.decided]
        for call in rng.sample(left, len(left)):
            for name in rng.sample(list(by_name), len(by_name)):
                steps.append((name, call.key if name == "A" else (call.key_b or call.key)))
    for name, key in steps:
        side = by_name[name]

        def watch(side: Side = side) -> None:
            for record in side.stored():
                report_launch(number, side.plan.name, record)

        side.tell(f"round {number} {rng.randrange(2**31)}" + (f" {key}" if key else ""))
        said_done = side.answer(timeout_s, watch if report_launch is not None else None) == f"done {number}"
        if report_launch is not None:
            watch()  # the round's last launch, stored before its word
        if not said_done:
            raise side.failure()
    return [name for name, _ in steps]


def launch_line(record: dict) -> tuple[str, str, str]:
    """A stored launch for the console, as the sweep's own progress writes one: its job's name from its
    own settings (:func:`ddpbench.analysis.core.own_label`), its status, and its mean slowest-rank step
    (or its error's first line)."""
    spec = record["spec"]
    try:
        label = own_label(spec)
    except (KeyError, TypeError, ValueError):
        label = str(record.get("key", "?"))
    status = str(record.get("status", "?"))
    line = str(record.get("error") or "").splitlines()[0][:120] if record.get("error") else ""
    if status == "ok" and isinstance(record.get("result"), dict):
        try:
            bound: dict[int, float] = {}
            for row in step_rows(record["result"]):
                if row.phase == "measure":
                    bound[row.step] = max(bound.get(row.step, 0.0), row.step_ms)
            line = f"{sum(bound.values()) / len(bound):8.2f} ms/step (mean)" if bound else ""
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            line = ""
    return label, status, line


def judged(out_dir: Path, same_within: float) -> tuple[list[ABCall], list[ABUnpaired], str]:
    """Every pair's call and every job left unpaired from the two sides' folders as they stand, and the
    words on their machines."""
    tables = [load_tables(out_dir / name) for name in SIDES]
    machine = machine_difference(tables[0].ranks, tables[1].ranks)
    words = machine.words(advice=False) if machine is not None else ""
    # the machine's CPUs, by which a launch's reading of it is as coarse as reading_resolution says
    cpus = recorded_cpus(*(t.sweeps for t in tables))
    calls, unpaired = judge_sides(tables[0].steps, tables[1].steps, same_within, tables[0].ranks, tables[1].ranks,
                                  cpus)
    return calls, unpaired, words


def write_log(out_dir: Path, plans: list[SidePlan], outcome: Outcome, seed: int | None) -> None:
    """``OUT/ab.json``: the sides, the rounds, the calls and the jobs left unpaired (rewritten whole: a new
    file renamed into place each time, its mode the umask's), strict JSON: a figure without a value (NaN,
    an open end of an interval) is null."""
    record = {"sides": [{"name": p.name, "given": p.given, "kind": p.kind, "sha": p.sha, "experiment": p.experiment}
                        for p in plans],
              "seed": seed, "rounds": outcome.rounds, "stopped": outcome.stopped, "machine": outcome.machine,
              "calls": [asdict(call) for call in outcome.calls],
              "unpaired": [asdict(job) for job in outcome.unpaired]}
    replace_file(out_dir / LOG_FILE, json.dumps(json_value(record), indent=1, default=str, allow_nan=False))
