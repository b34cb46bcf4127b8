"""Mixed precision and ``torch.compile`` in a training rank, as PyTorch's users turn them on.

Precision (the job's ``precision``):

  fp32  nothing changes: the loop as it always ran.
  bf16  the forward and the loss run under ``torch.autocast(device_type, torch.bfloat16)``;
        backward follows the autocast graph. No loss scaling (bf16 has fp32's exponent range).
  fp16  the same under ``torch.float16``, with ``torch.amp.GradScaler``: the loss is scaled before
        backward, the optimizer steps through ``scaler.step`` (which skips a step whose gradients
        hold an inf or a NaN) and ``scaler.update``; skipped steps are counted on the device and
        read once, after the measured steps (no extra sync per step).

What stays as PyTorch leaves it: parameters, gradients, DDP's buckets and the optimizer's state are
fp32 (autocast casts a weight's copy for the op, and its gradient flows back into the fp32 leaf), so
the bytes on the wire are fp32 unless a communication hook (``comm_hook``) compresses them: compute
precision and wire precision are separate settings.

Compile (the job's ``compile``): the module the loop calls -- the strategy's wrapper, so for DDP the
DDP-wrapped model, as PyTorch's DDP + compile tutorial does it, and TorchDynamo's DDPOptimizer splits
the graph at DDP's bucket boundaries so the all-reduces still overlap backward -- goes through
``torch.compile``. Compilation happens on the first call, so the rank runs a ``compile`` phase (one
untimed step) before the warmup; :class:`CompileWatch` reads Dynamo's counters around it and
around the measured steps.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path

import torch

#: the autocast dtype of each precision (fp32: no autocast)
AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
#: where a job's compile cache lives, beside its launches' work folders
CACHE_DIR = "inductor-cache"


class ScaledOptimizer:
    """An optimizer whose ``step()`` is ``scaler.step(optimizer)``: what a strategy's
    ``optimizer_step`` calls, so the strategy steps as it always does and the scaler decides."""

    def __init__(self, scaler, optimizer):
        self.scaler, self.optimizer = scaler, optimizer

    def step(self):
        return self.scaler.step(self.optimizer)

    def __getattr__(self, name):
        return getattr(self.optimizer, name)


class Precision:
    """The compute precision of one replica's steps."""

    def __init__(self, precision: str, device):
        self.name = precision
        self.device = device
        self.dtype = AUTOCAST_DTYPES.get(precision)
        self.scaler = torch.amp.GradScaler(device.type) if precision == "fp16" else None
        self._skipped = None  # a device tensor: steps the scaler skipped (inf or NaN gradients)

    def autocast(self):
        """Context of the forward and the loss."""
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.dtype)

    def scale(self, loss):
        """The loss backward starts from (scaled under fp16)."""
        return self.scaler.scale(loss) if self.scaler is not None else loss

    def optimizer_step(self, strategy, optimizer) -> None:
        """The strategy's optimizer step, through the scaler under fp16."""
        if self.scaler is None:
            strategy.optimizer_step(optimizer)
            return
        strategy.optimizer_step(ScaledOptimizer(self.scaler, optimizer))
        # what scaler.step found, per device, before update() clears it (a strategy whose rank does
        # not step, e.g. one that steps only on a master, leaves it empty)
        found = self.scaler._per_optimizer_states[id(optimizer)].get("found_inf_per_device", {})
        if found:
            total = sum(v.to(self.device) for v in found.values())
            self._skipped = total if self._skipped is None else self._skipped + total
        self.scaler.update()

    def skipped_steps(self) -> int | None:
        """Optimizer steps the GradScaler skipped so far (None without one)."""
        if self.scaler is None:
            return None
        return 0 if self._skipped is None else int(self._skipped.item())

    def loss_scale(self) -> float | None:
        return float(self.scaler.get_scale()) if self.scaler is not None else None


# ---------------------------------------------------------------------------------------------
# compile
# ---------------------------------------------------------------------------------------------

def use_compile_cache(out_dir: Path | None, key: str) -> tuple[str, bool]:
    """Point Inductor's caches at the job's own folder (``<work>/../inductor-cache/<key>``), unless
    ``TORCHINDUCTOR_CACHE_DIR`` is set already (a user's choice wins), and turn on its FX graph and
    AOTAutograd caches: the first launch of a job compiles and fills it, later repeats (fresh
    processes) load the compiled graphs from it. Returns (the folder, whether it held anything before).

    Inductor's default folder in the variable is not a user's choice: Inductor writes it into
    ``os.environ`` the first time any process compiles, so a sweep started from a process that
    compiled before (a test session, a notebook) inherits it; every job would then share one cache
    and a job's first launch would find it warm."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    folder = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if not folder or os.path.abspath(folder) == os.path.abspath(default_cache_dir()):
        base = out_dir.parent if out_dir is not None else Path(os.environ.get("TMPDIR", "/tmp")) / "ddpbench"
        folder = str(base / CACHE_DIR / key)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = folder
    os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "1")
    os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "1")
    import torch._inductor.config as inductor_config

    inductor_config.fx_graph_cache = os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] == "1"
    if hasattr(inductor_config, "autograd_cache"):
        inductor_config.autograd_cache = os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"] == "1"
    path = Path(folder)
    warm = path.is_dir() and any(path.iterdir())
    path.mkdir(parents=True, exist_ok=True)
    return folder, warm


class _SplitLog(logging.Handler):
    """Catches DDPOptimizer's "created N buckets" line: the subgraphs it split a graph into."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.splits: list[int] = []

    def emit(self, record):
        if "DDPOptimizer used bucket cap" in str(record.msg) and len(record.args or ()) >= 2:
            self.splits.append(int(record.args[1]))


class CompileWatch:
    """Dynamo's counters read around the compile phase and the measured steps: how many graphs it
    compiled, its graph breaks (with their reasons), DDPOptimizer's splits, and recompiles that
    happened after the compile phase (which would be inside timed steps)."""

    def __init__(self):
        from torch._dynamo.utils import counters

        self.counters = counters
        counters.clear()
        self.handler = _SplitLog()
        self.logger = logging.getLogger("torch._dynamo.backends.distributed")
        self.logger.addHandler(self.handler)
        if self.logger.getEffectiveLevel() > logging.INFO:
            self.logger.setLevel(logging.INFO)
        self.compiled_after_phase: int | None = None
        self.compile_s: float | None = None

    def graphs(self) -> int:
        return int(self.counters["stats"]["unique_graphs"])

    def time(self, run_step) -> None:
        """Run the compile phase (``run_step()``: one step that compiles) and time it."""
        start = time.perf_counter()
        run_step()
        self.compile_s = time.perf_counter() - start
        self.compiled_after_phase = self.graphs()

    def figures(self) -> dict:
        breaks = self.counters["graph_break"]
        self.logger.removeHandler(self.handler)
        return {"compile_s": self.compile_s, "compiled_graphs": self.graphs(),
                "graph_breaks": int(sum(breaks.values())),
                "graph_break_reasons": [str(reason).strip().splitlines()[0][:200] for reason in list(breaks)[:5]],
                "ddp_optimizer_subgraphs": max(self.handler.splits) if self.handler.splits else None,
                "recompiles_after_compile_phase": self.graphs() - (self.compiled_after_phase or 0)}


def compile_module(model):
    """``torch.compile`` of the module the loop calls (default backend: Inductor)."""
    return torch.compile(model)
