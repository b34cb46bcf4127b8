"""Figures a sweep measures once per machine, not once per job: the matmul peak and the collectives curve.

Two figures of a sweep do not depend on the job that measures them, only on the machine and the
conditions they are taken under: the matmul peak a rank reaches (per device, thread count and
number of ranks measuring at once: :func:`gemm_key`) and a collectives launch's curve (per backend,
world size, sizes and iterations: its spec). Measured in every job's first launch they cost the
default sweep about 2.5 s of its 35 (the peak 0.37 s in each of four jobs, the all_reduce curve 1.2 s).

:class:`MeasuredOnce` keeps them for one sweep: a figure is taken by the first launch that needs it
and handed to every later one, first from this sweep's own launches, then from the cache on disk,
where it was left by an earlier sweep on this machine. An entry of the cache holds the figure with
the conditions it was taken under (:func:`machine_conditions`: host, CPU model, GPUs, torch and
ddpbench versions, plus what its key names: device, threads, ranks) and when; it is used only when
every condition matches, and a figure so reused is always labelled so in the record and the report,
with when it was taken (never as freshly measured).

Where the cache is: ``$DDPBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/ddpbench/measured-once``, else
``~/.cache/ddpbench/measured-once`` (beside the data cache, ``~/.cache/ddpbench/data``);
``DDPBENCH_CACHE_DIR=off`` (or ``0``, or empty) keeps nothing between
sweeps (each sweep still measures each figure once). An entry older than a week
(``DDPBENCH_CACHE_MAX_AGE_DAYS``) is measured again: a peak taken while something else ran on the
machine is not kept for ever. Nor is a CPU peak a launch's ranks outran, computing more than
:data:`OUTRUN` times it a second (:func:`outran`): such a peak was likely taken while the machine was
busy (on a borrowed H200's 16 cores a job measured 0.42 TFLOP/s, then computed 1.02, and the sweep
handed the figure on to its other CPU jobs), so it is not kept, and one handed out is forgotten, by
this sweep and the cache, and measured again by the next launch that needs it. Nothing is
written anywhere else. An entry is one small JSON file, written to a new file and renamed into
place; an entry that cannot be read (cut short, not JSON, not of this shape) or is a symbolic link
counts as absent, and is measured again, never a traceback; a write never follows a link; a cache
that cannot be written (a read-only home) is left alone, the sweep going on as without one.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from ddpbench.results.checks import number

#: where the cache is (a folder), or off: "off", "0", "" keep nothing between sweeps
CACHE_ENV = "DDPBENCH_CACHE_DIR"
_OFF = ("", "0", "off", "none", "no", "false")
#: how old an entry may be, in days, before it is measured again (a figure taken while something else
#: ran on the machine is not kept for ever); ``DDPBENCH_CACHE_MAX_AGE_DAYS`` sets another
MAX_AGE_ENV = "DDPBENCH_CACHE_MAX_AGE_DAYS"
MAX_AGE_DAYS = 7.0
#: the entries' shape; an entry of another version is measured again
VERSION = 1
#: the environment block's fields an entry must match, besides its key (:func:`machine_conditions`)
CONDITION_FIELDS = ("hostname", "cpu_model", "cores_usable", "gpus", "torch_version", "torch_cuda",
                    "ddpbench_version")

#: the kinds of figure kept: a rank's matmul peak, a collectives launch's result
GEMM_PEAK = "gemm_peak"
COLLECTIVES = "collectives"


def cache_dir() -> Path | None:
    """The cache's folder, or None where it is off (see the module docstring)."""
    value = os.environ.get(CACHE_ENV)
    if value is not None:
        return None if value.strip().lower() in _OFF else Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or ""
    return (Path(base).expanduser() if base.strip() else Path.home() / ".cache") / "ddpbench" / "measured-once"


def machine_conditions(env: dict | None = None) -> dict:
    """What an entry must match besides its key: ``env``'s :data:`CONDITION_FIELDS` (a sweep's
    environment block, :func:`ddpbench.sweep.environment.collect_env`), collected here if not given."""
    if env is None:
        import ddpbench
        from ddpbench.experiment.host import fingerprint_fields

        env = {**fingerprint_fields(ddpbench.__version__), "hostname": socket.gethostname()}
    return {name: env.get(name) for name in CONDITION_FIELDS}


