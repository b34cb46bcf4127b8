"""Measuring a user's training script from outside it: hooks on what every DDP script calls.

A script is not changed; while it runs (:class:`Instrument` installed) ddpbench sees it through what
it patches in torch, one piece per thing patched in :mod:`ddpbench.rank.script.patches`:

* ``DistributedDataParallel.__init__``, patched: the job's DDP settings are applied where the script
  builds its model, a script's own value the job overrides is reported, and one the job cannot
  stand for is refused (:mod:`ddpbench.rank.script.ddp_settings`); a second DDP is refused. The model's class is
  swapped for a subclass of it whose ``require_backward_grad_sync`` (the flag DDP's forward reads, and
  ``no_sync()`` sets) is ddpbench's to steer: what the script sets is its wish, honoured except in
  ddpbench's no-sync steps;
* the optimizers' global step hooks (``torch.optim.Optimizer``): a step ends when the optimizers of
  the DDP model's parameters have each stepped once (the set is learnt from the script's first step:
  the optimizers stepped before the first of them steps again; an optimizer of other parameters is
  not counted, and one stepped inside another's step, as ``ZeroRedundancyOptimizer`` and
  Accelerate's wrapper step theirs, counts as the outer one's step);
* ``GradScaler.step`` and ``update``: an update without a step of the model's optimizers since the
  last one is a step the scaler skipped (inf or NaN gradients): stored apart, never counted.

What a step costs the script is its measured time, so the measured steps (``measure``, and
``nosync`` from which the exposed communication follows) carry only the step hooks: one clock read
at the step's end. Where the time goes inside a step is measured on ``steps`` more steps of their
own, of the step kind ``phases``, run before the measured ones with the phase hooks on:

* the DDP module's forward hooks: a step's *forward* starts when the DDP forward starts (in training
  mode with grad enabled: evaluation, under ``eval()`` or ``no_grad``, is not a training step), and
  the samples of its first input are counted; a hook on the forward's output gradient marks where *backward* starts;
* the autograd engine's final callbacks: the backward ends once DDP's own end-of-backward callback
  (which waits for every bucket's all-reduce) has run;
* where the bucket reduction runs Python anyway (the job's ``comm_hook``, or the script's own hook)
  a wrapper around it times each bucket's reduction, from its launch to its completion (on the CPU;
  on a GPU the host's view of it is not the device's, and none is recorded). DDP's own C++
  all-reduce is left alone: a Python hook in its place would cost every step, measured ones too;
* a post-accumulate-grad hook on every trainable parameter of the DDP model notes when the step's
  last gradient was accumulated (``ready_ms``, stored on the ``phases`` steps), before DDP's
  end-of-backward wait for the all-reduce;
* from the end of the backward to the end of the last optimizer step is *optimizer* (the script's
  clipping and unscaling too); from the end of a step to the next forward is *data* (the wait for
  the next batch, moving it, zeroing gradients, the script's logging). DDP's all-reduce is waited
  for inside the backward, so *comm* is 0, as for a DDP workload.

Phases that cannot be seen in a step (no gradient reached the forward's output, an optimizer step
without a forward) are left unknown (None), never guessed; :attr:`Instrument.unseen` says why.

Steps run as: ``warmup_steps`` (phase hooks on), ``steps`` with the phase hooks (``phases``),
``steps`` measured, then ``steps`` more with DDP's gradient synchronisation off (``nosync``: the
flag off, as DDP's own ``no_sync()`` sets it), after which the model and optimizers are restored to
their state at the end of the measured steps. Each no-sync step is checked to have skipped the
all-reduce (DDP's ``require_forward_param_sync``, which its forward sets only when it prepares the
reduction, and the bucket reductions a wrapper saw); the steps that did not are counted
(:attr:`Instrument.nosync_allreduced`) and the exposed communication is withheld. Then the script
is stopped at the step boundary (:class:`StopScript`, raised from the optimizer's hook) or, with
``script_to_end``, left to run on.
"""

from __future__ import annotations

import copy
import time
import weakref
from functools import partial

from ddpbench.rank.record import Meters, Side
from ddpbench.rank.script.plan import Plan
from ddpbench.rank.script.steps import HOOKED, WORLD_SIZES, BadScript, StepEnds, StopScript, own_optimizer, refused

