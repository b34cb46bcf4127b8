"""Watched runs made up with known faults: DDP-shaped steps (every rank waits for the slowest at the all-reduce)
fed to the alarms as a watch receives them, and written as a watched run's folder."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ddpbench.rank.script.plan import Cycle
from ddpbench.watch.alarms import AlarmFile, Alarms
from ddpbench.watch.stream import STREAM_COLUMNS, STREAM_FILE, lines

STEPS, SAMPLE = 1500, 10


def ddp_run(seed, world=2, slow_rank=None, slow_phase=None, onset=700, factor=1.25, noise_sd=0.08,
            until=None, busy=()):
    """Rows as watched ranks measure them: each rank's data, forward and backward compute, then the all-reduce
    that ends once the last rank's gradients are ready, every step's phases and its wait for a CPU (a few
    tenths of a ms; :func:`feed` sends those of the phase steps only). A straggler's compute, or one phase of
    every rank, is ``factor`` times as long from ``onset`` (to ``until``, where given); ``slow_phase`` a dict
    gives each phase its own factor. The ranks in ``busy`` share their cores with other work from ``onset``:
    their compute is ``factor`` times as long, all of it added as time waiting for a CPU."""
    rng = np.random.default_rng(seed)
    slowed = slow_phase if isinstance(slow_phase, dict) else {
        phase: factor for phase in ((slow_phase,) if isinstance(slow_phase, str) else slow_phase or ())}
    rows = {r: [] for r in range(world)}
    end = 0.0
    for step in range(STEPS):
        noise = lambda scale: scale * rng.lognormal(0.0, noise_sd)  # noqa: E731
        parts = {r: {"data_ms": noise(1.0), "forward_ms": noise(4.0), "compute_bwd": noise(8.0),
                     "optimizer_ms": noise(1.5), "queued_ms": noise(0.3)} for r in range(world)}
        for r, p in parts.items():
            slow = onset <= step < (STEPS if until is None else until)
            if slow and (slow_rank == r or r in busy):
                waited = (factor - 1) * (p["forward_ms"] + p["compute_bwd"])
                p["forward_ms"] *= factor
                p["compute_bwd"] *= factor
                p["queued_ms"] += waited if r in busy else 0.0
            for phase, times in slowed.items():
                if slow:
                    p[phase] *= times
        ready = {r: p["data_ms"] + p["forward_ms"] + p["compute_bwd"] for r, p in parts.items()}
        reduced = max(ready.values()) + noise(2.0)  # every rank's backward waits for the all-reduce
        for r, p in parts.items():
            backward = reduced - p["data_ms"] - p["forward_ms"]
            step_ms = reduced + p["optimizer_ms"]
            rows[r].append((step, end + step_ms / 1e3, step_ms, p["data_ms"], p["forward_ms"], backward,
                            p["optimizer_ms"], ready[r], p["queued_ms"]))
        end += reduced / 1e3
    return rows


def feed(rows, world=2, batch=25, dense=True, alarms=None, sent=None):
    """The rows fed as a watch receives them, in batches, rank by rank: a phase step's phases, NaN on the others,
    by each rank's plan (every tenth step, and the dense steps the alarms ask for once they are sent; none with
    ``dense=False``); each rank's rows as fed appended to ``sent[rank]`` where given. The alarms raised, those
    of the run's end too."""
    alarms = alarms or Alarms(world_size=world)
    plans = {r: Cycle(every=SAMPLE) for r in range(world)}
    for start in range(0, STEPS, batch):
        for r in range(world):
            batch_rows = [row if plans[r].kind_of(row[0]) == "phases" else (*row[:3], *(math.nan,) * (len(row) - 3))
                          for row in rows[r][start:start + batch]]
            alarms.feed(r, batch_rows)
            if sent is not None:
                sent.setdefault(r, []).extend(batch_rows)
            while dense and alarms.asked:
                asked = alarms.asked.pop(0)["dense"]
                for plan in plans.values():
                    plan.dense(asked["from_step"], asked["from_step"] + asked["steps"] - 1)
    alarms.finish()
    return alarms.raised


def watched_folder(folder: Path, rows, world: int = 2) -> list:
    """A watched run's folder (as ``ddpbench watch --out`` leaves it, its claim too) of ``rows``
    (:func:`ddp_run`) as the alarms received them; the alarms they raised."""
    from ddpbench.files.writing import holding
    from ddpbench.watch.run import watch_claim

    sent: dict[int, list] = {}
    with holding(folder, watch_claim()):
        raised = feed(rows, world, sent=sent)
        written = AlarmFile(folder)
        for alarm in raised:
            written.write((*alarm.row(), ""))
        written.close()
        (folder / STREAM_FILE).write_text(",".join(STREAM_COLUMNS) + "\n" + "".join(
            lines(r, "vm", sent[r], 0.0) for r in range(world)))
    return raised