def gemm_key(spec, local_rank: int, ranks_at_once: int) -> dict:
    """The matmul peak's key: what it is measured on (device, threads, the CPUs the job pins, the
    dtype) and how many ranks measure it at once on this machine, which share its cores and memory."""
    return {"device": spec.device, "threads": spec.threads_per_rank, "cpu_affinity": getattr(spec, "cpu_affinity", ""),
            "dtype": "fp32", "ranks_at_once": ranks_at_once, "local_rank": local_rank}


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Reused:
    """A figure handed to a launch that did not measure it: ``figures`` as they were measured,
    ``taken_utc`` when, ``source`` "sweep" (an earlier launch of this sweep, ``measured_by``) or
    "cache" (an earlier sweep on this machine; ``path``: its entry)."""

    figures: dict
    taken_utc: str
    source: str
    measured_by: dict
    path: str | None = None

    def words(self) -> str:
        """How the figure was come by, for the record and the report."""
        when = self.taken_utc.replace("T", " ").replace("+00:00", " UTC")
        if self.source == "cache":
            return f"reused from the measure-once cache, taken {when}"
        return f"measured once by an earlier launch of this sweep, {when}"

    def label(self) -> dict:
        """What a record stores of it: ``reused`` (the source), ``taken_utc`` and who measured it."""
        return {"source": self.source, "taken_utc": self.taken_utc, "measured_by": self.measured_by,
                **({"cache_entry": self.path} if self.path else {}), "words": self.words()}

    def given(self) -> dict:
        """What a launch is handed of it: its label with the figures."""
        return {**self.label(), "figures": self.figures}


class MeasuredOnce:
    """One sweep's measure-once figures: its own, then the cache's (``directory``; default
    :func:`cache_dir`, None: no cache), each matched against ``conditions``
    (:func:`machine_conditions`)."""

    _DEFAULT = object()

    def __init__(self, conditions: dict, directory: Path | None | object = _DEFAULT):
        self.conditions = dict(conditions)
        self.directory = cache_dir() if directory is MeasuredOnce._DEFAULT else directory
        self._own: dict[str, Reused] = {}
        #: why the cache was not written, once (:attr:`notes` says it on the console)
        self._cache_notes: list[str] = []
        #: the jobs whose ranks outran their peak (:meth:`outrun_by`)
        self._outrun: list[str] = []

    def _name(self, kind: str, key: dict) -> str:
        blob = json.dumps({"kind": kind, "key": key, "hostname": self.conditions.get("hostname")},
                          sort_keys=True, separators=(",", ":"), default=str)
        return f"{kind}-{hashlib.sha1(blob.encode()).hexdigest()[:16]}.json"

    def find(self, kind: str, key: dict) -> Reused | None:
        """The figure of ``kind`` at ``key`` under this sweep's conditions: this sweep's own, else the
        cache's; None where neither holds one (or the cache's entry cannot be read, or does not match)."""
        name = self._name(kind, key)
        if name in self._own:
            return self._own[name]
        if self.directory is None:
            return None
        path = Path(self.directory) / name
        entry = _read_entry(path)
        if entry is None or entry.get("version") != VERSION or entry.get("kind") != kind:
            return None
        if _canonical(entry.get("key")) != _canonical(key) or _canonical(entry.get("conditions")) != \
                _canonical(self.conditions):
            return None
        figures, taken = entry.get("figures"), entry.get("taken_utc")
        if not isinstance(figures, dict) or not isinstance(taken, str) or _too_old(taken):
            return None
        by = entry.get("measured_by") if isinstance(entry.get("measured_by"), dict) else {}
        return Reused(figures, taken, "cache", by, str(path))

    def keep(self, kind: str, key: dict, figures: dict, measured_by: dict, taken_utc: str | None = None) -> None:
        """Note a figure a launch of this sweep measured: later launches of the sweep get it, and so
        does the cache (where there is one and it can be written)."""
        taken = taken_utc or utc_now()
        name = self._name(kind, key)
        self._own[name] = Reused(dict(figures), taken, "sweep", dict(measured_by))
        if self.directory is None:
            return
        entry = {"version": VERSION, "kind": kind, "key": key, "conditions": self.conditions, "taken_utc": taken,
                 "figures": figures, "measured_by": measured_by}
        try:
            _write_entry(Path(self.directory), name, entry)
        except (OSError, TypeError, ValueError) as err:
            note = f"the measure-once cache {self.directory} is not written: {err}"
            if note not in self._cache_notes:
                self._cache_notes.append(note)


    def outrun_by(self, job: str) -> None:
        """Say on the console that job ``job``'s ranks outran the matmul peak they measured or were handed:
        one note for the sweep, naming every such job."""
        if job not in self._outrun:
            self._outrun.append(job)

    @property
    def notes(self) -> list[str]:
        """What the console says of the sweep's measure-once figures: why the cache was not written, and
        one line naming every job whose ranks outran their peak."""
        outrun = [f"the matmul peak of {len(self._outrun)} job(s) was outrun by their ranks (more than {OUTRUN:g} "
                  "times it: likely taken while the machine was busy), so it is not kept or handed on and the next "
                  f"launch that needs it measures it again: {', '.join(self._outrun)}"] if self._outrun else []
        return self._cache_notes + outrun

    def forget(self, kind: str, key: dict) -> None:
        """Drop a figure shown to be wrong, this sweep's and the cache's entry (never a link), so that the
        next launch that needs it measures it again."""
        name = self._name(kind, key)
        self._own.pop(name, None)
        if self.directory is None:
            return
        path = Path(self.directory) / name
        try:
            if not path.is_symlink():
                path.unlink(missing_ok=True)
        except OSError:
            pass  # a cache that cannot be written: its entry stays, and is measured again once a week


