"""Export a results folder's training jobs as a pytest-benchmark JSON file.

    python -m ddpbench export-benchmark DIR --out FILE.json
    pytest-benchmark compare FILE.json OTHER.json

The file has the shape of a run saved by ``pytest --benchmark-json`` (pytest-benchmark 4/5):
``machine_info``, ``commit_info``, ``benchmarks``, ``datetime`` and ``version``, so that
pytest-benchmark's own loader and its ``compare`` command read it. The mapping:

* one benchmark per training job (spec key) that finished ok in every launch; failed, timed-out
  and skipped jobs are left out and named on stderr;
* ``name``: the job's name from its own settings alone
  (:func:`ddpbench.analysis.core.jobs.own_label`: model-size, strategy, world size, threads per rank and
  every setting that differs from its default), so the same job has the same name whatever else
  its folder holds and pytest-benchmark matches it across files;
  ``fullname``: ``ddpbench::<experiment>::<name>`` (the job key is appended only where two names
  would clash: jobs that differ only in how long they were measured); ``group``: ``<model>-<size>``
  (a script job's: its script and arguments, ``train_cnn.py --epochs 4``), so pytest-benchmark's
  table sets the world sizes and bucket sizes of one workload side by side;
  ``params``: the settings the name gives, ``param`` their values joined by ``-`` like a pytest id;
* ``stats``: pytest-benchmark's own :class:`pytest_benchmark.stats.Stats` fed every measured step
  of every launch, in seconds, each step bounded by its slowest rank (the maximum over ranks of
  ``step_ms``, :func:`ddpbench.analysis.summary.table.bounded_steps`, the step time the report and ``compare``
  use); ``iterations`` is 1 (a round is one training step) and ``data`` holds the step times, so
  ``ops`` is steps per second (1 / mean) and ``rounds`` is steps per launch times launches;
* ``options``: how ddpbench measured: the worker's clock (``time.perf_counter_ns`` on the host,
  CUDA events on a GPU), garbage collection left on, ``min_rounds`` the planned steps,
  ``warmup`` the untimed warmup steps per launch;
* ``extra_info``: the full spec, the job key, launches and steps per launch, per-launch median
  and mean step time (ms), ddpbench's own summary figures (samples/s, speedup, efficiency, Karp-Flatt
  serial fraction, with their t intervals over launches where known), the loss budget and the rank
  everyone waited for (``budget_baseline_ms``, ``loss_*_ms`` with their intervals, ``budget_top``,
  ``budget_note``, ``barrier_*``: :data:`ddpbench.show.budget.BUDGET_COLUMNS`; None where the
  summary has none), world size,
  ``oversubscribed``, and ``source``;
* ``machine_info`` and ``commit_info``: from the sweep's environment record (hostname, CPU model,
  python, platform, git commit and dirty flag); the whole record is under
  ``machine_info["ddpbench_env"]``, and its fingerprint under ``machine_info["ddpbench"]``, as
  ddpbench's pytest plugin writes it (so a history files the export under the sweep's machine).
  What the record does not hold (python implementation and compiler, git branch and commit time)
  is None. ``datetime`` is the sweep's start (UTC).

What does not carry over faithfully:

* pytest-benchmark treats every round as an independent sample. ddpbench's unit of independence
  is the launch: steps inside one launch share a process, its memory layout, its core placement
  and the machine's state at the time, so they are correlated. pytest-benchmark's stddev, IQR and
  outlier counts therefore describe the spread of steps, not the uncertainty of the job's time,
  and its statistics have no interval over launches. ddpbench's intervals (``*_low``/``*_high`` in
  ``extra_info``) and ``ddpbench compare`` resample launches.
* pytest-benchmark's quartiles (its own method) can differ slightly from the IQR the ddpbench
  report prints (numpy's linear interpolation); ``extra_info["step_ms_iqr"]`` is ddpbench's.
* pytest-benchmark's ``compare`` command only displays. Its ``--benchmark-compare-fail`` gate
  works only inside a pytest run, against that run's own benchmarks, so it cannot gate two exported
  files. Gate two sweeps with ``python -m ddpbench compare A B --fail-on median:10%``, which takes
  the same syntax (``median:10%``, or a bare number of seconds: ``median:0.002``) and fails only
  when the slowdown is past the threshold beyond noise over launches.
* Collective micro-benchmarks (``ddpbench collectives``) store only the median, p10 and p90 time
  per size, not per-iteration times; they are not exported (one line on stderr says how many rows).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from pathlib import Path
from typing import Any

from ddpbench.analysis.core import SPEC_COLUMNS, STEP_MS, model_name, own_fields, own_label
from ddpbench.analysis.folder import load_given
from ddpbench.analysis.history import ENV_FIELDS
from ddpbench.analysis.summary import bounded_steps, launch_times
from ddpbench.errors import InputError
from ddpbench.experiment.host import fingerprint
from ddpbench.files.sidefiles import replace_file
from ddpbench.results.benchmark_json import PLUGIN_KEY
from ddpbench.results.schema import RESULTS_FILE
from ddpbench.show.budget import BUDGET_COLUMNS
from ddpbench.show.tables import exported

#: the platform tokens that name a machine architecture in ``platform.platform()``
_ARCHES = ("x86_64", "amd64", "aarch64", "arm64", "armv7l", "i386", "i686", "ppc64le", "ppc64", "s390x", "riscv64")


def plain(value: Any) -> Any:
    """A value as JSON holds it: numpy scalars as Python numbers, NaN / NA as None, containers recursed."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return plain(value.tolist())  # numpy scalar or array
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    try:
        import pandas as pd

        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return str(value)


