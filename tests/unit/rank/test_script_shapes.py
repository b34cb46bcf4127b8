"""The shapes real scripts take when they start and end (ddpbench/rank/script/shapes.py, docs/scripts.md):
ranks started with torch.multiprocessing.spawn, a rendezvous of the script's own, init/destroy/init,
relative paths from the sweep's folder, and nothing left running after kill -9 of the sweep."""

import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpbench.experiment.spec import JobSpec
from ddpbench.rank.script.rank import script_argv, torchrun_env
from ddpbench.rank.script.shapes import WORLD_SIZE_ARG, Shapes, link_start_dir, substitute_args, visible_devices
from ddpbench.rank.script.steps import BadScript
from ddpbench.testing.fuzzing import examples

# ---------------------------------------------------------------------------------------------
# what the rank sets up around a script: pure functions
# ---------------------------------------------------------------------------------------------

words = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@given(st.lists(st.tuples(words, st.booleans(), words), max_size=6), st.integers(1, 4096))
def test_world_size_in_script_args_is_replaced_and_nothing_else(parts, world_size):
    args = [f"{a}{WORLD_SIZE_ARG if put else ''}{b}" for a, put, b in parts]
    out = substitute_args(args, world_size)
    assert len(out) == len(args)
    for arg, got in zip(args, out):
        assert WORLD_SIZE_ARG not in got
        # every occurrence, and only it: the pieces around it are kept as they were
        assert got == str(world_size).join(arg.split(WORLD_SIZE_ARG))
        if WORLD_SIZE_ARG not in arg:
            assert got == arg


def test_world_size_reaches_the_script_argv_and_the_key_keeps_the_text():
    one = JobSpec(script="train.py", script_args='["--world_size", "{world_size}", "--name=w{world_size}"]',
                  world_size=2)
    other = JobSpec(script="train.py", script_args='["--world_size", "{world_size}", "--name=w{world_size}"]',
                    world_size=3)
    assert script_argv(one)[1:] == ["--world_size", "2", "--name=w2"]
    assert script_argv(other)[1:] == ["--world_size", "3", "--name=w3"]
    assert one.script_args == other.script_args and "{world_size}" in one.model_label
    assert one.key != other.key  # by their world sizes, as any two jobs


@pytest.mark.parametrize("current, ranks, expected", [
    (None, 2, "0,1"), (None, 1, "0"),  # unset: the first GPUs, one per rank of the node
    ("3", 2, None),  # the launcher gave this rank its own GPU: left alone
    ("2,3,4,5", 2, "2,3"), ("GPU-a,GPU-b,GPU-c", 2, "GPU-a,GPU-b"),  # a subset of the user's, in their order
    ("4,5", 2, None),  # already the node's ranks
    ("0,1", 4, None),  # fewer than the ranks: the script sees what there is
])
def test_the_visible_devices_of_a_script_rank(current, ranks, expected):
    assert visible_devices(current, ranks) == expected


@given(st.one_of(st.none(), st.lists(st.integers(0, 15), min_size=1, max_size=8, unique=True)), st.integers(1, 8))
def test_a_script_rank_sees_the_node_s_ranks_as_its_devices_or_what_it_was_given(listed, ranks):
    current = None if listed is None else ",".join(map(str, listed))
    got = visible_devices(current, ranks)
    if current is None or 1 < len(listed) >= ranks:
        # device_count() is the node's ranks, and device LOCAL_RANK is the rank's own GPU (ddpbench's order)
        seen = (current if got is None else got).split(",")
        assert seen == ([str(i) for i in range(ranks)] if current is None else [str(d) for d in listed[:ranks]])
    else:
        assert got is None  # one GPU of its own, or fewer than the ranks: as the launcher left it