def max_age_days() -> float:
    """:data:`MAX_AGE_DAYS`, or what ``DDPBENCH_CACHE_MAX_AGE_DAYS`` says (a number of days)."""
    try:
        value = float(os.environ.get(MAX_AGE_ENV, MAX_AGE_DAYS))
    except ValueError:
        return MAX_AGE_DAYS
    return value if value == value else MAX_AGE_DAYS


def _too_old(taken_utc: str) -> bool:
    """Whether an entry taken at ``taken_utc`` is older than :func:`max_age_days` (or from the
    future, or not a time: measured again)."""
    try:
        taken = _dt.datetime.fromisoformat(taken_utc)
    except ValueError:
        return True
    if taken.tzinfo is None:
        return True
    age = (_dt.datetime.now(_dt.timezone.utc) - taken).total_seconds()
    return not -60 <= age <= max_age_days() * 86400


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _read_entry(path: Path) -> dict | None:
    """An entry's JSON, or None: absent, a link, unreadable, not JSON, not an object."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(1 << 20)
        entry = json.loads(data)
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    return entry if isinstance(entry, dict) else None


def _write_entry(directory: Path, name: str, entry: dict) -> None:
    """Write ``entry`` as ``directory/name``, a new file renamed over the old entry, never through a
    link (:func:`ddpbench.files.sidefiles.replace_file`); an entry that is a link is left alone."""
    from ddpbench.files.sidefiles import replace_file

    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    target = directory / name
    if target.is_symlink():
        raise OSError(f"{target} is a symbolic link; not written through")
    replace_file(target, json.dumps(entry, indent=1, sort_keys=True, allow_nan=False), mode=0o600)


#: the launchers whose ranks all run on this machine, started by this sweep: where a figure of this
#: machine is the ranks' figure (a multi-node launch's ranks measure their own)
LOCAL_LAUNCHERS = ("spawn", "torchrun")


def _local(spec, launcher) -> bool:
    return launcher.name in LOCAL_LAUNCHERS and getattr(launcher, "nnodes", 1) == 1 and not getattr(spec, "script", "")


def _measures_peak(spec, repeat: int) -> bool:
    """Whether a launch measures the matmul peak: a training job's first launch (or every one, if it
    asks for its checks in every repeat), as :class:`ddpbench.rank.train.TrainingRank` does."""
    return spec.kind == "run" and (repeat == 0 or bool(spec.check_every_repeat))


def gemm_given(once: MeasuredOnce, spec, repeat: int, launcher) -> dict | None:
    """The matmul peak to hand a launch, {local rank: :meth:`Reused.given`}, where every one of its
    ranks has one and the launch would measure it; else None (it measures). A job that asks for what
    does not change between launches in every launch (``check_every_repeat``) measures it in each."""
    if not _measures_peak(spec, repeat) or not _local(spec, launcher) or spec.check_every_repeat:
        return None
    found = {}
    for local in range(spec.processes):
        reused = once.find(GEMM_PEAK, gemm_key(spec, local, spec.processes))
        if reused is None:
            return None
        found[str(local)] = reused.given()
    return found


#: how many times its peak a rank must compute a second for the peak to be taken as wrong: the ranks'
#: 1024x1024 products read 18 % below 4096x4096 ones on 16 threads (benchmarks/measured.md), which a job of
#: large products can outrun by that much; a peak taken while the machine was busy is lower still
OUTRUN = 1.5


def outran(spec, result: dict) -> bool:
    """Whether a rank of a finished fp32 CPU launch computed more than :data:`OUTRUN` times the matmul
    peak it records a second: the FLOPs a process computes a step over the rank's own mean measured step
    (waits and communication included, so less than its compute rate) against its ``gemm_peak_flops``.
    Not judged (False): a GPU launch (its peak is steady, and cuDNN's TF32 or a process driving several
    GPUs would outrun an fp32 product of one) or another precision than fp32, whose products the fp32
    peak does not measure; a result whose figures are not numbers."""
    if getattr(spec, "device", "cpu") != "cpu" or getattr(spec, "precision", "fp32") != "fp32":
        return False
    flops = (result.get("compute") or {}).get("flops_per_step") if isinstance(result.get("compute"), dict) else None
    columns = result.get("step_columns")
    if not _number(flops) or not flops > 0 or not isinstance(columns, list) \
            or not {"rank", "phase", "step_ms"} <= set(columns):
        return False
    rank, kind, step_ms = (columns.index(name) for name in ("rank", "phase", "step_ms"))  # kind: the step kind
    times: dict = {}
    for row in result.get("steps") or []:
        if isinstance(row, list) and len(row) == len(columns) and row[kind] == "measure" \
                and isinstance(row[rank], int) and _number(row[step_ms]):
            times.setdefault(row[rank], []).append(row[step_ms])
    peaks = {r.get("rank"): r.get("gemm_peak_flops") for r in result.get("ranks") or [] if isinstance(r, dict)}
    for r, steps in times.items():
        peak, mean_s = peaks.get(r), sum(steps) / len(steps) / 1e3
        if _number(peak) and peak > 0 and mean_s > 0 and flops / mean_s > OUTRUN * peak:
            return True
    return False


def _number(value) -> bool:
    return number(value) and math.isfinite(value)


def learn_gemm(once: MeasuredOnce, spec, repeat: int, launcher, result: dict | None, measured_by: dict) -> None:
    """Keep the peak each rank of a finished launch measured (not one it was handed), unless a rank
    outran it (:func:`outran`); a handed peak a rank outran is forgotten (:meth:`MeasuredOnce.forget`).
    Either is said on the console (:meth:`MeasuredOnce.outrun_by`)."""
    compute = (result or {}).get("compute") or {}
    if not _measures_peak(spec, repeat) or not _local(spec, launcher) or not isinstance(compute, dict):
        return
    if compute.get("peak_source") in ("sweep", "cache") and outran(spec, result):
        for local in range(spec.processes):
            once.forget(GEMM_PEAK, gemm_key(spec, local, spec.processes))
        once.outrun_by(spec.key)
        return
    if compute.get("peak_source") != "measured":
        return
    if outran(spec, result):
        once.outrun_by(spec.key)
        return
    method = compute.get("peak_method")
    peaks = {r.get("rank"): r.get("gemm_peak_flops") for r in result.get("ranks") or [] if isinstance(r, dict)}
    if not isinstance(method, str) or sorted(p for p in peaks if isinstance(p, int)) != list(range(spec.processes)):
        return
    if not all(isinstance(v, (int, float)) and v > 0 for v in peaks.values()):
        return
    for local, peak in peaks.items():  # one machine: rank = local rank
        once.keep(GEMM_PEAK, gemm_key(spec, local, spec.processes),
                  {"peak_flops": float(peak), "peak_method": method, "gemm_threads": int(spec.threads_per_rank)},
                  measured_by)