# ---------------------------------------------------------------------------------------------
# input checks
# ---------------------------------------------------------------------------------------------

def check_out(out: str | Path, overwrite: bool = False) -> Path:
    """``--out`` must be a file path in an existing folder, and a new file unless ``overwrite``;
    InputError naming --out otherwise."""
    out = Path(out)
    parent = out.parent
    if (out.exists() or out.is_symlink()) and not out.is_dir() and not overwrite:
        raise InputError("command line", "--out", f"{out} exists; give --force to replace it, or another path")
    if out.is_dir():
        raise InputError("command line", "--out", f"{out} is a folder; give a file path such as {out / 'bench.json'}")
    if not parent.exists():
        raise InputError("command line", "--out", f"folder {parent} does not exist; create it or give another path")
    if not parent.is_dir():
        raise InputError("command line", "--out", f"{parent} is not a folder; give a path in an existing folder")
    return out


# ---------------------------------------------------------------------------------------------
# the document
# ---------------------------------------------------------------------------------------------

def _env_records(sweeps) -> dict[str, dict]:
    """sweep_id -> (environment dict, experiment name) of every sweep record, NaN-free."""
    out = {}
    if sweeps is None or sweeps.empty:
        return out
    env_columns = [c for c in sweeps.columns if c != "sweep_id" and not c.startswith("experiment")]
    for _, row in sweeps.iterrows():
        env = {c: plain(row[c]) for c in env_columns}
        out[str(row["sweep_id"])] = {"env": env, "experiment": plain(row.get("experiment"))}
    return out


def _split_platform(text: str | None) -> tuple[str | None, str | None, str | None]:
    """(system, release, machine) from ``platform.platform()``'s ``System-release-machine-...``."""
    if not text:
        return None, None, None
    parts = str(text).split("-")
    for index, part in enumerate(parts[1:], start=1):
        if part.lower() in _ARCHES:
            return parts[0], "-".join(parts[1:index]) or None, part
    return parts[0], None, None


def machine_info(env: dict) -> dict:
    """pytest-benchmark's machine_info from a ddpbench environment record; unknown fields None."""
    system, release, machine = _split_platform(env.get("platform"))
    return {
        "node": env.get("hostname"),
        "processor": env.get("cpu_model"),
        "machine": machine,
        "python_compiler": None,
        "python_implementation": None,
        "python_implementation_version": None,
        "python_version": env.get("python"),
        "python_build": None,
        "release": release,
        "system": system,
        "cpu": {"brand_raw": env.get("cpu_model"), "count": env.get("cores_logical"), "arch": machine},
        "ddpbench_env": env,
        # the machine's fingerprint where ddpbench's pytest plugin puts it: an exported sweep files into
        # a history under the same machine as the sweep itself (ddpbench.results.history)
        PLUGIN_KEY: fingerprint(env),
    }


def commit_info(env: dict) -> dict:
    """pytest-benchmark's commit_info from the git state ddpbench stored (of its own checkout)."""
    commit = env.get("git_commit")
    return {"id": commit or "unknown", "time": None, "author_time": None, "dirty": env.get("git_dirty"),
            "project": "ddpbench", "branch": None}


def _iso_utc(text: Any) -> str | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        stamp = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=_dt.timezone.utc)
    return stamp.astimezone(_dt.timezone.utc).isoformat()


def _timer(device: str) -> str:
    clock = "CUDA events (torch.cuda.Event)" if str(device).startswith("cuda") else "time.perf_counter_ns"
    return f"ddpbench worker: {clock}, slowest rank per step"


