"""Measuring a user's training script from outside it: hooks on what every DDP script calls.

A script is not changed; while it runs (:class:`Instrument` installed) ddpbench sees it through:

* ``DistributedDataParallel.__init__``, patched: the job's DDP settings are applied where the script
  builds its model, a script's own value the job overrides is reported, and one the job cannot
  stand for is refused (:mod:`ddpbench.rank.ddp_settings`); a second DDP is refused;
* the DDP module's forward hooks: a step's *forward* starts when the DDP forward starts (in training
  mode with grad enabled: evaluation, under ``eval()`` or ``no_grad``, is not a training step), and
  the samples of its first input are counted; a hook on the forward's output gradient marks where *backward* starts;
* the autograd engine's final callbacks: the backward ends once DDP's own end-of-backward callback
  (which waits for every bucket's all-reduce) has run;
* a communication hook wrapping the all-reduce (or the job's ``comm_hook``, or the script's own):
  each bucket's all-reduce, from its launch to its completion (on the CPU; on a GPU the host's
  view of it is not the device's, and none is recorded);
* the optimizer's global step hooks (``torch.optim.Optimizer``): a step ends when the step of the
  optimizer of the DDP model's parameters ends (an optimizer of other parameters is not counted). From the end of the backward to there is *optimizer* (the script's clipping and
  unscaling too); from the end of a step to the next forward is *data* (the wait for the next
  batch, moving it, zeroing gradients, the script's logging). DDP's all-reduce is waited for inside
  the backward, so *comm* is 0, as for a DDP workload.

Phases that cannot be seen in a step (no gradient reached the forward's output, an optimizer step
without a forward) are left unknown (None), never guessed; :attr:`Instrument.unseen` says why.

Steps run as for a workload: ``warmup_steps``, ``steps`` measured, then ``steps`` more with DDP's
gradient synchronisation off (``require_backward_grad_sync``, the flag DDP's own ``no_sync()``
sets: what a workload's no-sync phase runs), after which the model and optimizer are restored to
their state at the end of the measured steps. Then the script is stopped at the step boundary
(:class:`StopScript`, raised from the optimizer's hook) or, with ``script_to_end``, left to run on.
"""

from __future__ import annotations

import copy
import inspect
import time

#: what the errors of a script that needs a GPU say (torch's own messages)
NO_GPU = ("Torch not compiled with CUDA enabled", "No CUDA GPUs are available", "Found no NVIDIA driver",
          "no CUDA-capable device", "NCCL built in", "ProcessGroupNCCL is only supported with GPUs",
          "CUDA driver initialization failed")


class StopScript(BaseException):
    """Raised from the optimizer's step hook once ddpbench has its steps: ends the script there.
    A BaseException, so that a script's ``except Exception`` does not swallow it."""


class BadScript(BaseException):
    """A script that breaks what ddpbench needs of it (one DDP, an optimizer that steps, enough steps)."""


def first_tensor(value, grad: bool = False):
    """The first tensor in a (nested) forward input or output; with ``grad``, the first requiring grad."""
    import torch

    if isinstance(value, torch.Tensor):
        return value if not grad or value.requires_grad else None
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
    for item in items:
        found = first_tensor(item, grad)
        if found is not None:
            return found
    return None


