"""One side of the interleaved A/B: a sweep that runs a round when told to, and says when it is done.

``ddpbench ab`` (:mod:`ddpbench.sweep.ab`) starts each side as ``python -m ddpbench sweep EXPERIMENT
--out FOLDER --no-report --paced IN,OUT``, IN and OUT two pipe descriptors it hands over. The side
starts as any sweep does (its folder claimed, its environment stored), waits for its fork server's
imports, writes ``ready`` to OUT, then reads one line at a time from IN:

* ``round R SEED [KEY,KEY,...]``: run launch R (its ``repeat``) of every job, or only of the jobs whose
  keys are listed (the A/B leaves out the jobs it has decided), in the order ``random.Random(SEED)``
  shuffles them, each stored as it ends; then write ``done R`` to OUT;
* ``stop``, or the end of IN (the A/B has ended or died): run nothing more and end the sweep.

So the two sides' launches never overlap: the A/B tells one side at a time. Each side stays one
process from its first round to its last, with its fork server warm: a round costs its launches,
not a new interpreter and torch's imports (seconds). A round's launches are numbered by the round,
whatever the job's ``repeats`` says: the rounds the A/B runs are its to decide.
"""

from __future__ import annotations

import os
import random

from ddpbench.errors import InputError
from ddpbench.launch import forked
from ddpbench.launch.base import Launch
from ddpbench.sweep.plan import work_dir


def parse_descriptors(text: str) -> tuple[int, int]:
    """``--paced IN,OUT``: two open descriptors of this process."""
    parts = text.split(",")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise InputError("command line", "--paced", "takes IN,OUT: two descriptor numbers (set by `ddpbench ab`)")
    fds = (int(parts[0]), int(parts[1]))
    for fd in fds:
        try:
            os.fstat(fd)
        except OSError:
            raise InputError("command line", "--paced", f"descriptor {fd} is not open here (set by `ddpbench ab`)") \
                from None
    return fds


class PacedRounds:
    """The rounds an A/B asks of this sweep (the plan :func:`ddpbench.sweep.runner.run_launches` asks
    for each next round): :meth:`first` waits for the first round's word, :meth:`next_round` reports
    the round before it done and waits for the next one; an empty round ends the sweep."""

    def __init__(self, specs, out_dir, descriptors: tuple[int, int]):
        self.specs = list(specs)
        self.out_dir = out_dir
        self._in = os.fdopen(descriptors[0], "r", encoding="utf-8", closefd=True)
        self._out = os.fdopen(descriptors[1], "w", encoding="utf-8", closefd=True)
        self.current: int | None = None

    def __bool__(self) -> bool:
        return True

    def expected(self, pending) -> int:
        return 0  # the A/B decides how many rounds; the progress bar counts the round in hand

    def first(self) -> list[Launch]:
        """Say ``ready`` once this side can launch without importing anything more (its fork
        server warm, where its launches are forked), then wait for the first round's word."""
        if forked.needed(self.specs):
            forked.wait_until_warm()
        self._out.write("ready\n")
        self._out.flush()
        return self._wait()

    def next_round(self) -> list[Launch]:
        if self.current is not None:
            self._out.write(f"done {self.current}\n")
            self._out.flush()
        return self._wait()

    def _wait(self) -> list[Launch]:
        line = self._in.readline()
        words = line.split()
        if len(words) not in (3, 4) or words[0] != "round" or not words[1].isdigit() or not words[2].isdigit():
            self.current = None
            return []  # "stop", the end of the pipe, or anything else: no more rounds
        self.current = int(words[1])
        keys = set(words[3].split(",")) if len(words) == 4 else None
        return [Launch(spec, self.current, work_dir(self.out_dir, spec, self.current))
                for spec in self._order(int(words[2])) if keys is None or spec.key in keys]

    def _order(self, seed: int) -> list:
        """The jobs in the order ``seed`` shuffles them."""
        specs = list(self.specs)
        random.Random(seed).shuffle(specs)
        return specs

    def close(self) -> None:
        for stream in (self._in, self._out):
            try:
                stream.close()
            except OSError:
                pass