def benchmark_document(folder: str | Path) -> tuple[dict, list[str]]:
    """(the pytest-benchmark JSON document, lines for stderr) of a results folder.

    InputError when the folder holds no finished training job. The stderr lines name every job left
    out and why, and the collective rows that cannot be exported.
    """
    import pandas as pd
    import pytest_benchmark
    from pytest_benchmark.stats import Stats

    measured = load_given(folder)
    folder, steps, runs, sweeps, collectives = (measured.results_dir, measured.steps, measured.runs,
                                                measured.sweeps, measured.collectives)
    notes = []
    if len(collectives) and "op" in collectives:
        rows = collectives[collectives["op"].notna()]
        notes.append(f"{len(rows)} collective rows ({collectives['key'].nunique()} launch(es)) not exported: the "
                     "collective micro-benchmarks store only the median, p10 and p90 time per size, not "
                     "per-iteration times, so pytest-benchmark's statistics cannot be computed from them")
    summary = measured.summary
    labels = {r["key"]: own_label(r) for _, r in summary.iterrows()}

    for _, r in summary[summary["status"] != "ok"].iterrows():
        error = str(r["error"]).replace("\n", " ") if r["error"] is not None else "no error recorded"
        notes.append(f"not exported: {labels[r['key']]} [{r['key']}]: {r['status']} ({error})")
    ok = summary[summary["status"] == "ok"]
    if ok.empty:
        raise InputError(str(folder), None, f"no finished training job to export ({len(summary)} job(s), none ok)")

    bounded = bounded_steps(steps).sort_values(["key", "repeat", "step"])
    per_job = dict(tuple(bounded.groupby("key", sort=False)))
    sweep_of = runs.groupby("key")["sweep_id"].agg(lambda s: [str(v) for v in dict.fromkeys(s.dropna())]) \
        if "sweep_id" in runs else pd.Series(dtype=object)
    envs = _env_records(sweeps)
    experiments = {k: v["experiment"] for k, v in envs.items() if v["experiment"]}

    benchmarks, used_sweeps = [], []
    for _, r in ok.iterrows():
        key = r["key"]
        mine = per_job.get(key)
        if mine is None or mine.empty:
            notes.append(f"not exported: {labels[key]} [{key}]: no measured steps stored")
            continue
        times_ms = mine["step_ms"].astype(float)
        finite = times_ms[times_ms.map(math.isfinite)]
        if len(finite) < len(times_ms):
            notes.append(f"{labels[key]} [{key}]: {len(times_ms) - len(finite)} step time(s) not finite, left out")
        stats = Stats()
        for ms in finite:
            stats.update(float(ms) / 1e3)
        if not stats:
            notes.append(f"not exported: {labels[key]} [{key}]: no finite step time")
            continue
        job_sweeps = list(sweep_of.get(key, []))
        used_sweeps += job_sweeps
        experiment = next((experiments[s] for s in job_sweeps if s in experiments), None) or folder.name
        launches = mine.groupby("repeat")["step_ms"]
        per_launch_steps = [int(n) for n in launches.size()]
        spec = {c: plain(r[c]) for c in SPEC_COLUMNS}
        params = {f: plain(r[f]) for f in own_fields(r)}
        extra = {
            "source": f"ddpbench sweep {folder}",
            "key": key,
            "experiment": experiment,
            "spec": spec,
            "world_size": plain(r["world_size"]),
            "launches": plain(r["repeats_ok"]),
            "steps_per_launch": per_launch_steps[0] if len(set(per_launch_steps)) == 1 else per_launch_steps,
            "launch_median_step_ms": [float(v) for v in launches.median()],
            "launch_mean_step_ms": launch_times(r),
            "step_ms_median": plain(r["step_ms_median"]),
            STEP_MS: plain(r[STEP_MS]),
            "step_ms_iqr": plain(r["step_ms_iqr"]),
            "per_rank_batch": plain(r["per_rank_batch"]),
            "global_batch": plain(r["global_batch"]),
            "model_params": plain(r["params"]),
            # ddpbench's own figures of scaling, and those below: as the report's tables declare them
            **{c: plain(r.get(c)) for c in exported("scaling")},
            # the loss budget and the rank everyone waited for (None where the summary has no budget)
            **{c: plain(r.get(c)) for c in BUDGET_COLUMNS},
            # what a sample costs at the stored price (None without one) and the energy it took (None
            # without a counter: energy_note says why)
            **{c: plain(r.get(c)) for c in exported("cost")},
            "oversubscribed": bool(r["oversubscribed"]),
            "noisy": bool(r["noisy"]),
            "sweep_ids": job_sweeps,
            "rounds_note": "rounds are training steps of separate launches; steps inside a launch are correlated, "
                           "the launch is the independent sample (see the *_low/*_high intervals)",
        }
        stat_dict = {**stats.as_dict(), "data": list(stats.data), "iterations": 1}
        benchmarks.append({
            "group": model_name(r),
            "name": labels[key],
            "fullname": f"ddpbench::{experiment}::{labels[key]}",
            "params": params,
            "param": "-".join(f"{v:g}" if isinstance(v, float) else str(v) for v in params.values()) if params
            else None,
            "extra_info": extra,
            "options": {"timer": _timer(r["device"]), "disable_gc": False,
                        "min_rounds": plain(r["steps"] * r["repeats_ok"]), "max_time": None, "min_time": None,
                        "warmup": plain(r["warmup_steps"])},
            "stats": stat_dict,
        })
    if not benchmarks:
        raise InputError(str(folder), None, "no finished training job with measured steps to export")
    _make_unique(benchmarks)

    # the environment: the latest sweep that measured an exported launch (file order)
    used = [s for s in envs if s in set(used_sweeps)] or [s for s in envs if not _is_collectives(sweeps, s)]
    primary = envs[used[-1]]["env"] if used else {}
    if len(used) > 1:
        differ = [label for label, column in ENV_FIELDS
                  if len({json.dumps(envs[s]["env"].get(column), sort_keys=True) for s in used}) > 1]
        if differ:
            notes.append(f"warning: the exported launches come from {len(used)} sweeps whose environments differ in "
                         f"{', '.join(differ)}; machine_info describes the latest (sweep {used[-1]})")
    info = machine_info(primary)
    if len(used) > 1:
        info["ddpbench_sweeps"] = [{"sweep_id": s, **{k: envs[s]["env"].get(k) for k in
                                                      ("utc", "hostname", "cpu_model", "git_commit", "git_dirty")}}
                                   for s in used]
    document = {
        "machine_info": info,
        "commit_info": commit_info(primary),
        "benchmarks": benchmarks,
        "datetime": _iso_utc(primary.get("utc")),
        "version": pytest_benchmark.__version__,
    }
    return document, notes


