"""Every bad trace folder (:data:`ddpbench.testing.traces.BAD_FOLDERS`) refused on each path a user
reads traces by: one worker, the default pool (one worker per CPU, at most one per file) and Ray. Each
is one line naming the file, exit 2, no traceback and nothing written, and the pool's and Ray's line is
one worker's: a worker's ``InputError`` crosses the process boundary whole (a pool broken by an error
it could not rebuild ended in a 69-line traceback, and once in a process that hung at exit). Then as a
user runs it, in a process of its own: a damaged folder through the default pool, through ``--ray
local`` and through the address of a running cluster ends at once, in one line, leaving no process
behind.

Then every flag of ``traces`` with the values it refuses (:data:`FLAG_CASES`): one line naming the flag
(or the folder), exit 2, nothing on stdout, no traceback, nothing written anywhere, and an end within
:data:`GUARD_S`, where a Ray address no cluster answers at once printed Ray's warnings and hung for
minutes. Through ``python -m ddpbench traces`` as a user types it where the process is what is checked
(:func:`in_a_process`: a folder read by the default pool, a Ray address, and the first case); the others,
refused from the arguments alone, through the command's ``main()`` in this process (the same parser and
checks; a new interpreter each cost 2-4 s). ``--out`` and ``--ray`` are refused before a trace is read: beside a damaged
folder their line is theirs, not the damaged file's."""

import os
import time
import uuid

import psutil
import pytest

from ddpbench.testing import MARK, marked, run_cli, run_main
from ddpbench.testing.cli import snapshot
from ddpbench.testing.survivors import described
from ddpbench.testing.traces import BAD_FOLDERS, tiny_trace, write_files