#: what the errors of a script that needs a GPU say (torch's own messages)
NO_GPU = ("Torch not compiled with CUDA enabled", "No CUDA GPUs are available", "Found no NVIDIA driver",
          "no CUDA-capable device", "NCCL built in", "ProcessGroupNCCL is only supported with GPUs",
          "CUDA driver initialization failed")


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


#: ``user_hook``'s first item when the script registered one of DDP's builtin (C++) hooks
BUILTIN = object()


class Instrument(StepEnds):
    """Every hook of one script run; :meth:`install` before the script, :meth:`uninstall` after.

    ``clock``: the step timer's (:mod:`ddpbench.rank.timing`); ``at(kind, step)``: where the rank is;
    ``plan``: a :class:`~ddpbench.rank.script.plan.Plan`, or its (kind, steps) in order; by default the job's (see the
    module docstring).
    """

    def __init__(self, spec, rank: int, clock, at=lambda kind, step=-1: None, plan=None):
        from ddpbench.rank.timing import StepTimer

        self.spec, self.rank, self.at = spec, rank, at
        self.timer = StepTimer(clock)
        self.host_clock = clock.__class__.__name__ == "HostClock"
        self.plan = plan if isinstance(plan, Plan) else Plan(
            plan or (("warmup", spec.warmup_steps), ("phases", spec.steps), ("measure", spec.steps),
                     ("nosync", spec.steps)))
        self.ddp = None
        self.ddp_params: set[int] = set()
        #: the optimizers of the DDP model's parameters a step steps, each once (learnt in the first step)
        self.optimizers: list = []
        self.learned = False
        self.stepped: list = []  # the optimizers stepped so far in the step under way
        self._trains = weakref.WeakKeyDictionary()  # optimizer -> whether it steps DDP parameters
        self.depth = 0  # optimizer steps under way (one inside another's: ZeroRedundancyOptimizer's local one)
        self.ddp_settings: dict = {}
        self.ddp_overridden: dict = {}  # what the script passed DDP that the job's settings replaced
        self.user_hook = None  # (state, hook) the script registered, or (BUILTIN, type)
        #: how the buckets are reduced, settled at the first forward: "builtin" (DDP's own C++ all-reduce,
        #: untouched), "python" (a Python hook, the job's or the script's, run inside ddpbench's timing wrapper),
        #: or "script builtin" (a builtin hook the script registered)
        self.comm: str | None = None
        self._register_comm = self._register_builtin = None
        self.counted = 0  # steps since DDP was built, made rows (:attr:`steps_done` counts them all)
        self.kind = self.kind_of(0)  # the step kind of the step under way (:mod:`ddpbench.rank.script.plan`)
        self.hooked = self.kind in HOOKED
        self.rows: list[list] = []
        self.state = "idle"  # idle | forward | backward | after_backward | optimizer
        self.started = False
        self.samples = 0
        self.step_samples: list[int] = []  # the samples of each step with the phase hooks on
        self.forwards = 0
        self.bucket_ms: dict[int, list[float]] = {}
        self.unseen: dict[str, int] = {}
        self.snapshot = None
        self.done = False
        #: whether the per-step hooks time anything (benchmarks/script_overhead.py pauses them every other
        #: epoch, to set the script's own timing of hooked epochs against unhooked ones in one process)
        self.active = True
        self.wish = True  # what the script set require_backward_grad_sync to
        self.nosync = False  # ddpbench's no-sync steps under way: DDP's flag reads False whatever the wish
        #: no-sync steps (all ranks' once gathered) whose gradients were all-reduced all the same
        self.nosync_allreduced = 0
        self._reduced = False  # a bucket was reduced in this no-sync step (seen by the wrapper)
        #: the steps the GradScaler skipped: [rank, step kind, step_ms, samples]
        self.skipped: list[list] = []
        self._scaler_stepped = self._stepped_since_update = False
        #: what the rank records (:mod:`ddpbench.rank.record`): started with the measured steps, stopped and taken
        #: as they end, before the no-sync snapshot (see ScriptRank)
        self.meters = Meters(Side(gpus=self.gpus,
                                  no_energy="a script job's energy is not read yet (docs/cost-and-energy.md)"))
        self._undo: list = []
        self._hooks: list = []
        self._step_hooks: list = []
        self._first = None
        #: steps with the phase hooks in which a bucket's all-reduce completed after the backward's end was
        #: marked (0 unless the end of the backward were seen too early: then comm_ms = 0 would be wrong)
        self.late_comm = 0
        self._comm_done_ns = 0
        self._backward_end_ns = 0
        # the measured steps' fast path (one optimizer learnt, no phase hooks): each step's (start, end) on the
        # clock, made rows when the steps of its kind end (:meth:`flush`)
        self._fast = None  # the optimizer whose step ends a step on the fast path, or None: the full path
        self._fast_steps = 0  # the steps the fast path takes before it flushes
        self._spans: list[tuple] = []
        self._nosync_synced = 0  # fast no-sync steps that all-reduced
        self._last = None  # the clock's mark where the step under way began (fast path)
        self._why: str | None = None  # why the step under way's phases are unseen, if they are
        self._end_mark = 0  # the timer's mark at the last optimizer step of the step under way
        self._end_samples = 0  # its samples there

    @property
    def steps_done(self) -> int:
        """The optimizer steps since DDP was built: those made rows, the fast path's not yet made rows, and a
        first step still open (its optimizers are learnt when the first of them steps again)."""
        return self.counted + len(self._spans) + (1 if self.stepped and not self.learned else 0)

    @property
    def total(self) -> int:
        return self.plan.total

    @property
    def optimizer(self):
        """The first optimizer of the DDP model's parameters (None before one stepped)."""
        return (self.optimizers or self.stepped or [None])[0]

    @optimizer.setter
    def optimizer(self, value) -> None:
        if value is not None:
            raise ValueError("only None: ddpbench learns the optimizers from the script's steps")
        self.optimizers, self.stepped = [], []

    # -- which step this is ----------------------------------------------------------------
    def kind_of(self, step: int) -> str | None:
        return self.plan.kind_of(step)

    def first_of(self, kind: str) -> int:
        return self.plan.first_of(kind)

    def fast_at(self) -> tuple[str, int] | None:
        """Where the rank is on the fast path (the step kind, and the step of that kind under way: the
        steps ended are the spans taken so far), None off it; read from another thread, never written."""
        kind, ended = self.kind, len(self._spans)
        if self._fast is None:
            return None
        return kind, self.counted + ended - self.first_of(kind)

    # -- install and uninstall -------------------------------------------------------------
    def install(self) -> None:
        """Make every patch (:data:`ddpbench.rank.script.patches.PATCHES`): DDP's construction, the GradScaler, the
        optimizers' step hooks."""
        from ddpbench.rank.script.patches import PATCHES

        self._undo = [patch(self) for patch in PATCHES]

    def uninstall(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo = []

    def attach_step_hooks(self) -> None:
        """The optimizers' global step hooks: all a measured step carries."""
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        if not self._step_hooks:
            self._step_hooks = [register_optimizer_step_pre_hook(self.before_optimizer_step),
                                register_optimizer_step_post_hook(self.after_optimizer_step)]

    def detach_step_hooks(self) -> None:
        for handle in self._step_hooks:
            handle.remove()
        self._step_hooks = []

    def set_active(self, active: bool) -> None:
        """Time steps (True) or let them pass untimed from the next step on (False); at a step boundary, with
        the phase hooks on (the fast path of the measured steps cannot be paused)."""
        self.active, self.started, self.state = active, False, "idle"

    def stop_timing(self) -> None:
        """Remove the phase hooks (the DDP forward's): the steps from here on are timed by their end alone."""
        for undo in self._hooks:
            undo.remove()
        self._hooks = []

    def let_go(self) -> None:
        """Hold the script's DDP model and optimizers no longer (its training is over): DDP must be gone before
        its process group is, or gloo can abort at exit, so a script that drops them may expect them freed."""
        self.stop_timing()
        if self.ddp is not None and self._register_comm is not None:
            del self.ddp.register_comm_hook, self.ddp._register_builtin_comm_hook  # DDP's own again
        self.ddp = self._register_comm = self._register_builtin = self.snapshot = None
        self.optimizers, self.stepped = [], []

    def hook_phases(self) -> None:
        """Put the phase hooks on the DDP forward, and the ready hook on each trainable parameter."""
        if not self._hooks and self.ddp is not None:
            self._hooks = [self.ddp.register_forward_pre_hook(self.before_forward, with_kwargs=True),
                           self.ddp.register_forward_hook(self.after_forward)]
            self._hooks += [p.register_post_accumulate_grad_hook(self.gradient_ready)
                            for p in self.ddp.module.parameters() if p.requires_grad and p.is_leaf]

    # -- DDP -----------------------------------------------------------------------------------
    def adopt(self, ddp, settings: dict) -> None:
        """The script's DDP model, just built with ``settings``: check it and hook it."""
        import torch.distributed as dist

        self.ddp, self.ddp_settings = ddp, settings
        params = [p for p in ddp.module.parameters()]
        self.ddp_params = {id(p) for p in params}
        self.check_runs_on(params[0].device.type if params else "cpu", str(dist.get_backend()))
        # the script's own hook is registered at the first forward, inside ddpbench's wrapper if it is Python
        self._register_comm, self._register_builtin = ddp.register_comm_hook, ddp._register_builtin_comm_hook
        ddp.register_comm_hook = self.register_user_hook
        ddp._register_builtin_comm_hook = self.register_user_builtin
        self._first = ddp.register_forward_pre_hook(self.first_forward)
        self.steer(ddp)
        if self.hooked:
            self.hook_phases()
        self._undo.insert(0, self.stop_timing)

    def ddp_arguments(self, asked: dict, accepts) -> tuple[dict, dict]:
        """What the script's ``DistributedDataParallel`` is built with on top of what it passed (``asked``, by
        name; ``accepts``: the parameters this torch's DDP takes), and what of the script's the job replaced:
        the job's DDP settings (:func:`ddpbench.rank.script.ddp_settings.ddp_settings`)."""
        from ddpbench.rank.script.ddp_settings import ddp_settings

        return ddp_settings(self.spec, asked, accepts, refuse=partial(BadScript, refused=WORLD_SIZES))

    def second_ddp(self) -> None:
        """The script builds a second DDP model: refused."""
        raise refused("the script builds a second DistributedDataParallel; ddpbench measures a script that "
                      "trains one DDP model")

    def check_runs_on(self, device: str, backend: str) -> None:
        """Refuse a model on another device, or a process group of another backend, than the job's."""
        if device != self.spec.device:
            raise refused(f"the script trains on {device} and the job says device = {self.spec.device!r}: set "
                          f"device = {device!r}")
        if self.spec.backend not in backend:
            raise refused(f"the script's process group runs {backend} and the job says backend = "
                          f"{self.spec.backend!r}: set backend = {backend!r}")

    def register_user_hook(self, state, hook) -> None:
        if self.spec.comm_hook != "none":
            raise refused(f"the script registers its own DDP communication hook ({getattr(hook, '__name__', hook)}) "
                          f"and the job sets comm_hook = {self.spec.comm_hook!r}: leave comm_hook out")
        if self.user_hook is not None or self.comm not in (None, "builtin"):
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        if self.comm is not None:  # after the first forward (which DDP allows): passed on, not timed
            self._register_comm(state, hook)
            self.comm = "python, untimed"
            return
        self.user_hook = (state, hook)

    def register_user_builtin(self, comm_hook_type) -> None:
        if self.spec.comm_hook != "none":
            raise refused(f"the script registers DDP's builtin communication hook {comm_hook_type} and the job "
                          f"sets comm_hook = {self.spec.comm_hook!r}: leave comm_hook out")
        if self.user_hook is not None or self.comm not in (None, "builtin"):
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        self.user_hook = (BUILTIN, comm_hook_type)
        if self.comm is not None:
            self.ready_comm(again=True)

    def first_forward(self, module, args) -> None:
        self._first.remove()
        self.ready_comm()

    def ready_comm(self, again: bool = False) -> None:
        """At the DDP model's first forward: how its buckets are reduced. DDP's own all-reduce stays as it is
        (a Python hook around it would cost every step: ``benchmarks/script_overhead.py hooks``); a Python
        hook, the job's or the script's, runs inside ddpbench's wrapper, which times it on the phase steps."""
        from ddpbench.strategies.ddp import comm_hook

        if self.comm is not None and not again:
            return
        if self.user_hook is None:
            self.user_hook = comm_hook(self.spec)
        if self.user_hook is None:
            self.comm = "builtin"
        elif self.user_hook[0] is BUILTIN:
            self._register_builtin(self.user_hook[1])
            self.comm = "script builtin"
        else:
            self._register_comm(None, self.comm_hook)
            self.comm = "python"

    def comm_hook(self, _state, bucket):
        """Every bucket's reduction through a Python hook (the script's or the job's); timed on the CPU in
        the phase steps, and noted in a no-sync step (where there should be none)."""
        state, hook = self.user_hook
        if self.nosync:
            self._reduced = True
        if self.kind != "phases" or not self.active or not self.host_clock:
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
        if self.state in ("idle", "after_backward", "optimizer"):
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

    def gradient_ready(self, _param) -> None:
        """A parameter's gradient of this backward was accumulated: the last one's moment is ``ready_ms``."""
        if self.state == "backward":
            self.timer.ready()

    def backward_ended(self) -> None:
        if self.state == "backward":
            self.timer.mark("backward_ms")
            self._backward_end_ns = time.perf_counter_ns()
            self.state = "after_backward"

    def boundary(self, step: int) -> None:
        """Between two steps: the phase hooks on or off, the no-sync steps started or ended, and a stop once
        every step is done."""
        self.kind = self.kind_of(step)
        hooked = self.kind in HOOKED
        if hooked != self.hooked:
            self.hooked, self.state = hooked, "idle"
            self.hook_phases() if hooked else self.stop_timing()
        if step == self.first_of("measure") and self.plan.steps("measure"):
            self.meters.start()
        if step == self.first_of("nosync") and self.plan.steps("nosync"):
            measured = self.plan.steps("measure")
            self.meters.stop(measured, measured * self.spec.global_batch)
            self.meters.take()  # what the script's own steps took, before ddpbench's copies
            self.snapshot = (copy.deepcopy(self.ddp.module.state_dict()),
                             [copy.deepcopy(own_optimizer(o).state_dict()) for o in self.optimizers])
            self.nosync = True
        if self.started and self.timer.marks == 1:  # ddpbench's own work here (rows, memory, a snapshot): no step's
            self.timer.restart(self.timer.clock.record())
        left = self.plan.left(step)
        if (not hooked and self.learned and len(self.optimizers) == 1 and self.active and left > 0
                and self.started):
            self._fast, self._fast_steps = self.optimizers[0], left
            self._last = self.timer.last_mark()
            # where the rank is, without its step: a write per step would cost the step a system call (the
            # script's rank says the step once a second from a thread of its own: ScriptRank.pulse)
            self.at(f"script {self.kind}", -1)
        if step == self.total:
            if self.snapshot is not None:
                self.ddp.module.load_state_dict(self.snapshot[0])
                for optimizer, state in zip(self.optimizers, self.snapshot[1]):
                    own_optimizer(optimizer).load_state_dict(state)
                self.snapshot = None
            # the script's wish at a step boundary: syncing (a no_sync() of its own that saved the flag while
            # ddpbench held it off would otherwise leave it off)
            self.nosync, self.wish = False, True
            self.done = True
            self.stop_timing()
            if not self.spec.script_to_end:
                raise StopScript()

    def gpus(self) -> list:
        """The GPU the script's DDP model trains on (none on CPU), whose memory the rank records."""
        return [p.device for p in self.ddp.module.parameters()][:1] if self.spec.device == "cuda" else []

    # -- what the run showed ---------------------------------------------------------------
    def missing(self, ended: str) -> str | None:
        """Why a script that ended (``ended``: how) gave ddpbench too little, or None."""
        if self.ddp is None:
            return (f"the script {ended} without building DistributedDataParallel: ddpbench measures a script "
                    "through the DDP model it trains")
        steps = self.steps_done
        if steps == 0:
            return (f"the script {ended} without stepping an optimizer after it built DDP: ddpbench counts "
                    "steps by torch.optim.Optimizer.step")
        if steps < self.total:
            spec = self.spec
            return (f"the script {ended} after {steps} optimizer steps; the job needs {self.total} "
                    f"(warmup_steps {spec.warmup_steps} + steps {spec.steps} with the phases timed + {spec.steps} "
                    f"measured + {spec.steps} without gradient sync): lower steps, or give the script more to do "
                    "(its script_args)")
        return None

    def bucket_comm_ms(self) -> list[float] | None:
        """Each bucket's mean reduction time over the phase steps, in DDP's bucket order (None if not timed)."""
        if not self.bucket_ms:
            return None
        return [sum(times) / len(times) for _, times in sorted(self.bucket_ms.items())]
