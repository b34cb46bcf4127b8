"""A TensorFlow rank: a training job of strategy ``tf-mirrored`` or ``tf-multiworker``.

What :func:`ddpbench.rank.protocol.serve` runs for those jobs instead of PyTorch's training rank.
It trains the preset's Keras twin (:mod:`ddpbench.workloads.keras`) on the PyTorch workload's own
synthetic samples, with the same per-replica batch, optimizer and step counts:

  setup    TensorFlow's threads (``threads_per_rank`` per op; the replicas of a MirroredStrategy
           run side by side), the strategy, the model in its scope. The Keras model's parameter
           count must equal the PyTorch model's, or the job fails;
  train    one ``Model.fit`` over the warmup and measured steps, as a user's one run; a callback
           times each step from the end of the one before to its own end. Keras runs forward,
           backward, the reduction and the update as one compiled step, and fetches the batch in
           its own loop: those phases are not seen (NaN), only the step;
  check    every replica's variables are hashed: a MirroredStrategy's copies inside its one
           process, each worker's own across workers. They must be identical, or the job fails.

``MultiWorkerMirroredStrategy`` needs every worker's address before any starts: each worker takes a
free port, publishes it in the launcher's store (the one a PyTorch rank meets its process group
through), and builds ``TF_CONFIG`` from all of them. The same store carries every worker's step rows
and checksum to rank 0, which hands back the result as a PyTorch rank 0 does.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import socket
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from ddpbench.experiment.spec import spec_from_dict
from ddpbench.rank import affinity, protocol
from ddpbench.rank.energy import Meter, NoCounter, rapl_meter
from ddpbench.rank.protocol import Job, Tracked
from ddpbench.rank.record import Meters, Side, rank_record
from ddpbench.rank.train import check_replicas
from ddpbench.results.schema import TIMED_PHASES, training_result

#: what a Keras step lets a callback see: the step alone
UNSEEN = TIMED_PHASES
#: the rank's temporary files, in its launch's work folder (removed with it): AutoGraph writes each
#: function it converts to a file of the temp folder and removes it at exit, in an ``atexit`` hook that
#: a rank ended by ``os._exit`` (a fork of the server) never runs; in /tmp they would outlive the sweep
TEMP_DIR = "tmp"


class TensorFlowRank(Tracked):
    def __init__(self, job: Job, out_dir: Path | None):
        self.spec = spec_from_dict(job.spec, source="job spec")
        self.repeat, self.timeout_s, self.out_dir = job.repeat, job.timeout_s, out_dir
        self.rank = int(os.environ.get("RANK", "0"))
        self.world_size = int(os.environ.get("WORLD_SIZE", "1"))  # processes: 1 for a MirroredStrategy
        self.multiworker = self.spec.strategy == "tf-multiworker"
        self.timeline = {"process_start": protocol.PROCESS_START}
        self.store = None
        #: what the rank records (:mod:`ddpbench.rank.record`): no GPU memory, TensorFlow's GPUs are not torch's
        self.meters: Meters | None = None

    def mark(self, event: str) -> None:
        self.timeline[event] = time.time()

    # -- setup -----------------------------------------------------------------------------
    def setup(self) -> None:
        self.mark("setup_start")
        # Keras 2 (tf-keras): Keras 3's fit does not run under MultiWorkerMirroredStrategy
        # (keras-team/keras#20585); both strategies train through the same Keras
        os.environ["TF_USE_LEGACY_KERAS"] = "1"
        if self.out_dir is not None:
            temp = self.out_dir / TEMP_DIR
            temp.mkdir(exist_ok=True)
            tempfile.tempdir = str(temp)
        import tensorflow as tf

        spec = self.spec
        threads = int(spec.threads_per_rank)
        affinity.pin(spec, int(os.environ.get("LOCAL_RANK", self.rank)))  # before TensorFlow starts its threads
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        if self.multiworker:
            self.store = self._store()
            os.environ["TF_CONFIG"] = json.dumps(self._tf_config())
            tf.config.threading.set_inter_op_parallelism_threads(threads)
            implementation = (tf.distribute.experimental.CommunicationImplementation.NCCL if spec.device == "cuda"
                              else tf.distribute.experimental.CommunicationImplementation.RING)
            self.strategy = tf.distribute.MultiWorkerMirroredStrategy(
                communication_options=tf.distribute.experimental.CommunicationOptions(implementation=implementation))
            self.reduction = f"CollectiveAllReduce, {implementation.name.lower()}"
        else:
            replicas = spec.world_size
            if spec.device == "cuda":
                devices = [f"/gpu:{i}" for i in range(replicas)]
            else:
                cpus = tf.config.list_physical_devices("CPU")
                tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * replicas)
                devices = [f"/cpu:{i}" for i in range(replicas)]
            tf.config.threading.set_inter_op_parallelism_threads(threads * replicas)
            self.strategy = tf.distribute.MirroredStrategy(devices=devices)
            self.reduction = type(self.strategy.extended._cross_device_ops).__name__  # what TF chose for them
        self.tf_version = tf.__version__
        self.build()
        self.mark("setup_done")

    def _store(self):
        import torch.distributed as dist

        agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
        return dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), self.world_size,
                             is_master=not agent and self.rank == 0, timeout=timedelta(seconds=self.timeout_s),
                             multi_tenant=True)

    def _tf_config(self) -> dict:
        """Every worker's address, each worker's taken from a free port of its own and shared in the store."""
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.store.set(f"ddpbench/tf/worker{self.rank}", f"127.0.0.1:{port}")
        workers = [self.store.get(f"ddpbench/tf/worker{r}").decode() for r in range(self.world_size)]
        return {"cluster": {"worker": workers}, "task": {"type": "worker", "index": self.rank}}

    def build(self) -> None:
        """The Keras twin in the strategy's scope, compiled as the PyTorch job's optimizer; its count checked."""
        import tensorflow as tf

        from ddpbench.workloads.build import build_workload
        from ddpbench.workloads.keras import keras_inputs, keras_model
        from ddpbench.workloads.models import count_params

        spec = self.spec
        workload = build_workload(spec)
        self.torch_params = count_params(workload.model)
        tf.keras.utils.set_random_seed(spec.seed)
        with self.strategy.scope():
            self.model = keras_model(spec.model, spec.model_size)
            optimizer = (tf.keras.optimizers.Adam(learning_rate=1e-3) if spec.optimizer == "adam"
                         else tf.keras.optimizers.SGD(learning_rate=0.01, momentum=0.9))
            self.model.compile(optimizer=optimizer,
                               loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        self.params = int(self.model.count_params())
        if self.params != self.torch_params:
            raise RuntimeError(f"the Keras twin of {spec.model_label} has {self.params} parameters, the PyTorch "
                               f"model {self.torch_params}: not the same work")
        data = workload.dataset
        inputs = keras_inputs(spec.model, data.inputs.numpy())
        dataset = tf.data.Dataset.from_tensor_slices((inputs, data.labels.numpy()))
        global_batch = spec.per_rank_batch * spec.world_size  # split over the replicas (and the workers)
        dataset = dataset.shuffle(len(inputs), seed=spec.seed).batch(global_batch, drop_remainder=True).repeat()
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
        self.dataset = dataset.with_options(options)

    # -- the steps -------------------------------------------------------------------------
    def train(self) -> list[list]:
        import tensorflow as tf

        spec, rows = self.spec, []
        named = [("warmup", step) for step in range(spec.warmup_steps)] + [("measure", s) for s in range(spec.steps)]
        rank, at = self.rank, self.at
        meters = self.meters = Meters(Side(energy=self.meter))

        def measured_start() -> None:  # where the rank runs its measured steps, its switches so far, its energy
            meters.start()

        class Timer(tf.keras.callbacks.Callback):
            def on_train_begin(self, logs=None):
                if not spec.warmup_steps:
                    measured_start()
                self.last = time.perf_counter()

            def on_train_batch_end(self, batch, logs=None):
                now = time.perf_counter()
                phase, step = named[len(rows)]
                # Keras lets a callback see the step alone (UNSEEN); ready_ms neither
                rows.append([rank, phase, step, *(math.nan for _ in UNSEEN), (now - self.last) * 1e3, math.nan])
                if len(rows) == spec.warmup_steps:
                    measured_start()
                self.last = now
                at(phase, step)

        self.at("train")
        self.model.fit(self.dataset, epochs=1, steps_per_epoch=len(named), verbose=0, callbacks=[Timer()])
        meters.stop(spec.steps, spec.steps * spec.global_batch)  # the measured steps and fit's end
        self.mark("measure_done")
        return rows

    def meter(self) -> Meter:
        """The host's RAPL counter on CPU; TensorFlow's GPUs are not mapped to NVML's here."""
        if self.spec.device == "cuda":
            raise NoCounter("TensorFlow's GPUs are not mapped to NVML's devices by ddpbench; no GPU energy counter "
                            "is read for its strategies")
        return rapl_meter()

    def checksums(self) -> list[str]:
        """One hash of all variables per replica this process holds (a MirroredStrategy: each device's copy)."""
        copies: list[list] = []
        for variable in self.model.trainable_variables:
            values = getattr(variable, "values", None)  # a mirrored variable's copy on each device
            if values is None:
                inner = variable.value() if callable(variable.value) else variable.value
                values = getattr(inner, "values", (inner,))
            copies.append([v.numpy().tobytes() for v in values])
        digests = []
        for replica in range(len(copies[0])):
            digest = hashlib.sha256()
            for variable in copies:
                digest.update(variable[replica])
            digests.append(digest.hexdigest()[:16])
        return digests

    # -- hand back -------------------------------------------------------------------------
    def execute(self) -> dict | None:
        self.at("setup")
        self.setup()
        rows = self.train()
        self.at("gather")
        replicas = self.checksums()
        # its memory read here, after the replicas' hashes, as its training and the check left it
        own = {"dp_replicas": len(replicas), "framework_version": f"tensorflow {self.tf_version}",
               "reduction": self.reduction}
        mine = {"rows": rows, "rank": rank_record(self.rank, self.spec.threads_per_rank, replicas[0], self.meters, own),
                "replicas": replicas}
        gathered = self._gather(mine)
        if gathered is None:
            return None
        # every replica of every worker, named worker.replica
        check_replicas({f"{g['rank']['rank']}.{i}": c for g in gathered for i, c in enumerate(g["replicas"])})
        self.mark("gather_done")
        return training_result(self.spec.to_dict(), self.repeat, params=self.params, grad_bytes=4 * self.params,
                               steps=[row for g in gathered for row in g["rows"]], ranks=[g["rank"] for g in gathered],
                               timeline=self.timeline,
                               check={"max_abs_diff": None, "exact": None, "check_steps_run": 0,
                                      "skipped": "TensorFlow: every replica's variables were compared instead"},
                               compute={"workload": self.spec.model_label,
                                        "tensors": len(self.model.trainable_variables)})

    def _gather(self, mine: dict) -> list[dict] | None:
        """Every worker's part at rank 0 (None elsewhere), through the store; one process: its own."""
        if self.store is None:
            return [mine]
        self.store.set(f"ddpbench/tf/part{self.rank}", json.dumps(mine, allow_nan=True))
        if self.rank != 0:
            self.store.get("ddpbench/tf/done")  # stay until rank 0 has everything: TF's servers live with us
            self.store.add("ddpbench/tf/left", 1)
            return None
        parts = [json.loads(self.store.get(f"ddpbench/tf/part{r}")) for r in range(self.world_size)]
        self.store.set("ddpbench/tf/done", "1")
        deadline = time.monotonic() + 60  # rank 0 may host the store: the others read it before it goes
        while self.store.add("ddpbench/tf/left", 0) < self.world_size - 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        return parts

    def teardown(self) -> None:
        self.at("teardown")
