"""A 2-rank job at a fixed global batch (micro_batch) really accumulates: each rank trains its share of the global
batch in micro-batches, and DDP all-reduces once an optimizer step (counted by a comm hook on each rank), not once
a micro-step. Two forked gloo ranks on the CPU, a few seconds."""

import multiprocessing
import os

from ddpbench.experiment.spec import JobSpec
from ddpbench.launch.processes import loopback_store

STEPS = 3
#: 32 samples an optimizer step over 2 ranks in micro-batches of 4: 4 micro-steps a rank
SPEC = JobSpec(world_size=2, batch_size=32, scaling="strong", micro_batch=4, model_size="xs", bucket_cap_mb=64,
               device="cpu", backend="gloo", threads_per_rank=1, check_steps=0)


def _rank(rank: int, port: int, out) -> None:
    """One rank: the rank's own training loop over ``STEPS`` optimizer steps, counting the all-reduces DDP's comm
    hook is called for and the samples each forward takes."""
    import torch.distributed as dist

    from ddpbench.rank.protocol import Job
    from ddpbench.rank.train import TrainingRank

    os.environ.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
                       "MASTER_PORT": str(port), "TORCHELASTIC_USE_AGENT_STORE": "True"})
    run = TrainingRank(Job.of(SPEC, 0, 60), out_dir=None)
    run.setup()
    calls, batches = [], []

    def counting(state, bucket):
        calls.append(bucket.index())
        return dist.all_reduce(bucket.buffer().div_(2), async_op=True).get_future().then(lambda f: f.value()[0])

    run.replica.model.register_comm_hook(None, counting)
    run.replica.model.module.register_forward_pre_hook(lambda module, args: batches.append(len(args[0])))
    run.run_steps(run.replica, "measure", STEPS)
    out.put((rank, calls, batches))
    run.replica.strategy.close()
    dist.destroy_process_group()


def test_two_ranks_all_reduce_once_an_optimizer_step():
    assert SPEC.accumulation == 4
    store, port = loopback_store(60)
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    ranks = [context.Process(target=_rank, args=(rank, port, out)) for rank in range(2)]
    for process in ranks:
        process.start()
    try:
        found = dict((rank, (calls, batches)) for rank, calls, batches in (out.get(timeout=120) for _ in ranks))
    finally:
        for process in ranks:
            process.join(30)
            if process.is_alive():
                process.kill()
        del store
    assert [p.exitcode for p in ranks] == [0, 0]
    for rank in (0, 1):
        calls, batches = found[rank]
        assert calls == [0] * STEPS  # one bucket, one all-reduce an optimizer step: not one a micro-step
        assert batches == [4] * (4 * STEPS)  # 4 micro-steps of 4 samples an optimizer step: 16, its share of 32
