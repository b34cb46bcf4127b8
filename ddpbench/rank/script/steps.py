"""Where a script's step ends, and what steers and checks it: the part of
:class:`ddpbench.rank.script.instrument.Instrument` every step runs through (see its module for the whole).

* the optimizers' global step hooks (pre and post, so that an optimizer stepped inside another's step,
  as ``ZeroRedundancyOptimizer`` and Accelerate's wrapper step theirs, counts as the outer one's): a
  step ends when each optimizer of the DDP model's parameters has stepped once. Which optimizers those
  are is learnt from the script's first step: those stepped before the first of them steps again (one
  optimizer, or several over parameters of their own, as Muon for the matrices and AdamW for the
  rest). Two over the same parameters in one step, or a new one later, are refused with the reason;
* a measured step (no phase hooks, one optimizer) takes the fast path: one clock read at its end,
  made a row when the steps of its kind end (:meth:`StepEnds.flush`);
* ``GradScaler.update`` after a ``GradScaler.step`` that stepped none of the model's optimizers: a
  step the scaler skipped (inf or NaN gradients), its time and samples stored apart, never a step;
* DDP's ``require_backward_grad_sync``, made ddpbench's to steer (:meth:`StepEnds.steer`), and each
  no-sync step checked to have skipped the all-reduce.
"""

from __future__ import annotations

import contextlib
import math
import weakref


class StopScript(BaseException):
    """Raised from the optimizer's step hook once ddpbench has its steps: ends the script there.
    A BaseException, so that a script's ``except Exception`` does not swallow it."""


#: a refusal of the script's shape (:attr:`BadScript.refused`) stands for every launch of its job: the same
#: job, launched again, meets the same script and the same check
JOB = "job"
#: ... and for the same script's jobs at other world sizes too: a refusal of what the script does whatever
#: the world size (a DDP switch it passes, a second DDP, its optimizers' shape, its device or backend)
WORLD_SIZES = "world_sizes"
REFUSAL_SCOPES = (JOB, WORLD_SIZES)


class BadScript(BaseException):
    """A script that breaks what ddpbench needs of it (one DDP, an optimizer that steps, enough steps).

    ``refused``: where ddpbench's own check of the script's shape refuses it, deterministically (not a
    crash, a timeout or an error the script raised, which another launch may not meet): :data:`JOB`, or
    :data:`WORLD_SIZES` where the refusal does not depend on the world size either. The sweep then runs
    none of the launches it stands for (:mod:`ddpbench.sweep.refusals`). None: the script's own failure.
    """

    refused: str | None = None

    def __init__(self, *args, refused: str | None = None):
        super().__init__(*args)
        if refused is not None:
            if refused not in REFUSAL_SCOPES:
                raise ValueError(f"refused must be one of {REFUSAL_SCOPES}, not {refused!r}")
            self.refused = refused


def refused(message: str, scope: str = WORLD_SIZES) -> BadScript:
    """A refusal of the script's shape (:class:`BadScript` with ``refused`` = ``scope``)."""
    return BadScript(message, refused=scope)


#: the step kinds whose steps carry the phase hooks (forward, backward, bucket timing); the others are timed
#: by the step boundary alone
HOOKED = ("warmup", "phases")
#: why a step's phases could not be seen, by where the step was when its optimizer stepped
WHY_UNSEEN = {"idle": "an optimizer step without a forward of the DDP model",
              "forward": "no gradient reached the DDP model's output",
              "backward": "the backward's end was not seen"}


def own_optimizer(optimizer):
    """The optimizer whose state is this rank's own: ``ZeroRedundancyOptimizer``'s local one (whose
    ``state_dict`` needs no collective, as the sharded optimizer's does), else the optimizer itself."""
    if hasattr(optimizer, "consolidate_state_dict") and hasattr(optimizer, "optim"):
        return optimizer.optim
    return optimizer


def state_bytes(optimizer) -> int:
    """The bytes of this rank's own state of an optimizer (its shard, for ZeroRedundancyOptimizer)."""
    return sum(v.numel() * v.element_size() for state in own_optimizer(optimizer).state.values()
               for v in state.values() if hasattr(v, "numel"))

