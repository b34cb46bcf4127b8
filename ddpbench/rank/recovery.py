"""Elastic fault recovery for one rank of a DDP job run by torchrun with ``--max-restarts``.

* the fault: in the first attempt, rank ``fault_rank`` stamps ``fault.json`` and SIGKILLs itself
  as measure step ``fault_step`` starts; torchrun's agents restart every worker;
* snapshots: every ``snapshot_every`` measure steps each rank saves its timing rows, then (after a
  barrier) rank 0 saves model, optimizer, the next step and the data position to ``snapshot.pt``,
  atomically; a restarted attempt loads it (``weights_only=True``) on every rank and goes on from
  there, its earlier rows restored, so each step is stored once;
* the figures (rank 0, last attempt): the time from the fault to the restarted worker's start
  (``restart_s``), to the snapshot loaded (``rejoin_s``), and to training back at the step the
  fault struck (``recovery_s``, the steps redone included); the training rank then trains a fresh
  replica through the same steps uninterrupted and compares the parameters bit for bit.

:class:`Recovery` keeps only its own state: the training rank hands it the replica and the rows
it works on, and takes back what it returns.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from ddpbench.rank.protocol import error_path, write_json_atomic


class Recovery:
    """One rank's side of fault recovery in attempt ``attempt`` (0: the first) of a launch whose
    work folder is ``out_dir``; see the module docstring."""

    def __init__(self, spec, rank: int, attempt: int, out_dir: Path):
        self.spec, self.rank, self.attempt, self.dir = spec, rank, attempt, out_dir
        self.resumed_from = None  # the measure step a restarted attempt went on from
        self.resumed_at = None
        self.back_at = None
        if self.attempt > 0:  # the failed attempt's hand-back is not this attempt's
            error_path(self.dir, rank).unlink(missing_ok=True)

    @property
    def snapshot_path(self) -> Path:
        return self.dir / "snapshot.pt"

    @property
    def rows_path(self) -> Path:
        """This rank's timing rows as of the snapshot."""
        return self.dir / f"snapshot.rows.rank{self.rank}.json"

    def resume(self, replica, device) -> tuple[int, list | None]:
        """In a restarted attempt, load the last snapshot into ``replica``: (the measure step to go on
        from, this rank's rows as of the snapshot, or None when there is none to go on from)."""
        import torch

        if self.attempt == 0:
            return 0, None
        self.resumed_from, rows = 0, None
        if self.snapshot_path.exists():
            state = torch.load(self.snapshot_path, map_location=device, weights_only=True)
            replica.module.load_state_dict(state["model"])
            replica.optimizer.load_state_dict(state["optimizer"])
            replica.loader.seek(state["epoch"], state["position"])
            self.resumed_from = int(state["step"])
            saved = json.loads(self.rows_path.read_text())
            rows = [row for row in saved if row[1] != "measure" or row[2] < self.resumed_from]
        self.resumed_at = time.time()
        return self.resumed_from, rows

    def before_step(self, step: int) -> None:
        spec = self.spec
        if self.attempt > 0 and step == spec.fault_step:
            self.back_at = time.time()
        if self.attempt == 0 and step == spec.fault_step and self.rank == spec.fault_rank:
            write_json_atomic(self.dir / "fault.json", {"time": time.time(), "step": step, "rank": self.rank})
            os.kill(os.getpid(), signal.SIGKILL)

    def after_step(self, step: int, replica, rows: list) -> None:
        """Every ``snapshot_every`` steps: this rank's ``rows``, then rank 0's ``replica`` state."""
        import torch
        import torch.distributed as dist

        spec = self.spec
        if not spec.snapshot_every or (step + 1) % spec.snapshot_every or step + 1 >= spec.steps:
            return
        write_json_atomic(self.rows_path, rows)
        dist.barrier()
        if self.rank == 0:
            tmp = self.snapshot_path.with_suffix(".tmp")
            torch.save({"model": replica.module.state_dict(), "optimizer": replica.optimizer.state_dict(),
                        "step": step + 1, "epoch": replica.loader.epoch, "position": replica.loader.position},
                       tmp)
            os.replace(tmp, self.snapshot_path)

    def figures(self, params_max_abs_diff: float, process_start: float) -> dict:
        """The recovery figures, given how far the recovered parameters are from an uninterrupted
        run's (the largest difference over ranks) and when this process started."""
        spec = self.spec
        figures = {"attempts": self.attempt + 1, "fault_step": spec.fault_step, "resumed_from_step": self.resumed_from,
                   "params_max_abs_diff": params_max_abs_diff, "params_identical": params_max_abs_diff == 0.0}
        fault = self.dir / "fault.json"
        if self.attempt > 0 and fault.exists():
            struck = json.loads(fault.read_text())
            figures.update(steps_redone=struck["step"] - self.resumed_from, restart_s=process_start - struck["time"],
                           rejoin_s=self.resumed_at - process_start,
                           recovery_s=(self.back_at or time.time()) - struck["time"])
        return figures
