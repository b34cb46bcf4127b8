"""FLOPs of a training step, and the matmul rate this machine reaches: the two halves of MFU.

* :func:`count_training_flops` runs one micro-step (forward, loss, backward) of a model on one
  batch under PyTorch's own counter, ``torch.utils.flop_counter.FlopCounterMode``, and leaves the
  model exactly as it found it.
* :func:`measure_gemm_peak` times a square matmul with the rank's thread count (or on its GPU)
  and takes the best repetition as the achievable peak.

What the counter sees: matrix products (``mm``, ``addmm``, ``bmm``, ``baddbmm``), convolutions
and the attention kernels; 2 FLOPs per multiply-add. It does not count elementwise work,
normalisation, softmax, losses, embeddings, an ``addmm``'s bias add or a gradient's bias sum,
nor recurrent kernels (``nn.LSTM``/``nn.GRU`` run as ``mkldnn_rnn_layer`` on CPU and cuDNN on
CUDA: zero). A workload whose work the counter cannot see gives ``Workload.flops_per_sample``.
Backward is counted as computed: the first layer computes no input gradient (its input requires
none), so a ``Linear`` there costs 4mkn per step, not 6mkn. Causal attention is counted as full.
The first count in a process takes about 2 s: the counter's module tracker imports torch._dynamo.

This module imports torch only: it runs inside a training rank.
"""

from __future__ import annotations

import time

import torch

_DEFAULT_CPU_N = 1024
_DEFAULT_CUDA_N = 8192
_DEFAULT_REPS = 10
_CPU_BUDGET_S = 0.3
_CPU_MIN_REPS = 3