#: how each path is asked for on the command line ("ray": --ray, the address of this module's cluster)
PATHS = {"--workers 1": ["--workers", "1"], "default pool": [], "ray": None}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Every bad folder, written once for the three paths."""
    root = tmp_path_factory.mktemp("bad")
    return {case: write_files(root / f"case{i}", files)
            for i, (case, (files, _)) in enumerate(sorted(BAD_FOLDERS.items()))}


@pytest.fixture(scope="module")
def ray_address(ray_cluster):
    """The module's Ray cluster, this process its driver from the first Ray case to the last (the
    command's reader then uses the connection as it finds it): Ray's workers start once."""
    import ray

    ray.init(address=ray_cluster.address, log_to_driver=False, configure_logging=False)
    yield ray_cluster.address
    ray.shutdown()


def _one_line(result, words) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert all(word in lines[0] for word in words), (words, lines[0])
    return lines[0]


def _children() -> set:
    return {p.pid for p in psutil.Process().children(recursive=True)}


# the Ray cases last: this process forks the pool's workers before it is Ray's driver, never after
@pytest.mark.parametrize("path, case", [(path, case) for path in PATHS for case in sorted(BAD_FOLDERS)])
def test_each_bad_folder_is_one_line_on_every_path(folders, path, case, tmp_path, request):
    flags = PATHS[path] if path != "ray" else ["--ray", request.getfixturevalue("ray_address")]
    words, before = BAD_FOLDERS[case][1], _children()
    line = _one_line(run_main("traces", folders[case], "--out", tmp_path / "out", *flags, timeout=60), words)
    assert not (tmp_path / "out").exists()
    left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
    assert not left, described(left)
    if path != "--workers 1":
        serial = run_main("traces", folders[case], "--out", tmp_path / "out", "--workers", "1", timeout=60)
        assert line == _one_line(serial, words)


@pytest.mark.parametrize("ray", [None, "local", "address"], ids=["default pool", "--ray local", "--ray ADDRESS"])
def test_a_damaged_file_as_a_user_runs_it_ends_at_once_and_leaves_nothing(folders, ray, tmp_path, request):
    if ray:
        pytest.importorskip("ray", reason="ray is not installed (the ray extra)")
    elif (os.cpu_count() or 1) < 2:
        pytest.skip("one CPU: the default reads the files in this process, not in a pool")
    files, words = BAD_FOLDERS["not json"]
    assert len(files) > 1  # the default reads them in a pool
    mark = uuid.uuid4().hex
    # a running cluster's address: checked, connected to, read on and let go by the command's own process
    address = request.getfixturevalue("ray_cluster").address if ray == "address" else ray
    done = run_cli("traces", folders["not json"], "--out", tmp_path / "out", *(["--ray", address] if ray else []),
                   env={**os.environ, MARK: mark}, timeout=240 if ray else 60)  # a hang at exit: TimeoutExpired
    _one_line(done, words)
    deadline = time.monotonic() + 30  # a process killed as the command ended may take a moment to go
    while marked(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not marked(mark), described(marked(mark))


#: the longest a refused command line may take: a guard against a hang, not a timing test (Ray's own
#: ray.init retried an address that did not answer for minutes)
GUARD_S = 30.0
#: Ray's address forms the flag refuses as typed, before anything is asked of the network
RAY_FORMS = {"no port": "bogus", "empty": "", "port 0": "127.0.0.1:0", "port past 65535": "127.0.0.1:70000",
             "http": "http://127.0.0.1:1", "a space": "127.0.0.1 :1", "ray:// without a port": "ray://head"}
#: addresses where no Ray cluster answers: (value, RAY_ADDRESS, words)
UNREACHABLE = {
    "unknown host": ("bogus:1", None, ["'bogus:1'", "cannot be"]),
    "a reserved name": ("head.invalid:6379", None, ["'head.invalid:6379'", "does not resolve"]),
    "nothing listens": ("127.0.0.1:1", None, ["'127.0.0.1:1'", "connection refused"]),
    "ray:// nothing listens": ("ray://127.0.0.1:1", None, ["'ray://127.0.0.1:1'", "connection refused"]),
    "auto, RAY_ADDRESS nowhere": ("auto", "127.0.0.1:1", ["'auto' (RAY_ADDRESS=127.0.0.1:1)", "connection refused"]),
}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """The paths the flags are given, once for every case: a sound 2-rank folder, a second one for
    --before, a damaged one, one without traces, a file, a link, someone's folder, a results folder, and
    the current folder (where the default --out would land)."""
    root = tmp_path_factory.mktemp("flags")
    sound = {"rank0.json": tiny_trace(0, 2), "rank1.json": tiny_trace(1, 2)}
    write_files(root / "traces", sound)
    write_files(root / "before", sound)
    write_files(root / "four", {f"rank{r}.json": tiny_trace(r, 4) for r in range(4)})
    write_files(root / "damaged", BAD_FOLDERS["not json"][0])
    write_files(root / "no traces", {"notes.txt": b"nothing here"})
    (root / "a file").write_text("mine\n")
    (root / "elsewhere").mkdir()
    (root / "a link").symlink_to(root / "elsewhere")
    write_files(root / "theirs", {"notes.txt": b"mine"})
    write_files(root / "results", {"results.jsonl": b""})
    (root / "cwd").mkdir()
    return root


def _flag_cases():
    """(id, argv after ``traces`` with ``{w}`` for the work folder, RAY_ADDRESS, words the line holds, Ray needed)."""
    t, out = "{w}/traces", ["--out", "{w}/out"]
    yield "folder: missing", ["{w}/missing", *out], None, ["missing", "is not a folder"], False
    yield "folder: a file", ["{w}/a file", *out], None, ["a file", "is not a folder"], False
    yield "folder: empty", ["", *out], None, ["folder", "empty value refused"], False
    yield "folder: no traces", ["{w}/no traces", *out], None, ["no traces", "holds no profiler traces"], False
    yield "folder: a newline", ["{w}/tra\nces", *out], None, ["folder", "control character"], False
    yield "folder: a damaged file, read by the pool", ["{w}/damaged", *out], None, BAD_FOLDERS["not json"][1], False
    for case, value, words in [("empty", "", "empty value refused"), ("a file", "{w}/a file", "is a file"),
                               ("under a file", "{w}/a file/sub", "lies under"),
                               ("a link", "{w}/a link", "is a symbolic link"),
                               ("the folder read", t, "is the folder of traces read"),
                               ("inside the folder read", t + "/report", "lies inside the folder of traces read"),
                               ("someone's folder", "{w}/theirs", "holds files ddpbench did not write"),
                               ("a results folder", "{w}/results", "is a results folder")]:
        yield f"--out: {case}", [t, "--out", value], None, ["--out", words], False
    for case, value, words in [("the --before folder", "{w}/before", "is the --before folder"),
                               ("inside the --before folder", "{w}/before/x", "lies inside the --before folder")]:
        yield f"--out: {case}", [t, "--before", "{w}/before", "--out", value], None, ["--out", words], False
    # checked before any trace is read: beside a damaged folder, the line is --out's, not the damaged file's
    yield "--out: a file, before reading", ["{w}/damaged", "--out", "{w}/a file"], None, ["--out", "is a file"], False
    for value in ("0", "-1", "1.5", "abc", "", "1e3"):
        yield f"--workers: {value!r}", [t, *out, "--workers", value], None, ["--workers", "1 or more"], False
    yield "--workers: with --ray", [t, *out, "--workers", "2", "--ray", "local"], None, \
        ["--workers", "does nothing with --ray"], False
    for case, value in RAY_FORMS.items():
        yield f"--ray: {case}", [t, *out, "--ray", value], None, ["--ray", "allowed: HOST:PORT"], False
    for case, (value, env, words) in UNREACHABLE.items():
        yield f"--ray: {case}", [t, *out, "--ray", value], env, ["--ray", *words, "allowed: HOST:PORT"], True
    yield "--ray: nowhere, before reading", ["{w}/damaged", *out, "--ray", "127.0.0.1:1"], None, \
        ["--ray", "connection refused"], True
    yield "--before: missing", [t, *out, "--before", "{w}/missing"], None, ["missing", "is not a folder"], False
    yield "--before: a file", [t, *out, "--before", "{w}/a file"], None, ["a file", "is not a folder"], False
    yield "--before: empty", [t, *out, "--before", ""], None, ["--before", "empty value refused"], False
    yield "--before: no traces", [t, *out, "--before", "{w}/no traces"], None, ["holds no profiler traces"], False
    yield "--before: a damaged file, read by the pool", [t, *out, "--before", "{w}/damaged"], None, \
        BAD_FOLDERS["not json"][1], False
    for flag in ("--wait", "--force", "--compare-anyway"):
        yield f"{flag}: a value", [t, *out, f"{flag}=yes"], None, [flag, "ignored explicit argument"], False
    yield "--compare-anyway: without --before", [t, *out, "--compare-anyway"], None, \
        ["--compare-anyway", "does nothing without --before"], False
    yield "--before: another job", ["{w}/traces", *out, "--before", "{w}/four"], None, \
        ["--before", "world size 4 before, 2 after", "--compare-anyway"], False
    yield "a flag traces has not", [t, *out, "--bogus"], None, ["unrecognized arguments: --bogus"], False


FLAG_CASES = {case[0]: case[1:] for case in _flag_cases()}


def in_a_process(case: str) -> bool:
    """Whether a case of :data:`FLAG_CASES` runs as a user types it, in a new process: where the default pool
    reads a folder, where Ray is asked (its client's warnings and threads are the process's), and the first."""
    return case == next(iter(FLAG_CASES)) or "pool" in case or FLAG_CASES[case][3]


@pytest.mark.parametrize("case", list(FLAG_CASES))
def test_every_flag_s_bad_value_is_one_line_through_the_command(work, case):
    argv, ray_address, words, needs_ray = FLAG_CASES[case]
    if needs_ray:
        pytest.importorskip("ray", reason="ray is not installed (the ray extra): the line says so instead")
    if "pool" in case and (os.cpu_count() or 1) < 2:
        pytest.skip("one CPU: the default reads the files in this process, not in a pool")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    if ray_address is not None:
        env["RAY_ADDRESS"] = ray_address
    before = snapshot(work)
    began = time.monotonic()
    run = run_cli if in_a_process(case) else run_main
    done = run("traces", *[a.replace("{w}", str(work)) for a in argv], cwd=work / "cwd", env=env, timeout=120)
    took = time.monotonic() - began
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert all(word in lines[0] for word in words), (words, lines[0])
    assert done.stdout == "", done.stdout  # nothing answered before the refusal
    assert snapshot(work) == before  # nothing written: no --out, no default folder under cwd
    assert took < GUARD_S, f"{case}: {took:.1f} s"


def test_every_flag_of_traces_has_a_case():
    """A flag added to traces without a case of its own fails here, not in a user's hands."""
    from ddpbench.cli.program import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    flags = {a.option_strings[-1] if a.option_strings else "folder"
             for a in sub.choices["traces"]._actions if a.dest != "help"}
    covered = {case.split(":")[0] for case in FLAG_CASES}
    assert flags <= covered, flags - covered

