"""A pytest-benchmark run's JSON (``pytest --benchmark-json FILE``) as the history files it: what it must
hold, checked value by value as untrusted ground, and the machine it names: the fingerprint ddpbench's
pytest plugin put in its ``machine_info`` (:data:`PLUGIN_KEY`), or one made from pytest-benchmark's own
fields where the run did not use the plugin (:func:`pytest_benchmark_fingerprint`). The history store
(:mod:`ddpbench.results.history`) files and reads such runs; the report's export
(:mod:`ddpbench.report.export`) writes one.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddpbench.experiment.host import fingerprint
from ddpbench.files.sidefiles import SideFileError, field

#: where ddpbench's pytest plugin puts the machine's fingerprint in pytest-benchmark's ``machine_info``
PLUGIN_KEY = "ddpbench"
#: the field that marks a fingerprint made from pytest-benchmark's own ``machine_info``
MADE_FROM = "made_from"


@dataclass(frozen=True)
class BenchmarkRun:
    """What the history uses of a pytest-benchmark JSON: the run's ``datetime``, the machine's
    fingerprint, whether ddpbench's plugin wrote it (``plugin``), and its benchmarks (each checked
    to have a ``fullname``, a ``name`` and a positive ``stats.mean`` in seconds)."""

    datetime: str
    fingerprint: dict
    plugin: bool
    benchmarks: tuple[dict, ...]


def benchmark_run(value, where: str) -> BenchmarkRun:
    """A pytest-benchmark JSON's value checked (SideFileError naming ``where`` and what is wrong)."""
    if not isinstance(value, dict) or "benchmarks" not in value:
        raise SideFileError(f"{where}: not a pytest-benchmark JSON (no 'benchmarks'; `pytest --benchmark-json "
                            "FILE` writes one)")
    found = field(value, "benchmarks", list, where)
    if not found:
        raise SideFileError(f"{where}: holds no benchmark")
    info = field(value, "machine_info", dict, where)
    for number, bench in enumerate(found):
        at = f"{where} benchmarks[{number}]"
        field(bench, "fullname", str, at)
        field(bench, "name", str, at)
        field(bench, "extra_info", dict, at, optional=True)
        if not field(field(bench, "stats", dict, at), "mean", (int, float), f"{at} stats") > 0:
            raise SideFileError(f"{at} stats: 'mean' is not a positive number of seconds")
    plugin = info.get(PLUGIN_KEY)
    if plugin is not None:
        field(info, PLUGIN_KEY, dict, f"{where} machine_info")
        gpus = plugin.get("gpus") or []
        if not isinstance(gpus, list) or not all(isinstance(g, str) for g in gpus):
            raise SideFileError(f"{where} machine_info {PLUGIN_KEY}: 'gpus' is not a list of names")
    return BenchmarkRun(datetime=field(value, "datetime", str, where),
                        fingerprint=fingerprint(plugin) if plugin is not None else pytest_benchmark_fingerprint(info),
                        plugin=plugin is not None, benchmarks=tuple(found))


def pytest_benchmark_fingerprint(machine_info: dict) -> dict:
    """A fingerprint from pytest-benchmark's own ``machine_info`` (for a run without ddpbench's
    plugin): the CPU's brand and logical cores, its architecture, the system and the Python. It
    knows no GPU and no torch; ``made_from`` says where it came from, and its folder's name."""
    cpu = machine_info.get("cpu") if isinstance(machine_info.get("cpu"), dict) else {}

    def scalar(value):
        return value if isinstance(value, (str, int)) and not isinstance(value, bool) and value != "" else None

    return {MADE_FROM: "pytest-benchmark machine_info",
            "cpu_model": scalar(cpu.get("brand_raw")) or scalar(machine_info.get("processor")),
            "cores_logical": scalar(cpu.get("count")),
            "arch": scalar(cpu.get("arch_string_raw")) or scalar(machine_info.get("machine")),
            "system": scalar(machine_info.get("system")),
            "python_implementation": scalar(machine_info.get("python_implementation")),
            "python_version": scalar(machine_info.get("python_version"))}