class StepEnds:
    """The step-end half of :class:`~ddpbench.rank.script.instrument.Instrument` (a mixin: it holds the state)."""

    def steer(self, ddp) -> None:
        """Make DDP's ``require_backward_grad_sync`` ddpbench's to steer: the model's class becomes a subclass
        of its own whose flag reads what the script set it to (its accumulation, by the flag or by
        ``no_sync()``), and False in ddpbench's no-sync steps whatever the script set. Undone at uninstall."""
        from torch.nn.parallel import DistributedDataParallel

        base, instrument = type(ddp), self

        def get(module) -> bool:
            return instrument.wish and not instrument.nosync

        def put(module, value) -> None:
            instrument.wish = bool(value)

        @contextlib.contextmanager
        def no_sync(module):
            old, instrument.wish = instrument.wish, False
            try:
                yield
            finally:
                instrument.wish = old

        def reduce_ex(module, protocol):  # a copy or a pickle of the model is of the script's own class
            reduced = list(object.__reduce_ex__(module, protocol))
            if len(reduced) > 1 and isinstance(reduced[1], tuple) and reduced[1] and reduced[1][0] is type(module):
                reduced[1] = (base, *reduced[1][1:])
            return tuple(reduced)

        members = {"require_backward_grad_sync": property(get, put, doc="the script's wish, off in ddpbench's "
                                                                        "no-sync steps"),
                   "__module__": base.__module__, "__qualname__": base.__qualname__, "__reduce_ex__": reduce_ex}
        if base.no_sync is DistributedDataParallel.no_sync:  # DDP's own saves and restores what the getter reads
            members["no_sync"] = no_sync
        self.wish = bool(ddp.__dict__.pop("require_backward_grad_sync", True))
        ddp.__class__ = type(base.__name__, (base,), members)

        held = weakref.ref(ddp)  # undoing it must not keep the model alive past the script's teardown

        def unsteer() -> None:
            if (model := held()) is not None:
                model.__class__ = base
                model.__dict__["require_backward_grad_sync"] = instrument.wish

        self._undo.insert(0, unsteer)

    # -- the optimizers' steps: where a step ends --------------------------------------------
    def trains_ddp(self, optimizer) -> bool:
        """Whether ``optimizer`` steps parameters of the DDP model."""
        known = self._trains.get(optimizer)
        if known is None:
            known = any(id(p) in self.ddp_params for group in optimizer.param_groups for p in group["params"])
            self._trains[optimizer] = known
        return known

    def params_of(self, optimizer) -> set[int]:
        return {id(p) for group in optimizer.param_groups for p in group["params"]} & self.ddp_params

    def before_optimizer_step(self, optimizer, args, kwargs) -> None:
        self.depth += 1

    def after_optimizer_step(self, optimizer, args, kwargs) -> None:
        self.depth -= 1
        if optimizer is self._fast and not self.depth:  # a measured step's end: one clock read, nothing more
            now = self.timer.clock.record()
            self._spans.append((self._last, now))
            self._last = now
            self._stepped_since_update = True
            if self.nosync and self.synced():
                self._nosync_synced += 1
            self._reduced = False
            if len(self._spans) == self._fast_steps:
                self.flush()
            return
        self.depth = max(0, self.depth)
        if self.depth or self.done or not self.active:
            return  # an optimizer stepped inside another's step counts as the outer one
        if self.ddp is None:
            raise refused("the script stepped an optimizer before it built DistributedDataParallel: ddpbench "
                          "measures the steps of a script's DDP model")
        if not self.trains_ddp(optimizer):
            return  # it trains something else than the DDP model: not a step of it
        self._stepped_since_update = True
        if self.learned:
            if optimizer not in self.optimizers:
                self.refuse(optimizer, self.optimizers)
            if optimizer in self.stepped:
                waiting = ", ".join(type(o).__name__ for o in self.optimizers if o not in self.stepped)
                raise refused(f"the script stepped its {type(optimizer).__name__} twice in one step, before its "
                              f"{waiting}; ddpbench counts a step as each optimizer of the DDP model's parameters "
                              "(those of the script's first step) stepped once")
        elif optimizer in self.stepped:  # stepped again: the first step's optimizers are known, it ended at the last
            self.learned, self.optimizers = True, list(self.stepped)
            self.end_step(at=self._end_mark)
        elif self.stepped:
            self.refuse(optimizer, self.stepped)
        self.stepped.append(optimizer)
        self.mark_optimizer()
        if self.learned and len(self.stepped) == len(self.optimizers):
            self.end_step()
        elif not self.learned:  # the first step is open until its optimizers are known; where the rank is, as if not
            following = self.kind_of(self.counted + 1)
            self.at(f"script {following or 'end'}", self.counted + 1 - self.first_of(following) if following else -1)

    def synced(self) -> bool:
        """Whether the no-sync step just ended all-reduced all the same: a bucket the wrapper saw reduced, or
        DDP's forward having prepared the reduction (``require_forward_param_sync``, which its forward sets
        only then; not read where DDP's forward leaves it alone: its Python reducer, or every parameter's
        all-reduce delayed)."""
        ddp = self.ddp
        return self._reduced or (not getattr(ddp, "_use_python_reducer", False)
                                 and not getattr(ddp, "_delay_all_reduce_all_params", False)
                                 and ddp.require_forward_param_sync)

    def refuse(self, optimizer, known: list) -> None:
        """A further optimizer of the DDP model's parameters: refused if it shares parameters with ``known``
        (or comes after the first step); fine (returns) otherwise."""
        mine = self.params_of(optimizer)
        for other in known:
            if mine & self.params_of(other):
                raise refused(f"the script steps two optimizers over the same parameters of its DDP model in one "
                              f"step ({type(other).__name__} and {type(optimizer).__name__}); ddpbench counts a step "
                              "as each optimizer of the model stepped once, over parameters of its own")
        if self.learned:
            raise refused("the script stepped an optimizer of its DDP model's parameters "
                          f"({type(optimizer).__name__}) "
                          "that its first step did not; ddpbench counts a step as the optimizers of the first step "
                          f"({', '.join(type(o).__name__ for o in self.optimizers)}) each stepped once")

    def mark_optimizer(self) -> None:
        if not self.started:  # a step without any forward of the DDP model
            self.timer.start()
            self.started = True
        if self.hooked:
            if self.state in ("after_backward", "optimizer"):
                self.timer.mark("optimizer_ms")
            else:
                self.timer.mark("unseen")
                self._why = self._why or WHY_UNSEEN[self.state]
            self.state = "optimizer"
        else:
            self.timer.mark("step")
        self._end_mark, self._end_samples = self.timer.marks - 1, self.samples

    def end_step(self, at: int | None = None) -> None:
        """The step's last optimizer has stepped (at the timer's mark ``at``, default the last): its row, then
        the boundary."""
        step, kind = self.counted, self.kind
        row = self.timer.lap(at)
        samples = self._end_samples
        self.samples -= samples
        ready = math.nan
        if kind in HOOKED:
            seen = self._why is None
            if kind == "phases" and seen:
                ready = row.get("ready_ms", math.nan)
            known = [row.get("data_ms", 0.0),
                     *(row.get(p, 0.0) if seen else None for p in ("forward_ms", "backward_ms")),
                     0.0 if seen else None, row.get("optimizer_ms") if seen else None]
            if not seen:
                self.unseen[self._why] = self.unseen.get(self._why, 0) + 1
            self.step_samples.append(samples)
            if kind == "phases" and self._comm_done_ns > self._backward_end_ns:
                self.late_comm += 1
        else:
            known = [None] * 5
            if kind == "nosync" and self.synced():
                self.nosync_allreduced += 1
        self.rows.append([self.rank, kind, step - self.first_of(kind), *known, row["step_ms"], ready])
        self._why, self._reduced, self.stepped = None, False, []
        if self.state == "optimizer":
            self.state = "idle"
        if step == 0 and kind in HOOKED:
            self.check_batch(samples)
        self.counted += 1
        following = self.kind_of(self.counted)
        self.at(f"script {following or 'end'}", self.counted - self.first_of(following) if following else -1)
        self.boundary(self.counted)

    def flush(self) -> None:
        """The fast path's steps (the last of their kind has ended): their rows, then the boundary."""
        self.span_rows()
        self.nosync_allreduced += self._nosync_synced
        self.timer.restart(self._last)
        self._fast, self._spans, self._nosync_synced = None, [], 0
        following = self.kind_of(self.counted)
        self.at(f"script {following or 'end'}", self.counted - self.first_of(following) if following else -1)
        self.boundary(self.counted)

    def span_rows(self) -> None:
        """The fast path's steps so far made rows (and counted)."""
        clock, kind = self.timer.clock, self.kind
        clock.synchronize()
        first = self.first_of(kind)
        for start, end in self._spans:
            self.rows.append([self.rank, kind, self.counted - first, None, None, None, None, None,
                              clock.elapsed_ms(start, end), math.nan])
            self.counted += 1
        self._spans = []

    def scaler_updated(self) -> None:
        """``GradScaler.update``: a scaler's step of the model's optimizers that stepped none of them was skipped."""
        if (self._scaler_stepped and not self._stepped_since_update and self.ddp is not None and self.active
                and not self.done):
            self.skip_step()
        self._scaler_stepped = self._stepped_since_update = False

    def skip_step(self) -> None:
        """A step the GradScaler skipped: its time and samples stored apart, not a step."""
        if not self.learned and self.stepped:  # the first step's optimizers are those stepped before
            self.learned, self.optimizers = True, list(self.stepped)
            self.end_step(at=self._end_mark)
        if self._fast is not None:  # between two fast steps: the next one starts here
            clock = self.timer.clock
            now = clock.record()
            clock.synchronize()
            # its samples are not counted on a measured step (no forward hook): unknown
            self.skipped.append([self.rank, self.kind, clock.elapsed_ms(self._last, now), None])
            self._last = now
            return
        if not self.started:
            self.timer.start()
            self.started = True
        self.timer.mark("skipped")
        row = self.timer.lap()
        self.skipped.append([self.rank, self.kind, row["step_ms"], self.samples])
        self.samples, self._why, self._reduced, self.state = 0, None, False, "idle"

    def check_batch(self, samples: int) -> None:
        spec = self.spec
        expected = spec.per_rank_batch
        if samples != expected:
            fix = samples * spec.world_size if spec.scaling == "strong" else samples
            # JOB alone: a script may divide a global batch among its ranks, so another world size may agree
            raise refused(f"the script's DDP model took {samples} samples in its first optimizer step on rank "
                          f"{self.rank}, and the job counts {expected} per rank (batch_size = {spec.batch_size}, "
                          f"scaling = {spec.scaling!r}): set batch_size = {fix} so that samples/s counts what the "
                          "script trains", JOB)