class Instrument:
    """Every hook of one script run; :meth:`install` before the script, :meth:`uninstall` after.

    ``clock``: the step timer's (:mod:`ddpbench.rank.timing`); ``at(phase, step)``: where the rank is.
    """

    def __init__(self, spec, rank: int, clock, at=lambda phase, step=-1: None):
        from ddpbench.rank.timing import StepTimer

        self.spec, self.rank, self.at = spec, rank, at
        self.timer = StepTimer(clock)
        self.host_clock = clock.__class__.__name__ == "HostClock"
        self.plan = (("warmup", spec.warmup_steps), ("measure", spec.steps), ("nosync", spec.steps))
        self.total = sum(count for _, count in self.plan)
        self.ddp = None
        self.ddp_params: set[int] = set()
        self.optimizer = None
        self.ddp_settings: dict = {}
        self.ddp_overridden: dict = {}  # what the script passed DDP that the job's settings replaced
        self.user_hook = None  # (state, hook) the script registered
        self.steps_done = 0  # optimizer steps since DDP was built
        self.rows: list[list] = []
        self.state = "idle"  # idle | forward | backward | after_backward
        self.started = False
        self.samples = 0
        self.step_samples: list[int] = []
        self.forwards = 0
        self.bucket_ms: dict[int, list[float]] = {}
        self.unseen: dict[str, int] = {}
        self.snapshot = None
        self.done = False
        #: whether the per-step hooks time anything (benchmarks/script_overhead.py pauses them every other
        #: epoch, to set the script's own timing of hooked epochs against unhooked ones in one process)
        self.active = True
        self._undo: list = []
        self._hooks: list = []
        #: measured steps in which a bucket's all-reduce completed after the backward's end was marked
        #: (0 unless the end of the backward were seen too early: then comm_ms = 0 would be wrong)
        self.late_comm = 0
        self._comm_done_ns = 0
        self._backward_end_ns = 0

    # -- which step this is ----------------------------------------------------------------
    def phase_of(self, step: int) -> str | None:
        for name, count in self.plan:
            if step < count:
                return name
            step -= count
        return None

    # -- install and uninstall -------------------------------------------------------------
    def install(self) -> None:
        from torch.nn.parallel import DistributedDataParallel
        from torch.optim.optimizer import register_optimizer_step_post_hook

        from ddpbench.rank.ddp_settings import ddp_settings

        original_init = DistributedDataParallel.__init__
        signature = inspect.signature(original_init)
        instrument = self

        def init(ddp, *args, **kwargs):
            if instrument.ddp is not None:
                raise BadScript("the script builds a second DistributedDataParallel; ddpbench measures a script "
                                "that trains one DDP model")
            bound = signature.bind(ddp, *args, **kwargs)
            settings, instrument.ddp_overridden = ddp_settings(instrument.spec, bound.arguments, signature.parameters,
                                                               refuse=BadScript)
            bound.arguments.update(settings)
            bound.apply_defaults()
            original_init(*bound.args, **bound.kwargs)
            instrument.adopt(ddp, {name: bound.arguments[name] for name in
                                   ("bucket_cap_mb", "gradient_as_bucket_view", "static_graph",
                                    "find_unused_parameters", "broadcast_buffers")})

        DistributedDataParallel.__init__ = init
        handle = register_optimizer_step_post_hook(self.after_optimizer_step)
        self._undo = [lambda: setattr(DistributedDataParallel, "__init__", original_init), handle.remove]

    def uninstall(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo = []

    def set_active(self, active: bool) -> None:
        """Time steps (True) or let them pass untimed from the next step on (False); at a step boundary."""
        self.active, self.started, self.state = active, False, "idle"

    def stop_timing(self) -> None:
        """Remove the per-step hooks (the forward's and the optimizer's): ddpbench has its steps."""
        for undo in self._hooks:
            undo.remove()
        self._hooks = []

    # -- DDP -----------------------------------------------------------------------------------
    def adopt(self, ddp, settings: dict) -> None:
        """The script's DDP model, just built with ``settings``: check it and hook it."""
        import torch.distributed as dist

        self.ddp, self.ddp_settings = ddp, settings
        params = [p for p in ddp.module.parameters()]
        self.ddp_params = {id(p) for p in params}
        device = params[0].device.type if params else "cpu"
        if device != self.spec.device:
            raise BadScript(f"the script trains on {device} and the job says device = {self.spec.device!r}: set "
                            f"device = {device!r}")
        backend = str(dist.get_backend())
        if self.spec.backend not in backend:
            raise BadScript(f"the script's process group runs {backend} and the job says backend = "
                            f"{self.spec.backend!r}: set backend = {backend!r}")
        ddp.register_comm_hook(None, self.comm_hook)
        ddp.register_comm_hook = self.register_user_hook  # the script's own hook runs inside ours
        self._hooks = [ddp.register_forward_pre_hook(self.before_forward, with_kwargs=True),
                       ddp.register_forward_hook(self.after_forward)]
        self._undo.insert(0, self.stop_timing)

    def register_user_hook(self, state, hook) -> None:
        if self.spec.comm_hook != "none":
            raise BadScript(f"the script registers its own DDP communication hook ({getattr(hook, '__name__', hook)}) "
                            f"and the job sets comm_hook = {self.spec.comm_hook!r}: leave comm_hook out")
        if self.user_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        self.user_hook = (state, hook)

    def comm_hook(self, _state, bucket):
        """Every bucket's reduction: the script's hook, the job's, or DDP's all-reduce; timed on the CPU."""
        from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

        from ddpbench.strategies.ddp import comm_hook

        if self.user_hook is None:
            self.user_hook = comm_hook(self.spec) or (None, allreduce_hook)
        state, hook = self.user_hook
        if not self.active or not self.host_clock or self.phase_of(self.steps_done) != "measure":
            return hook(state, bucket)
        start = time.perf_counter_ns()
        index = bucket.index()

        def done(future):
            self._comm_done_ns = now = time.perf_counter_ns()
            self.bucket_ms.setdefault(index, []).append((now - start) / 1e6)
            return future.value()

        return hook(state, bucket).then(done)

    # -- the step's marks ------------------------------------------------------------------
    def before_forward(self, module, args, kwargs):
        import torch

        if not (torch.is_grad_enabled() and module.training and self.active):
            return None  # evaluation: not a training step's forward
        self.forwards += 1
        inputs = first_tensor(args)
        if inputs is None:
            inputs = first_tensor(kwargs)
        if inputs is not None and inputs.dim() > 0:
            self.samples += int(inputs.shape[0])
        if not self.started:
            self.timer.start()
            self.started = True
        if self.state in ("idle", "after_backward"):
            self.timer.mark("data_ms")
            self.state = "forward"
        return None

    def after_forward(self, module, args, output):
        import torch

        if not (torch.is_grad_enabled() and module.training and self.active):
            return None
        out = first_tensor(output, grad=True)
        if out is not None:
            out.register_hook(self.backward_started)
        return None

    def backward_started(self, grad):
        from torch.autograd import Variable

        if self.state == "forward":
            self.timer.mark("forward_ms")
            self.state = "backward"
            # DDP queues its own end-of-backward callback (which waits for the all-reduce) during the
            # backward; a callback queued by a callback runs after every one queued before it
            engine = Variable._execution_engine
            engine.queue_callback(lambda: engine.queue_callback(self.backward_ended))
        return None

    def backward_ended(self) -> None:
        if self.state == "backward":
            self.timer.mark("backward_ms")
            self._backward_end_ns = time.perf_counter_ns()
            self.state = "after_backward"

    def after_optimizer_step(self, optimizer, args, kwargs) -> None:
        if self.done or not self.active:
            return
        if self.ddp is None:
            raise BadScript("the script stepped an optimizer before it built DistributedDataParallel: ddpbench "
                            "measures the steps of a script's DDP model")
        if optimizer is not self.optimizer:
            if not any(id(p) in self.ddp_params for group in optimizer.param_groups for p in group["params"]):
                return  # it trains something else than the DDP model: not a step of it
            if self.optimizer is not None:
                raise BadScript("the script steps a second optimizer of its DDP model's parameters; ddpbench "
                                "counts the steps of one")
            self.optimizer = optimizer
        step, phase = self.steps_done, self.phase_of(self.steps_done)
        if not self.started:  # a step without any forward of the DDP model
            self.timer.start()
            self.started = True
        seen = self.state == "after_backward"
        self.timer.mark("optimizer_ms" if seen else "unseen")
        if not seen:
            why = {"idle": "an optimizer step without a forward of the DDP model",
                   "forward": "no gradient reached the DDP model's output",
                   "backward": "the backward's end was not seen"}[self.state]
            self.unseen[why] = self.unseen.get(why, 0) + 1
        row = self.timer.lap()
        self.state = "idle"
        if phase == "measure" and self._comm_done_ns > self._backward_end_ns:
            self.late_comm += 1
        known = [row.get("data_ms", 0.0), *(row.get(p, 0.0) if seen else None for p in
                                            ("forward_ms", "backward_ms")), 0.0 if seen else None,
                 row.get("optimizer_ms") if seen else None]
        self.rows.append([self.rank, phase, step - self.first_of(phase), *known, row["step_ms"]])
        self.step_samples.append(self.samples)
        if step == 0:
            self.check_batch(self.samples)
        self.samples = 0
        self.steps_done += 1
        following = self.phase_of(self.steps_done)
        self.at(f"script {following or 'end'}", self.steps_done - self.first_of(following) if following else -1)
        self.boundary(self.steps_done)

    def first_of(self, phase: str) -> int:
        first = 0
        for name, count in self.plan:
            if name == phase:
                return first
            first += count
        return first

    def check_batch(self, samples: int) -> None:
        spec = self.spec
        expected = spec.per_rank_batch
        if samples != expected:
            fix = samples * spec.world_size if spec.scaling == "strong" else samples
            raise BadScript(f"the script's DDP model took {samples} samples in its first optimizer step on rank "
                            f"{self.rank}, and the job counts {expected} per rank (batch_size = {spec.batch_size}, "
                            f"scaling = {spec.scaling!r}): set batch_size = {fix} so that samples/s counts what the "
                            "script trains")

    def boundary(self, step: int) -> None:
        """Between two steps: start or end the no-sync steps, stop when every step is done."""
        first_nosync = self.first_of("nosync")
        if step == first_nosync and self.spec.steps:
            self.snapshot = (copy.deepcopy(self.ddp.module.state_dict()), copy.deepcopy(self.optimizer.state_dict()))
            self.ddp.require_backward_grad_sync = False
        if step == self.total:
            if self.snapshot is not None:
                self.ddp.module.load_state_dict(self.snapshot[0])
                self.optimizer.load_state_dict(self.snapshot[1])
                self.snapshot = None
            self.ddp.require_backward_grad_sync = True
            self.done = True
            self.stop_timing()
            if not self.spec.script_to_end:
                raise StopScript()

    # -- what the run showed ---------------------------------------------------------------
    def missing(self, ended: str) -> str | None:
        """Why a script that ended (``ended``: how) gave ddpbench too little, or None."""
        if self.ddp is None:
            return (f"the script {ended} without building DistributedDataParallel: ddpbench measures a script "
                    "through the DDP model it trains")
        if self.steps_done == 0:
            return (f"the script {ended} without stepping an optimizer after it built DDP: ddpbench counts "
                    "steps by torch.optim.Optimizer.step")
        if self.steps_done < self.total:
            spec = self.spec
            return (f"the script {ended} after {self.steps_done} optimizer steps; the job needs {self.total} "
                    f"(warmup_steps {spec.warmup_steps} + steps {spec.steps} measured + {spec.steps} without "
                    "gradient sync): lower steps, or give the script more to do (its script_args)")
        return None

    def bucket_comm_ms(self) -> list[float] | None:
        """Each bucket's mean all-reduce time over the measured steps, in DDP's bucket order."""
        if not self.bucket_ms:
            return None
        return [sum(times) / len(times) for _, times in sorted(self.bucket_ms.items())]
