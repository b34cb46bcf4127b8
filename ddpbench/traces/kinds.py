"""The names a trace is read by, declared once: what kind of work a GPU event is, what the host was
doing while the GPU idled, and the names PyTorch gives the ranges a trace is cut by.

The kinds of GPU work follow Holistic Trace Analysis (HTA 0.5) to the letter, so that the two
agree where their figures are defined alike (docs/traces.md sets the definitions side by side):
a kernel is *communication* if its name matches ``^nccl.*Kernel`` (NCCL's and RCCL's kernels);
*memory* if it starts ``Memcpy``, ``Memset`` or ``dma`` (or the profiler files it as a copy or
set); *other* if it names a copy, a set or a sync anywhere else in its name; else *compute*.
"""

from __future__ import annotations

import re

COMPUTE, COMM, MEMORY, OTHER = 0, 1, 2, 3
#: the kinds of GPU work, by their code in :class:`ddpbench.traces.events.RankEvents`
KINDS = ("compute", "comm", "memory", "other")

_COMM_KERNEL = re.compile(r"^nccl.*Kernel")
_MEMORY_KERNEL = re.compile(r"(^Memcpy)|(^Memset)|(^dma)")
_NOT_COMPUTE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")
#: the profiler's categories of work on a GPU stream
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def gpu_kind(name: str, category: str) -> int:
    """The kind of one GPU event (module docstring)."""
    if _COMM_KERNEL.match(name):
        return COMM
    if category != "kernel" or _MEMORY_KERNEL.match(name):
        return MEMORY
    return OTHER if _NOT_COMPUTE.match(name) else COMPUTE


def kernel_collective(name: str) -> str:
    """The collective an NCCL kernel runs, from its name: ``ncclDevKernel_AllReduce_Sum_f32_RING_LL``
    and ``ncclKernel_AllGather_RING_LL_Sum_int8_t`` -> ``all_reduce``, ``all_gather``."""
    parts = name.split("_")
    return collective_op(parts[1] if len(parts) > 1 else name)


#: the names PyTorch's profiler gives collectives ("Collective name", the process group's ranges) that
#: are not nccl-tests' op names
_OPS = {"allreduce": "all_reduce", "allreduce_coalesced": "all_reduce", "allgather": "all_gather",
        "_allgather_base": "all_gather", "allgather_into_tensor_coalesced": "all_gather",
        "all_gather_into_tensor": "all_gather", "reducescatter": "reduce_scatter",
        "_reduce_scatter_base": "reduce_scatter", "reduce_scatter_tensor": "reduce_scatter",
        "reduce_scatter_tensor_coalesced": "reduce_scatter", "alltoall": "all_to_all",
        "alltoall_base": "all_to_all", "all_to_all_single": "all_to_all", "send": "send_recv",
        "recv": "send_recv", "sendrecv": "send_recv", "recv_anysource": "send_recv"}


#: the collectives whose ends coincide on every rank of their group (none returns before every rank has
#: given its part), so the clocks are aligned on these alone; a point-to-point operation (``send_recv``)
#: ends when its one peer's part has gone or come, at different times on its two sides
ALIGNING_OPS = ("all_reduce", "all_gather", "reduce_scatter", "barrier", "broadcast")


def collective_op(name: str) -> str:
    """A collective by nccl-tests' name for it (``allreduce``, ``AllReduce`` -> ``all_reduce``);
    a name it has none for, in snake case."""
    word = snake(name)
    return _OPS.get(word, _OPS.get(word.replace("_", ""), word))


def snake(word: str) -> str:
    """``AllReduce`` -> ``all_reduce``; ``SendRecv`` -> ``send_recv``; a name already in snake case stays."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", word).lower()


#: what the host was doing while its GPU idled (or, on a CPU-only trace, while no work ran), in the
#: order a moment is given to the first that holds: waiting for the input pipeline, blocked on the
#: device (a synchronising call), running other operators, or none of these (Python between ops)
HOST_CAUSES = ("data", "sync", "cpu", "other")

#: ddpbench's own ranges in a sweep's traced steps (:mod:`ddpbench.traces.timeline`): every rank leaves
#: a barrier inside ``ddpbench:align`` before its first recorded step (its end is time zero), and each
#: step is a ``ddpbench:step`` with a range per phase inside
PREFIX = "ddpbench:"
ALIGN = PREFIX + "align"
STEP = PREFIX + "step"
BACKWARD = PREFIX + "backward"
#: a watched rank's data phase in the steps it traces on an alarm (:mod:`ddpbench.rank.script.watched`): from its
#: last optimizer step to its next forward, where the script gets its next batch, whether from a DataLoader or from
#: code of its own (a generator, a streaming dataset) that leaves no range of its own. Read as the input pipeline,
#: as a DataLoader's ranges are (:data:`DATA_PREFIX`), so that a trace answers an alarm in the data phase in the
#: same words
INPUT = PREFIX + "input"

#: the range PyTorch's profiler opens for every ``prof.step()``: the trace's steps
STEP_PREFIX = "ProfilerStep#"
#: the ranges of a DataLoader's ``__next__`` (``enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__``)
DATA_PREFIX = "enumerate(DataLoader)"
#: the optimizer's step, recorded by PyTorch as ``Optimizer.step#SGD.step``
OPTIMIZER_PREFIX = "Optimizer.step#"
#: host calls that block until the device has done its work
SYNC_CALLS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy",
              "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize", "hipMemcpy")
#: host-side names of collectives: gloo's and MPI's ranges on their worker threads, and the process
#: group's own range around every collective it is asked for (``nccl:all_reduce``, ``gloo:broadcast``)
HOST_COMM_PREFIXES = ("gloo:", "mpi:", "nccl:", "ucc:")
#: the profiler's operator that records a collective's metadata (size, dtype, group)
PARAM_COMMS = "record_param_comms"
#: an autograd node's evaluation: on a CPU-only trace, the backward pass's compute
AUTOGRAD_PREFIX = "autograd::engine::evaluate_function:"

#: bytes per element of the types the profiler names in "Input type" and a collective's "dtype"
DTYPE_BYTES = {"float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "int": 4,
               "short int": 2, "signed char": 1, "unsigned char": 1, "bool": 1, "Float": 4, "Double": 8,
               "Half": 2, "BFloat16": 2, "Long": 8, "Int": 4, "Byte": 1, "Char": 1, "Bool": 1,
               "Float8_e4m3fn": 1, "Float8_e5m2": 1}
