"""Every bad trace folder (:data:`ddpbench.testing.traces.BAD_FOLDERS`) refused on each path a user
reads traces by: one worker, the default pool (one worker per CPU, at most one per file) and Ray. Each
is one line naming the file, exit 2, no traceback and nothing written, and the pool's and Ray's line is
one worker's: a worker's ``InputError`` crosses the process boundary whole (a pool broken by an error
it could not rebuild ended in a 69-line traceback, and once in a process that hung at exit). Then as a
user runs it, in a process of its own: a damaged folder through the default pool and through ``--ray
local`` ends at once, in one line, leaving no process behind."""

import os
import time
import uuid

import psutil
import pytest

from ddpbench.testing import MARK, marked, run_cli, run_main
from ddpbench.testing.survivors import described
from ddpbench.testing.traces import BAD_FOLDERS, write_files

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


@pytest.mark.parametrize("ray", [False, True], ids=["default pool", "--ray local"])
def test_a_damaged_file_as_a_user_runs_it_ends_at_once_and_leaves_nothing(folders, ray, tmp_path):
    if ray:
        pytest.importorskip("ray", reason="ray is not installed (the ray extra)")
    elif (os.cpu_count() or 1) < 2:
        pytest.skip("one CPU: the default reads the files in this process, not in a pool")
    files, words = BAD_FOLDERS["not json"]
    assert len(files) > 1  # the default reads them in a pool
    mark = uuid.uuid4().hex
    done = run_cli("traces", folders["not json"], "--out", tmp_path / "out", *(["--ray", "local"] if ray else []),
                   env={**os.environ, MARK: mark}, timeout=240 if ray else 60)  # a hang at exit: TimeoutExpired
    _one_line(done, words)
    deadline = time.monotonic() + 30  # a process killed as the command ended may take a moment to go
    while marked(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not marked(mark), described(marked(mark))
