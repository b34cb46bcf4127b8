"""pytest-benchmark JSON files made for tests, written by pytest-benchmark's own code (its
``Metadata`` and ``pytest_benchmark_generate_json``, what ``pytest --benchmark-json FILE`` runs),
from round times the test makes up; nothing is timed and no process is started.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

#: pytest-benchmark's own machine_info of a made-up machine (what it writes, less the CPU's flags)
MACHINE_INFO = {"node": "testhost", "processor": "", "machine": "x86_64", "python_compiler": "GCC 12.2.0",
                "python_implementation": "CPython", "python_implementation_version": "3.11.7",
                "python_version": "3.11.7", "python_build": ["main", "May  9 2026 07:35:25"],
                "release": "6.1.0", "system": "Linux",
                "cpu": {"python_version": "3.11.7.final.0 (64 bit)", "arch": "X86_64", "bits": 64, "count": 4,
                        "arch_string_raw": "x86_64", "vendor_id_raw": "AuthenticAMD", "brand_raw": "Test CPU"}}


def write_benchmark_json(path: Path, rounds_s: dict[str, list[float]], when: str = "2026-11-20T10:00:00+00:00",
                         machine: dict | None = None, extra_info: dict | None = None) -> Path:
    """A pytest-benchmark JSON at ``path`` of one benchmark per test id in ``rounds_s`` (each with its
    rounds' times in seconds), run at ``when``. ``machine``: the fingerprint ddpbench's plugin adds
    as ``machine_info["ddpbench"]`` (None: a run without the plugin); ``extra_info``: every
    benchmark's (what ``ddp_group`` fills)."""
    from pytest_benchmark.plugin import pytest_benchmark_generate_json
    from pytest_benchmark.stats import Metadata

    benchmarks = []
    for fullname, values in rounds_s.items():
        name = fullname.rpartition("::")[2]
        param = name.partition("[")[2].rstrip("]") or None
        fixture = SimpleNamespace(name=name, fullname=fullname, group=None, param=param,
                                  params={"case": param} if param else None, extra_info=dict(extra_info or {}),
                                  cprofile_stats=None, has_error=False)
        bench = Metadata(fixture, iterations=1, options={"min_rounds": 5, "max_time": 1.0, "warmup": False})
        for value in values:
            bench.update(value)
        benchmarks.append(bench)
    info = {**MACHINE_INFO, **({"ddpbench": dict(machine)} if machine is not None else {})}
    made = pytest_benchmark_generate_json(config=None, benchmarks=benchmarks, include_data=True, machine_info=info,
                                          commit_info={"id": "0123abcd", "dirty": False, "project": "user"})
    made["datetime"] = when
    path.write_text(json.dumps(made, indent=4))
    return path
