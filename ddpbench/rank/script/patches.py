"""What :class:`~ddpbench.rank.script.instrument.Instrument` patches in torch while a user's script runs, one
small piece per thing patched, each returning what undoes it:

* :func:`patch_ddp` -- ``DistributedDataParallel.__init__``: the job's DDP settings applied where the
  script builds its model (:mod:`ddpbench.rank.script.ddp_settings`), a second DDP refused, the model adopted;
* :func:`patch_grad_scaler` -- ``GradScaler.step`` and ``update``: an update without a step of the
  model's optimizers since the last one is a step the scaler skipped;
* :func:`hook_optimizer_steps` -- the optimizers' global step hooks: all a measured step carries.

Each takes the instrument whose methods the patched code calls, and leaves torch as it found it once
its undo has run (:meth:`Instrument.uninstall <ddpbench.rank.script.instrument.Instrument.uninstall>`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

from ddpbench.experiment.spec import DDP_KNOBS

#: the DDP settings an adopted model reports (what the job's settings made of the script's): the job's (the
#: fields whose role is "ddp") and broadcast_buffers, which a job does not set
ADOPTED = (*DDP_KNOBS, "broadcast_buffers")


def patch_ddp(instrument) -> Callable[[], None]:
    """Build the script's DDP model with the instrument's settings (``instrument.ddp_arguments``: a job's) and
    hand it to ``instrument.adopt``."""
    from torch.nn.parallel import DistributedDataParallel

    original_init = DistributedDataParallel.__init__
    signature = inspect.signature(original_init)

    def init(ddp, *args, **kwargs):
        if instrument.ddp is not None:
            instrument.second_ddp()
            return original_init(ddp, *args, **kwargs)
        bound = signature.bind(ddp, *args, **kwargs)
        settings, instrument.ddp_overridden = instrument.ddp_arguments(bound.arguments, signature.parameters)
        bound.arguments.update(settings)
        bound.apply_defaults()
        original_init(*bound.args, **bound.kwargs)
        instrument.adopt(ddp, {name: bound.arguments[name] for name in ADOPTED})

    DistributedDataParallel.__init__ = init
    return lambda: setattr(DistributedDataParallel, "__init__", original_init)


def patch_grad_scaler(instrument) -> Callable[[], None]:
    """Note a GradScaler step of the DDP model's optimizers, and each update (``instrument.scaler_updated``)."""
    from torch.amp.grad_scaler import GradScaler

    original_step, original_update = GradScaler.step, GradScaler.update

    @functools.wraps(original_step)
    def scaler_step(scaler, optimizer, *args, **kwargs):
        if instrument.ddp is not None and instrument.trains_ddp(optimizer):
            instrument._scaler_stepped = True
        return original_step(scaler, optimizer, *args, **kwargs)

    @functools.wraps(original_update)
    def scaler_update(scaler, *args, **kwargs):
        instrument.scaler_updated()
        return original_update(scaler, *args, **kwargs)

    GradScaler.step, GradScaler.update = scaler_step, scaler_update

    def undo() -> None:
        GradScaler.step, GradScaler.update = original_step, original_update

    return undo


def hook_optimizer_steps(instrument) -> Callable[[], None]:
    """The optimizers' global step hooks (``instrument.attach_step_hooks``)."""
    instrument.attach_step_hooks()
    return instrument.detach_step_hooks


#: every patch, in the order they are made (undone in the reverse)
PATCHES = (patch_ddp, patch_grad_scaler, hook_optimizer_steps)
