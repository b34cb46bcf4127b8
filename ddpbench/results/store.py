"""The results store: one append-only JSON-lines file per output folder (``results.jsonl``).

A record (:mod:`ddpbench.results.schema`) is written as one line with one ``write`` and fsync'd
before the next launch starts, so a sweep killed at any point loses only the launch in flight; a
full disk leaves the file as it was; a line cut mid-write is reported (:class:`DamagedRecord`)
and skipped when the file is read. Nothing is ever pickled.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

from ddpbench.results.schema import RESULTS_FILE, SCHEMA_VERSION, SEARCH_FILE, TRACE_DIR, check_record, sweep_record


class DamagedRecord(UserWarning):
    """A line of results.jsonl that could not be read (e.g. cut by a crash mid-write)."""


class ResultStore:
    def __init__(self, out_dir: str | Path):
        self.dir = Path(out_dir)
        self.path = self.dir / RESULTS_FILE

    def exists(self) -> bool:
        return self.path.exists() and self.path.stat().st_size > 0

    def append(self, record: dict) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"schema_version": SCHEMA_VERSION, **record}, allow_nan=True) + "\n"
        data = line.encode()
        # never through a link: a results.jsonl that links elsewhere is refused (ELOOP), not appended to
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            size = os.lseek(fd, 0, os.SEEK_END)
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data  # start on a fresh line if an earlier writer died mid-line
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            except OSError:
                # a full disk: leave the file as it was, never with half a record at its end
                os.ftruncate(fd, size)
                raise
        finally:
            os.close(fd)

    def start_sweep(self, env: dict, experiment: dict) -> str:
        """Append a sweep record (:func:`~ddpbench.results.schema.sweep_record`); its new sweep id."""
        sweep_id = uuid.uuid4().hex[:12]
        self.append(sweep_record(sweep_id, env, experiment))
        return sweep_id

    def records(self) -> Iterator[dict]:
        """Every readable record, in order; damaged lines are reported as warnings and skipped."""
        for _, record in self.numbered():
            yield record

    def numbered(self) -> Iterator[tuple[int, dict]]:
        """(line number, record) of every readable record, in order (see :meth:`records`). What was
        damaged is said once the lines read are done, one warning for all of them (:func:`said_lines`):
        20 KB of random bytes is one line on stderr, not one a line."""
        if not self.path.exists():
            return
        skipped: list[tuple[int, str]] = []  # (line, why) of each line that is no record
        newer: list[tuple[int, str]] = []  # (line, its schema) of each record of a newer ddpbench
        try:
            with open(self.path, "rb") as fh:
                for number, raw in enumerate(fh, start=1):
                    if not raw.strip():
                        continue
                    try:
                        record = json.loads(raw.rstrip(b"\r\n"))  # the same message, with or without the newline
                        check_record(record)
                    except RecursionError:  # JSON nested deeper than the parser's recursion allows
                        skipped.append((number, "JSON nested too deeply"))
                        continue
                    except ValueError as err:
                        skipped.append((number, str(err)))
                        continue
                    if record.get("schema_version", 0) > SCHEMA_VERSION:
                        newer.append((number, f"schema {record['schema_version']}"))
                    yield number, record
        finally:
            if skipped:
                warnings.warn(said_lines(self.path, skipped, "damaged records skipped", "damaged record skipped ({})"),
                              DamagedRecord, stacklevel=2)
            if newer:
                warnings.warn(said_lines(self.path, newer, "records written by a newer ddpbench, read as far as "
                                         "this version knows", "written by a newer ddpbench ({}); reading what this "
                                         "version knows"), DamagedRecord, stacklevel=2)

    def done(self, retry_failed: bool = False) -> set[tuple[str, int]]:
        """(spec key, repeat) of every recorded launch: training launches whatever their status
        (a failure is a result), collectives only when they finished (a rerun replaces them).
        ``retry_failed``: a training launch whose latest record failed or timed out is not done, nor
        one skipped for a refusal of its script (its ``refusal`` names the refused launch, run again)."""
        latest: dict[tuple[str, int], tuple[str, bool]] = {}
        for r in self.records():
            if r["kind"] == "run" or (r["kind"] == "collective" and r["status"] == "ok"):
                refusal = r.get("refusal")
                for_refusal = isinstance(refusal, dict) and bool(refusal.get("launch"))
                latest[(r["key"], r["repeat"])] = (r["status"], for_refusal)
        return {launch for launch, (status, for_refusal) in latest.items()
                if not (retry_failed and (status in ("failed", "timed_out") or (status == "skipped" and for_refusal)))}


#: the most line numbers a warning about many lines lists
LISTED_LINES = 5


def said_lines(path: Path, lines: list[tuple[int, str]], many: str, one: str = "{}") -> str:
    """One line for every (line number, why) of ``path`` that was left out: ``path:N: ONE`` (``one``
    with the why in it) for one, ``path: COUNT MANY (lines 3, 5, 9, 12, 20 and 67 more; line 3: why)``
    for more."""
    if len(lines) == 1:
        return f"{path}:{lines[0][0]}: {one.format(lines[0][1])}"
    numbers = list(dict.fromkeys(number for number, _ in lines))  # a line with two damaged values: once
    more = f" and {len(numbers) - LISTED_LINES} more" if len(numbers) > LISTED_LINES else ""
    return (f"{path}: {len(lines)} {many} (line{'s' if len(numbers) > 1 else ''} "
            f"{', '.join(map(str, numbers[:LISTED_LINES]))}{more}; line {lines[0][0]}: {lines[0][1]})")


def rotate_previous(store: ResultStore) -> Path | None:
    """Keep an earlier sweep's results under a dated name instead of mixing or losing them.

    Collective micro-benchmarks in the folder stay in the new file (with their sweep records):
    they describe the machine, not the earlier sweep, and the report sets DDP against them.
    """
    if not store.exists():
        return None
    carried = collective_records(store)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1000):
        target = store.dir / (f"results.{stamp}.jsonl" if n == 0 else f"results.{stamp}-{n}.jsonl")
        try:
            os.link(store.path, target)  # fails if the name is taken: never overwrites
        except FileExistsError:
            continue
        store.path.unlink()
        for record in carried:
            store.append(record)
        race = store.dir / SEARCH_FILE  # a tune's race belongs to the results it raced with
        if race.exists():
            race.replace(target.with_name(target.name.replace("results.", "search.", 1).replace(".jsonl", ".json")))
        traces = store.dir / TRACE_DIR  # named by job and repeat: the next sweep's would replace them
        if traces.exists():
            traces.replace(target.with_name(target.name.replace("results.", f"{TRACE_DIR}.", 1).replace(".jsonl", "")))
        return target
    raise RuntimeError(f"{store.dir}: cannot find a free name to keep the earlier results")


def collective_records(store: ResultStore) -> list[dict]:
    """The collectives records of a store and the sweep records they belong to, in file order."""
    records = list(store.records())
    sweeps = {r.get("sweep_id") for r in records if r["kind"] == "collective"}
    return [r for r in records if r["kind"] == "collective" or (r["kind"] == "sweep" and r["sweep_id"] in sweeps)]