def _cpu_attention_mapping() -> dict:
    """CPU runs ``scaled_dot_product_attention`` as ``_scaled_dot_product_flash_attention_for_cpu``,
    which PyTorch's counter does not list (it counts 0). Its arguments start like the CUDA kernels'
    (query, key, value; grad_out first in backward), so it goes to PyTorch's own SDPA formulas,
    and CPU and CUDA count the same model alike."""
    from torch.utils import flop_counter

    aten = torch.ops.aten
    forward = getattr(aten, "_scaled_dot_product_flash_attention_for_cpu", None)
    backward = getattr(aten, "_scaled_dot_product_flash_attention_for_cpu_backward", None)
    count = getattr(flop_counter, "sdpa_flop_count", None)
    count_backward = getattr(flop_counter, "sdpa_backward_flop_count", None)
    if None in (forward, backward, count, count_backward):
        return {}  # another torch: leave its counter as it is

    def sdpa_cpu(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
        return count(query_shape, key_shape, value_shape)

    def sdpa_cpu_backward(grad_out_shape, query_shape, key_shape, value_shape, *args, out_shape=None,
                          **kwargs) -> int:
        return count_backward(grad_out_shape, query_shape, key_shape, value_shape)

    return {forward: sdpa_cpu, backward: sdpa_cpu_backward}


def _tensors(inputs) -> list:
    if isinstance(inputs, torch.Tensor):
        return [inputs]
    if isinstance(inputs, dict):
        return [v for v in inputs.values() if isinstance(v, torch.Tensor)]
    return []


def _cuda_devices(model, inputs) -> list[int]:
    """Every CUDA device the step touches, for fork_rng (it saves and restores each one's RNG)."""
    devices = set()
    for t in [*model.parameters(), *model.buffers(), *_tensors(inputs)]:
        if t.is_cuda:
            devices.add(t.device.index if t.device.index is not None else torch.cuda.current_device())
    return sorted(devices)


def _save_buffers(model) -> list:
    """(module, name, tensor, copy of its values) for every buffer, shared ones once."""
    saved, seen = [], set()
    for module in model.modules():
        for name, buf in module._buffers.items():
            if buf is None:
                saved.append((module, name, None, None))
                continue
            copy = None if id(buf) in seen else buf.detach().clone()
            seen.add(id(buf))
            saved.append((module, name, buf, copy))
    return saved


@torch.no_grad()
def _restore_buffers(saved) -> None:
    for module, name, buf, copy in saved:
        if copy is not None:
            buf.copy_(copy)
        module._buffers[name] = buf  # a forward that rebinds a buffer gets the original back


def count_training_flops(model, inputs, target, loss) -> int:
    """FLOPs of one training micro-step of ``model`` on one batch: forward, ``loss`` and backward.

    ``inputs`` is a tensor (``model(inputs)``) or a dict of tensors (``model(**inputs)``);
    ``loss(output, target)`` returns a scalar. The mode (train/eval) is the caller's.

    The model is left as it was found: every parameter's ``.grad`` (and a leaf input's) is set
    aside for the step and put back, the very tensor, untouched; buffers (BatchNorm running
    statistics, ``num_batches_tracked``) are restored; the CPU and CUDA RNG states are forked, so
    dropout draws nothing from the caller's stream. The backward is ``loss.backward()``, as in
    training (``torch.autograd.grad`` trips the counter's module tracker on a leaf input), so
    gradient hooks fire: pass the bare module, before a strategy wraps it or hooks its parameters.
    """
    from torch.utils.flop_counter import FlopCounterMode

    leaves = [*model.parameters(), *(t for t in _tensors(inputs) if t.is_leaf)]
    grads = [t.grad for t in leaves]
    buffers = _save_buffers(model)
    counter = FlopCounterMode(display=False, custom_mapping=_cpu_attention_mapping())
    try:
        for t in leaves:
            t.grad = None  # backward accumulates in place: keep it off the caller's gradients
        with torch.random.fork_rng(devices=_cuda_devices(model, inputs)), counter:
            output = model(**inputs) if isinstance(inputs, dict) else model(inputs)
            value = loss(output, target)
            if value.requires_grad:
                value.backward()
    finally:
        for t, grad in zip(leaves, grads):
            t.grad = grad
        _restore_buffers(buffers)
    return int(counter.get_total_flops())


def job_flops(workload, data, device, grad_accum: int, handed: dict | None = None) -> dict:
    """A job's ``result["compute"]`` FLOP figures, per optimizer step of one process: the workload's own
    figure (``flops_per_sample``), else the count an earlier job of the sweep made of the same model and
    batch (``handed``: :func:`ddpbench.sweep.checks.flops_key`), else PyTorch's counter on one micro-batch
    of ``data`` (a DataLoader) through the bare model."""
    from ddpbench.workloads.data import to_device

    if workload.flops_per_sample:
        per_step, source = workload.flops_per_sample * data.batch_size * grad_accum, "workload"
    elif handed and handed.get("counted_in_job"):
        return {"workload": workload.name, "flops_per_step": float(handed["flops_per_step"]), "flops_source": "counted",
                "flops_counted_in_job": str(handed["counted_in_job"])}
    else:
        inputs, target = data.collate_fn([data.dataset[i] for i in range(data.batch_size)])
        per_step = count_training_flops(workload.model, to_device(inputs, device), to_device(target, device),
                                        workload.loss) * grad_accum
        source = "counted"
    return {"workload": workload.name, "flops_per_step": per_step, "flops_source": source}


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def measure_gemm_peak(device, dtype: torch.dtype = torch.float32, n: int | None = None,
                      reps: int = _DEFAULT_REPS, budget_s: float = _CPU_BUDGET_S) -> dict:
    """The matmul rate this process reaches: ``reps`` timed n x n @ n x n products (2n^3 FLOPs each)
    after a warm-up, with the current ``torch.get_num_threads()``; the best (fastest) repetition is
    the peak, since interference only ever slows a repetition down.

    CPU: ``time.perf_counter`` around each product, n = 1024 by default (about 23 ms on one modern
    core; the whole call about 0.3-0.4 s). It runs at every launch, so on a slow CPU it stops
    repeating once the timed products have taken ``budget_s`` (after at least 3 of them);
    ``gemm_reps`` is the number timed. CUDA: CUDA events, n = 8192, all ``reps``. The operands
    come from a private generator: the global RNG is untouched.
    """
    device = torch.device(device)
    if reps < 1:
        raise ValueError(f"reps must be at least 1, not {reps}")
    cuda = device.type == "cuda"
    if n is None:
        n = _DEFAULT_CUDA_N if cuda else _DEFAULT_CPU_N
    generator = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, generator=generator, device=device).to(dtype)
    b = torch.randn(n, n, generator=generator, device=device).to(dtype)
    c = torch.empty(n, n, device=device, dtype=dtype)
    flops = 2.0 * n**3
    if cuda:
        with torch.cuda.device(device):
            for _ in range(3):  # cuBLAS handle, heuristics, clocks
                torch.mm(a, b, out=c)
            torch.cuda.synchronize()
            times = []
            for _ in range(reps):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                torch.mm(a, b, out=c)
                end.record()
                times.append((start, end))
            torch.cuda.synchronize()
            best_s = min(s.elapsed_time(e) for s, e in times) / 1e3
        where = torch.cuda.get_device_name(device)
        if dtype == torch.float32 and torch.backends.cuda.matmul.allow_tf32:
            where += ", TF32 allowed"
    else:
        torch.mm(a, b, out=c)  # warm-up: packing buffers, thread pool
        best_s, spent, timed = float("inf"), 0.0, 0
        while timed < reps and (timed < _CPU_MIN_REPS or spent < budget_s):
            start = time.perf_counter()
            torch.mm(a, b, out=c)
            took = time.perf_counter() - start
            best_s, spent, timed = min(best_s, took), spent + took, timed + 1
        reps = timed
        threads = torch.get_num_threads()
        where = f"{threads} thread" + ("" if threads == 1 else "s")
    name = _dtype_name(dtype)
    return {
        "peak_flops": flops / best_s,
        "gemm_n": n,
        "gemm_reps": reps,
        "gemm_dtype": name,
        "gemm_threads": torch.get_num_threads(),
        "peak_method": f"best of {reps} {n}x{n} {name} matmuls on {where}",
    }


def offered_peak(offered: dict | None, local_rank: int, device, threads: int) -> dict | None:
    """The peak a sweep handed this rank (``offered``: {local rank: figures, as
    :mod:`ddpbench.sweep.measured_once` gives them}), as :func:`measure_gemm_peak`'s figures with where it came
    from (``peak_source``: "cache" or "sweep", ``peak_taken_utc``) and its method in words; None where
    none was handed to this rank, or it was taken on other threads or another GPU than this rank's."""
    mine = (offered or {}).get(str(local_rank)) if isinstance(offered, dict) else None
    if not isinstance(mine, dict):
        return None
    figures, taken, source, words = (mine.get(k) for k in ("figures", "taken_utc", "source", "words"))
    if not isinstance(figures, dict) or source not in ("cache", "sweep") or not isinstance(taken, str):
        return None
    peak, method = figures.get("peak_flops"), figures.get("peak_method")
    if not isinstance(peak, (int, float)) or not peak > 0 or not isinstance(method, str):
        return None
    if figures.get("gemm_threads") != threads:
        return None
    device = torch.device(device)
    if device.type == "cuda" and torch.cuda.get_device_name(device) not in method:
        return None
    return {**figures, "peak_flops": float(peak), "peak_method": f"{method}; {words}", "peak_source": source,
            "peak_taken_utc": taken}
