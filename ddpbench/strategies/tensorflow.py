"""TensorFlow's data parallelism beside PyTorch's, on the same work: ``tf.distribute.MirroredStrategy``
(one process driving every replica: logical CPU devices on a CPU, the GPUs on a GPU machine) and
``MultiWorkerMirroredStrategy`` (one process per worker, ``TF_CONFIG`` on loopback addresses).

These strategies do not wrap a PyTorch model: a job that names one runs TensorFlow's rank
(:mod:`ddpbench.rank.tensorflow`), which trains the preset's Keras twin
(:mod:`ddpbench.workloads.keras`, the same layers and parameter count) on the same synthetic samples,
with the same per-replica batch, optimizer and steps, through ``Model.fit``. What the classes here
hold is what ddpbench asks of a strategy before anything runs: which jobs they can run, how many
processes, and the extra they need (``pip install 'ddpbench[tensorflow]'``: TensorFlow and tf-keras,
Keras 2, which the rank trains with because Keras 3's ``fit`` does not run under
MultiWorkerMirroredStrategy; about 2 GB).
"""

from __future__ import annotations

import importlib.util

from ddpbench.errors import shown
from ddpbench.strategies.base import Strategy


class TensorFlowStrategy(Strategy):
    extra = "tensorflow"
    #: the replicas' variables are compared after training (not single-process PyTorch training)
    exact = True
    #: TensorFlow's rank trains in fp32 with Keras' own loop: no autocast, no torch.compile
    precisions = ("fp32",)
    compiles = False
    cannot_accumulate = "Keras' own loop trains it"

    @classmethod
    def validate(cls, spec, source: str) -> None:
        from ddpbench.errors import InputError
        from ddpbench.workloads.keras import KERAS_MODELS

        super().validate(spec, source)
        if spec.model not in KERAS_MODELS or spec.model_args:
            raise InputError(source, "model", f"strategy {cls.name!r} trains the Keras twin of a preset: one of "
                             f"{', '.join(repr(m) for m in KERAS_MODELS)}, without model_args "
                             f"(got {shown(spec.model)})")
        for name, allowed in (("grad_accum", 1), ("trace_steps", 0), ("loader_workers", 0), ("data", "memory")):
            if getattr(spec, name) != allowed:
                raise InputError(source, name, f"must be {allowed!r} with strategy {cls.name!r} (not built for "
                                 f"TensorFlow); got {shown(getattr(spec, name))}")
        missing = [module for module in ("tensorflow", "tf_keras") if importlib.util.find_spec(module) is None]
        if missing:
            raise InputError(source, "strategy", f"{cls.name!r} needs {' and '.join(missing)}, which "
                             f"{'is' if len(missing) == 1 else 'are'} not installed: pip install "
                             f"'ddpbench[{cls.extra}]' (about 2 GB; or choose another strategy)")


class TFMirrored(TensorFlowStrategy):
    """``tf.distribute.MirroredStrategy``: one process, one replica per device."""

    name = "tf-mirrored"

    @classmethod
    def processes(cls, spec) -> int:
        return 1


class TFMultiWorker(TensorFlowStrategy):
    """``tf.distribute.MultiWorkerMirroredStrategy``: one process per worker."""

    name = "tf-multiworker"
