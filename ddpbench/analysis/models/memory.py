"""Whether a model's training state fits a device's memory: its parameters, gradients and optimizer state per
device at each size, under DDP (every device holds all of it, so the fit does not depend on the size) or a ZeRO /
FSDP sharding (:data:`.terms.SHARDS`: the parts it shards are divided by the devices).

The rule of thumb is the ZeRO paper's (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training
Trillion Parameter Models", section 3.1): mixed-precision Adam holds 16 bytes a parameter -- the parameters and the
gradients in fp16 or bf16 (2 + 2) and Adam's fp32 master weights, momentum and variance (4 + 4 + 4); in fp32 it
is the same 16: parameters and gradients (4 + 4) and the two moments (4 + 4). SGD with momentum (ddpbench's
``optimizer = "sgd"``, torch.optim.SGD with momentum) keeps one buffer where Adam keeps two, by the same accounting 12
bytes a parameter: 4 + 4 + 4 in fp32, 2 + 2 + 8 (master weights and momentum) in mixed precision. ZeRO stage 1
(PyTorch's ZeroRedundancyOptimizer) shards the optimizer state, stage 2 the gradients too, stage 3 and FSDP the
parameters too. Only the trainable parameters count (the gradients' bytes give them); activations, DDP's bucket
copies of the gradients, the framework's workspace and the allocator's slack are not counted, so a size that does
not fit surely does not, and one that fits may still not.

The device's memory is given (``--device-memory-gb``) or read from the GPU a folder ran on
(:func:`gpu_memory_gb`: the size its name states, else :data:`GPU_MEMORY_GB`, the datasheet's)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ddpbench.analysis.models.terms import GRAD_BYTES

#: bytes a trainable parameter holds by the optimizer and the gradients' dtype: (parameters, gradients, optimizer
#: state); the optimizers are the experiment's (``JobSpec.optimizer``'s choices: sgd is SGD with momentum)
STATE_BYTES = {"adam": {"fp32": (4, 4, 8), "bf16": (2, 2, 12), "fp16": (2, 2, 12)},
               "sgd": {"fp32": (4, 4, 4), "bf16": (2, 2, 8), "fp16": (2, 2, 8)}}
#: the optimizers whose state the rule counts
OPTIMIZERS = tuple(STATE_BYTES)
#: the optimizer counted where none is typed and the measured jobs' is not known (whatif's ``--optimizer``)
DEFAULT_OPTIMIZER = "adam"
#: where the optimizer counted came from, where it is the measured jobs' own
TRAINED_WITH = "the one its jobs trained with"
#: the parts each sharding divides by the devices: (parameters, gradients, optimizer state)
SHARDED = {"none": (False, False, False), "zero1": (False, False, True), "zero2": (False, True, True),
           "zero3": (True, True, True), "fsdp": (True, True, True)}
#: the optimizer state in words, by the optimizer and whether the parameters train in half precision
STATE_WORDS = {("adam", False): "Adam's two moments in fp32",
               ("adam", True): "Adam's fp32 master weights and two moments",
               ("sgd", False): "SGD's momentum in fp32", ("sgd", True): "SGD's fp32 master weights and momentum"}
#: a GPU's memory where its name does not state it, GB (10^9 bytes), with where it comes from
GPU_MEMORY_GB = {"H200": (141.0, "NVIDIA H200 datasheet: 141 GB HBM3e"),
                 "H100 NVL": (94.0, "NVIDIA H100 NVL datasheet: 94 GB HBM3"),
                 "H100": (80.0, "NVIDIA H100 SXM and PCIe datasheet: 80 GB HBM3/HBM2e")}
#: where this rule comes from, in words, by the optimizer
RULE = {"adam": "the ZeRO paper's rule of thumb (Rajbhandari et al. 2020, section 3.1): 16 bytes a parameter for "
                "Adam, mixed precision or fp32",
        "sgd": "the ZeRO paper's accounting (Rajbhandari et al. 2020, section 3.1) with SGD's one momentum buffer for "
               "Adam's two moments: 12 bytes a parameter, mixed precision or fp32"}
#: what the rule leaves out, in words
NOT_COUNTED = ("activations, DDP's bucket copies of the gradients and the framework's workspace are not counted: "
               "a size that fits may still not")


def gpu_memory_gb(names) -> tuple[float, str] | None:
    """(GB, where from) of the smallest-memory GPU among ``names`` (torch's device names): the size a name states
    ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB"), else :data:`GPU_MEMORY_GB`'s for its model; None where a
    name tells neither."""
    found = []
    for name in names:
        stated = re.search(r"(\d+(?:\.\d+)?)\s*GB", str(name), re.IGNORECASE)
        if stated:
            found.append((float(stated.group(1)), f"the GPU's name, {name}"))
            continue
        known = [k for k in GPU_MEMORY_GB if re.search(rf"\b{k}\b", str(name))]
        if not known:
            return None
        gb, source = GPU_MEMORY_GB[max(known, key=len)]
        found.append((gb, f"{name}: {source}"))
    return min(found) if found else None


def counted_optimizer(typed: str | None, trained_with: str | None) -> tuple[str, str]:
    """The optimizer whose state the memory counts, and where it came from: the one typed, else the one the measured
    jobs trained with (:data:`TRAINED_WITH`), else :data:`DEFAULT_OPTIMIZER` ("" where typed or the default)."""
    if typed:
        return typed, ""
    if trained_with:
        return trained_with, TRAINED_WITH
    return DEFAULT_OPTIMIZER, ""


@dataclass(frozen=True)
class Memory:
    """A model's training state against a device's memory: ``params`` trainable parameters, the gradients' dtype,
    the sharding, and the device's memory (GB; None: not known) with where it came from; the optimizer whose state
    it counts (:data:`OPTIMIZERS`) with where that came from ("": the flag's default or as typed)."""

    params: float
    grad_dtype: str = "fp32"
    shard: str = "none"
    device_gb: float | None = None
    source: str = ""
    optimizer: str = DEFAULT_OPTIMIZER
    optimizer_source: str = ""

    @property
    def sizes(self) -> tuple[int, int, int]:
        """Bytes a parameter: (parameters, gradients, optimizer state)."""
        return STATE_BYTES[self.optimizer][self.grad_dtype]

    def parts_gb(self, devices: int) -> tuple[float, float, float]:
        """(parameters, gradients, optimizer state) a device holds at ``devices`` devices, GB."""
        return tuple(self.params * size / (devices if divided else 1) / 1e9
                     for size, divided in zip(self.sizes, SHARDED[self.shard]))

    def state_gb(self, devices: int) -> float:
        """What a device holds of the training state at ``devices`` devices, GB."""
        return sum(self.parts_gb(devices))

    def fits(self, devices: int) -> bool | None:
        """Whether the state fits the device's memory at ``devices`` devices; None where the memory is not known."""
        return None if self.device_gb is None else self.state_gb(devices) <= self.device_gb

    def copy_gb(self) -> float:
        """One copy of the parameters in the dtype they train in, GB."""
        return self.params * GRAD_BYTES[self.grad_dtype] / 1e9

    def problem(self) -> str | None:
        """Why the device's memory cannot be right for this model (a memory smaller than one copy of its parameters,
        under a strategy that keeps them whole on every device); None where it can."""
        if self.device_gb is None or SHARDED[self.shard][0] or self.device_gb >= self.copy_gb():
            return None
        return (f"{self.device_gb:g} GB holds less than one copy of the parameters ({self.copy_gb():.3g} GB in "
                f"{self.grad_dtype}), which every device keeps whole " + ("under DDP" if self.shard == "none" else
                                                                          f"under {self.shard}")
                + ": give a device's memory in GB, or --shard zero3 or fsdp")

    def words(self) -> str:
        """The assumption in one line: the bytes a parameter, what is sharded, where the rule comes from, what it
        leaves out, and the device's memory with where it came from (or that it is not known)."""
        sizes = self.sizes
        words = (f"{self.grad_dtype} parameters", f"{self.grad_dtype} gradients",
                 STATE_WORDS[self.optimizer, self.grad_dtype != "fp32"])
        parts = ", ".join(f"{word} ({size})" for word, size in zip(words, sizes))
        sharded = [word for word, divided in zip(("parameters", "gradients", "optimizer state"), SHARDED[self.shard])
                   if divided]
        how = ("DDP: every device holds all of it, so the fit is the same at every size" if self.shard == "none" else
               f"{self.shard}: its {', '.join(sharded)} divided by the devices")
        count = f"{self.params / 1e9:.3g} billion" if self.params >= 1e9 else f"{self.params / 1e6:.3g} million"
        whose = f"; the optimizer {self.optimizer}: {self.optimizer_source}" if self.optimizer_source else ""
        head = (f"memory: {count} trainable parameters x {sum(sizes)} bytes ({parts}; {RULE[self.optimizer]}{whose}) "
                f"= {self.state_gb(1):.3g} GB a device alone; {how}; {NOT_COUNTED}; ")
        if self.device_gb is None:
            return head + "fit not checked: no device memory known (give --device-memory-gb)"
        return head + f"against {self.device_gb:g} GB a device ({self.source})"

    def smallest_fitting(self, sizes) -> int | None:
        """The smallest of ``sizes`` whose state fits (None: none does, or the memory is not known)."""
        return next((p for p in sorted(sizes) if self.fits(p)), None)