@given(st.integers(1, 4), st.integers(1, 8), st.data())
def test_a_script_rank_finds_the_environment_torchrun_gives(nodes, per_node, data):
    """What torchrun sets and frameworks read to tell they run under it (Lightning Fabric's
    TorchElasticEnvironment asks torch.distributed.is_torchelastic_launched()); what a launcher
    already set is kept."""
    import torch.distributed as dist

    world = nodes * per_node
    rank = data.draw(st.integers(0, world - 1))
    environ = {"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank % per_node),
               "SLURM_NNODES": str(nodes)}
    torchrun_env(environ)
    assert environ["LOCAL_WORLD_SIZE"] == str(per_node) and environ["GROUP_RANK"] == str(rank // per_node)
    assert environ["GROUP_WORLD_SIZE"] == str(nodes) and environ["ROLE_RANK"] == str(rank)
    assert environ["ROLE_WORLD_SIZE"] == str(world) and environ["TORCHELASTIC_RESTART_COUNT"] == "0"
    given_env = {"RANK": "0", "WORLD_SIZE": "2", "TORCHELASTIC_RUN_ID": "theirs", "LOCAL_WORLD_SIZE": "2",
                 "LT_DEVICES": "{world_size}", "OTHER": "{world}"}
    torchrun_env(given_env)
    assert given_env["TORCHELASTIC_RUN_ID"] == "theirs"
    assert given_env["LT_DEVICES"] == "2" and given_env["OTHER"] == "{world}"  # the job's, as `fabric run` passes
    old = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(environ)
        assert dist.is_torchelastic_launched()
    finally:
        os.environ.clear()
        os.environ.update(old)


def test_the_scratch_folder_links_the_start_folder_and_keeps_new_files_apart(tmp_path):
    start, results = tmp_path / "project", tmp_path / "project" / "results"
    (start / "data").mkdir(parents=True)
    (start / "data" / "x.txt").write_text("x")
    (start / "configurator.py").write_text("lr = 0.5\n")
    (start / ".hidden").write_text("h")
    scratch = results / ".work" / "job" / "script"
    scratch.mkdir(parents=True)
    linked = link_start_dir(start, scratch, keep_out=results / ".work" / "job")
    assert linked == [".hidden", "configurator.py", "data"]  # not the folder holding the launch's own
    assert (scratch / "data" / "x.txt").read_text() == "x" and (scratch / "configurator.py").read_text() == "lr = 0.5\n"
    (scratch / "out").mkdir()
    (scratch / "out" / "ckpt.pt").write_text("c")
    assert sorted(os.listdir(start)) == [".hidden", "configurator.py", "data", "results"]
    import shutil

    shutil.rmtree(scratch)  # as the launch's work folder goes: the links, not what they point to
    assert (start / "data" / "x.txt").read_text() == "x" and (start / "configurator.py").exists()
    assert link_start_dir(start, start) == []
    scratch.mkdir()
    (scratch / "data").mkdir()  # another rank's, or the script's: kept
    assert link_start_dir(start, scratch) == [".hidden", "configurator.py", "results"]
    assert link_start_dir(start, scratch) == []  # the second rank of a node: all there already
    assert not (scratch / "data").is_symlink()


names = st.text(st.characters(whitelist_categories=("Ll", "Lu", "Nd"), whitelist_characters="._- "),
                min_size=1, max_size=10).filter(lambda n: n not in (".", ".."))


@settings(max_examples=examples(40), deadline=None)
@given(st.dictionaries(names, st.booleans(), max_size=8), st.integers(0, 8))
def test_every_entry_of_the_start_folder_reads_the_same_from_the_scratch_folder(entries, holder):
    import tempfile

    with tempfile.TemporaryDirectory() as top:
        start = Path(top) / "start"
        start.mkdir()
        for name, is_dir in entries.items():
            if is_dir:
                (start / name).mkdir()
                (start / name / "inner.txt").write_text(name)
            else:
                (start / name).write_text(name)
        held = sorted(entries)[holder] if holder < len(entries) and entries[sorted(entries)[holder]] else None
        work = start / held / "w" if held else Path(top) / "results" / "w"
        scratch = work / "script"
        scratch.mkdir(parents=True)
        before = sorted(os.listdir(start))
        linked = link_start_dir(start, scratch, keep_out=work)
        assert sorted(linked) == sorted(n for n in entries if n != held)
        for name in linked:
            inner = scratch / name / "inner.txt" if entries[name] else scratch / name
            assert inner.read_text() == name
        (scratch / "new.bin").write_bytes(b"x")
        assert sorted(os.listdir(start)) == before  # new files land in the scratch folder


# ---------------------------------------------------------------------------------------------
# the patches in this process: a gloo group of one on a store of our own
# ---------------------------------------------------------------------------------------------

def _all_reduce_one() -> float:
    import torch
    import torch.distributed as dist

    t = torch.ones(1)
    dist.all_reduce(t)
    return t.item()


def test_a_rendezvous_of_the_script_s_own_is_made_on_ddpbench_s(rendezvous, shapes):
    import torch.distributed as dist

    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "localhost", "12355"  # the tutorial's ddp_setup
    dist.init_process_group("gloo", "tcp://localhost:12355", rank=0, world_size=1)
    assert os.environ["MASTER_PORT"] == str(rendezvous.port)  # put back: the group met on ddpbench's store
    assert dist.get_world_size() == 1 and _all_reduce_one() == 1.0
    assert shapes.summary() == {"spawned": False, "groups": 1, "processes_started": 0, "rendezvous_replaced": [
        "init_method=tcp://localhost:12355", "MASTER_ADDR=localhost", "MASTER_PORT=12355"]}


@pytest.mark.parametrize("host", ["agent", "rank0"])
def test_init_destroy_init_and_the_end_s_gather_runs_on_the_newest_group(rendezvous, monkeypatch, host):
    import socket


    if host == "rank0":  # as under srun: no agent's store, rank 0 hosts one at MASTER_PORT
        monkeypatch.delenv("TORCHELASTIC_USE_AGENT_STORE")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            monkeypatch.setenv("MASTER_PORT", str(sock.getsockname()[1]))
    shapes = Shapes()
    shapes.install()
    try:
        _init_destroy_init(shapes)
    finally:
        shapes.uninstall()


def _init_destroy_init(shapes):
    import torch.distributed as dist

    dist.init_process_group("gloo")
    first = dist.group.WORLD
    dist.destroy_process_group(dist.group.WORLD)  # the default group, named
    assert shapes.destroy_deferred and not dist.is_initialized()  # as the script sees it
    dist.init_process_group(backend="gloo", init_method="env://")  # destroys the old, makes a new one
    assert dist.group.WORLD is not first and dist.is_initialized() and _all_reduce_one() == 1.0
    dist.destroy_process_group()  # deferred again
    dist.destroy_process_group()  # and again: nothing more
    shapes.uninstall()
    assert dist.is_initialized()  # what ddpbench gathers through at the end
    gathered = [None]
    dist.gather_object({"rank": 0}, gathered, dst=0)
    assert gathered == [{"rank": 0}] and shapes.inits == 2


def test_a_subgroup_is_destroyed_when_the_script_asks(rendezvous, shapes):
    import torch.distributed as dist

    dist.init_process_group("gloo")
    sub = dist.new_group([0])
    dist.destroy_process_group(sub)
    assert dist.is_initialized() and not shapes.destroy_deferred


@pytest.mark.parametrize("kwargs, words", [
    ({"world_size": 4}, "the script passes world_size=4 to init_process_group and the job runs world size 1: "
                        'pass "{world_size}" in script_args'),
    ({"rank": 1, "world_size": 1}, "the script passes rank=1 to init_process_group and this process is rank 0"),
])
def test_a_rank_or_world_size_that_is_not_the_job_s_is_refused(rendezvous, shapes, kwargs, words):
    import torch.distributed as dist

    with pytest.raises(BadScript, match=words.replace("(", r"\(")):
        dist.init_process_group("gloo", **kwargs)
    assert not dist.is_initialized()


def test_spawn_runs_the_function_here_as_this_rank(rendezvous, shapes):
    import torch.multiprocessing as mp
    from torch.multiprocessing import spawn, start_processes  # imported by the script after install

    calls = []
    mp.spawn(lambda rank, *args: calls.append((rank, *args)), args=(1, "x"), nprocs=1)
    context = start_processes(lambda rank: calls.append((rank, os.getpid())), nprocs=1, join=False,
                              start_method="fork")
    assert context.join() and calls == [(0, 1, "x"), (0, os.getpid())] and shapes.spawns == 2
    with pytest.raises(BadScript, match="the script spawns 2 processes .* the job runs 1 ranks on this node: .*"
                                        r'pass "\{world_size\}" in script_args'):
        spawn(lambda rank: None, nprocs=2)
    shapes.uninstall()
    import torch.multiprocessing.spawn as module  # noqa: F401 - the function of the same name is the package's

    assert mp.spawn.__module__ == "torch.multiprocessing.spawn" and sys.modules[mp.spawn.__module__].spawn is mp.spawn