def _is_collectives(sweeps, sweep_id: str) -> bool:
    if "experiment_kind" not in sweeps:
        return False
    kinds = sweeps.loc[sweeps["sweep_id"] == sweep_id, "experiment_kind"]
    return bool(len(kinds)) and kinds.iloc[0] == "collectives"


def _make_unique(benchmarks: list[dict]) -> None:
    """Append the job key to names and fullnames that two jobs would share."""
    from collections import Counter

    counts = Counter(b["fullname"] for b in benchmarks)
    for b in benchmarks:
        if counts[b["fullname"]] > 1:
            b["name"] += f" [{b['extra_info']['key']}]"
            b["fullname"] += f" [{b['extra_info']['key']}]"


# ---------------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------------

def write_document(document: dict, out: str | Path, overwrite: bool = False) -> Path:
    """Write ``document`` to ``out`` (checked by :func:`check_out`) whole, never through a link
    (:func:`~ddpbench.files.sidefiles.replace_file`), and over a file there only when ``overwrite``:
    of two exports to one new file, the one that comes second is refused in one line."""
    text = json.dumps(document, indent=4, allow_nan=False)
    try:
        return replace_file(out, text + "\n", replace=overwrite)
    except FileExistsError:
        raise InputError("command line", "--out", f"{out} was written by another command meanwhile; give --force to "
                         "replace it, or another path") from None
    except OSError as err:
        raise InputError("command line", "--out", f"cannot write {out}: {err.strerror or err}") from None


def export_benchmark(folder: str | Path, out: str | Path, overwrite: bool = False) -> tuple[dict, list[str], Path]:
    """Read ``folder``, write its pytest-benchmark JSON to ``out`` (an existing file only when
    ``overwrite``): (document, stderr lines, path)."""
    out = Path(out)
    try:
        same = out.resolve() == (Path(folder) / RESULTS_FILE).resolve()
    except (OSError, RuntimeError) as err:  # a link loop
        raise InputError("command line", "--out", f"{out} cannot be resolved: {err}") from None
    if same:
        raise InputError("command line", "--out", f"{out} is the results file itself; give another path")
    out = check_out(out, overwrite)
    document, notes = benchmark_document(folder)
    return document, notes, write_document(document, out, overwrite)
