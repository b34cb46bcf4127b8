"""Energy over a rank's timed steps, read from the counters the machine exposes, or the reason
there is none (docs/cost-and-energy.md).

* a GPU rank reads NVML's total-energy counter of each of its GPUs (millijoules since the driver
  loaded; Volta and newer), through nvidia-ml-py;
* a CPU rank reads RAPL through the kernel's powercap files (``/sys/class/powercap/intel-rapl:*``,
  AMD's too): each package's energy and, where there is one, its DRAM's, in microjoules that wrap
  at ``max_energy_range_uj``. Every rank on a host reads the same packages: the counter's
  ``domain`` names them, and the summary counts a domain once a launch.

Nothing is guessed: no TDP, no zero for a counter that is not there. Where a rank has no counter,
its figures say why in one line (``energy_note``), and ``energy_j`` is None. A counter is read
stale by up to one update period at each end of the window, so a window shorter than
:data:`MIN_UPDATES` periods (error over 2 / MIN_UPDATES) gives no figure either: the note says how
many steps would do.

The counters are behind small seams for the tests: a powercap folder and a file reader, an NVML
module and a clock (tests/unit/rank/test_energy.py drives stand-ins that wrap, update every 100 ms,
or cannot be read).
"""

from __future__ import annotations

import math
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

POWERCAP = Path("/sys/class/powercap")
#: NVML's total-energy counter updates about every 100 ms (Yang et al., "Part-time Power
#: Measurements", 2023: on A100 and H100 a quarter of the runtime is sampled)
NVML_PERIOD_S = 0.1
#: RAPL's energy status registers update about every millisecond (Intel SDM vol. 3B, 14.10.1)
RAPL_PERIOD_S = 0.001
#: a window must span this many of its counter's updates: stale readings at both ends then bound
#: the error by 2 / MIN_UPDATES = 10 %
MIN_UPDATES = 20


class NoCounter(Exception):
    """This rank has no energy counter it can read; the message says why, in one line."""


@dataclass
class Zone:
    """One cumulative counter: how to read it (joules), and where it wraps (None: never)."""

    name: str
    read_j: Callable[[], float]
    wrap_j: float | None = None


@dataclass
class Meter:
    """The counters of one rank's devices, read together."""

    domain: str  # what the counters measure; ranks that read the same domain read one counter
    method: str  # in words: the counter and what it covers
    period_s: float
    zones: list[Zone] = field(default_factory=list)

    def read(self) -> list[float]:
        return [zone.read_j() for zone in self.zones]

    def joules(self, start: Sequence[float], end: Sequence[float]) -> float:
        """The energy between two readings, each zone's wrap undone (once: a wrap takes minutes)."""
        total = 0.0
        for zone, a, b in zip(self.zones, start, end):
            delta = b - a
            if delta < 0:
                if zone.wrap_j is None:
                    raise NoCounter(f"{zone.name} went backwards ({a:.3f} J to {b:.3f} J): the counter was reset "
                                    "during the timed steps")
                delta += zone.wrap_j
            total += delta
        return total


# -- RAPL through powercap ------------------------------------------------------------------------

def _read_text(path: Path) -> str:
    return path.read_text()


def rapl_meter(powercap: Path = POWERCAP, read: Callable[[Path], str] = _read_text,
               host: str | None = None) -> Meter:
    """The host's RAPL packages (and their DRAM zones) as one meter; NoCounter naming why not."""
    if not powercap.is_dir():
        raise NoCounter(f"this machine has no {powercap}, so no RAPL counter (most VMs and containers do not pass "
                        "it through); a CPU's energy is not guessed from its TDP")
    packages = sorted(p for p in powercap.glob("intel-rapl:*") if p.name.count(":") == 1)
    if not packages:
        raise NoCounter(f"{powercap} has no RAPL package zone (intel-rapl:N): no CPU energy counter here")
    zones, names = [], []
    for package in packages:
        parts = [package] + sorted(p for p in package.glob(f"{package.name}:*") if _name(p, read) == "dram")
        for part in parts:
            zones.append(_rapl_zone(part, read))
            names.append(_name(part, read) or part.name)
    what = " + ".join(dict.fromkeys(n.split("-")[0] for n in names))
    return Meter(domain=f"rapl:{host or socket.gethostname()}:{','.join(z.name for z in zones)}",
                 method=f"RAPL via powercap ({what} of {len(packages)} package(s); the whole host's, every "
                        "process on it)", period_s=RAPL_PERIOD_S, zones=zones)


def _name(zone: Path, read: Callable[[Path], str]) -> str:
    try:
        return read(zone / "name").strip()
    except OSError:
        return ""


def _rapl_zone(zone: Path, read: Callable[[Path], str]) -> Zone:
    energy = zone / "energy_uj"

    def read_j() -> float:
        return int(read(energy)) / 1e6

    try:
        read_j()
        wrap = int(read(zone / "max_energy_range_uj")) / 1e6
    except PermissionError:
        raise NoCounter(f"{energy} is not readable: since the PLATYPUS fix (CVE-2020-8694) only root reads RAPL; "
                        "run as root or make it readable") from None
    except (OSError, ValueError) as err:
        raise NoCounter(f"{energy} cannot be read: {err}") from None
    return Zone(zone.name, read_j, wrap)


# -- NVML -----------------------------------------------------------------------------------------

def nvml_meter(uuids: Sequence[str], nvml=None) -> Meter:
    """NVML's total-energy counter of each GPU (by UUID: CUDA's device numbers are not NVML's where
    CUDA_VISIBLE_DEVICES renumbers them) as one meter; NoCounter naming why not."""
    if nvml is None:
        try:
            import pynvml as nvml
        except ImportError:
            raise NoCounter("nvidia-ml-py is not installed (pip install nvidia-ml-py): NVML's energy counter "
                            "cannot be read") from None
    try:
        nvml.nvmlInit()
    except Exception as err:  # NVMLError and its subclasses, or a missing library
        raise NoCounter(f"NVML cannot start here ({err}): no GPU energy counter") from None
    zones = []
    for uuid in uuids:
        try:
            handle = nvml.nvmlDeviceGetHandleByUUID(uuid.encode())
            nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        except Exception as err:
            raise NoCounter(f"GPU {uuid} has no NVML total-energy counter ({err}; Volta and newer have one)") from None
        zones.append(Zone(uuid, lambda h=handle: nvml.nvmlDeviceGetTotalEnergyConsumption(h) / 1e3))
    return Meter(domain=f"nvml:{','.join(uuids)}", period_s=NVML_PERIOD_S, zones=zones,
                 method=f"NVML total-energy counter of {len(uuids)} GPU(s) (the board's; the host's CPU and memory "
                        "not counted)")


def gpu_uuid(device) -> str:
    """NVML's name of a torch CUDA device: ``GPU-`` and the UUID CUDA reports for it."""
    import torch

    return f"GPU-{torch.cuda.get_device_properties(device).uuid}"


def meter_for(devices: Sequence, powercap: Path = POWERCAP, nvml=None, uuid: Callable = gpu_uuid) -> Meter:
    """The meter of a rank whose devices are ``devices`` (torch devices; none: the CPU)."""
    gpus = [uuid(d) for d in devices if getattr(d, "type", "cpu") == "cuda"]
    return nvml_meter(gpus, nvml) if gpus else rapl_meter(powercap)


# -- a window over the timed steps ----------------------------------------------------------------

FIGURES = ("energy_j", "energy_window_s", "energy_samples", "energy_period_s", "energy_domain", "energy_method",
           "energy_note")


def not_measured(why: str) -> dict:
    """The energy figures of a rank that reads no counter, and why (one line)."""
    return {**dict.fromkeys(FIGURES), "energy_note": f"not measured: {why}"}


class EnergyWindow:
    """The energy of a rank's devices from :meth:`start` to :meth:`stop`, as stored figures.

    ``make`` builds the meter (:func:`meter_for`); a meter that cannot be made, a reading that
    fails, or a window too short for the counter leaves ``energy_j`` None and says why."""

    def __init__(self, make: Callable[[], Meter], clock: Callable[[], float] = time.perf_counter):
        self.clock = clock
        self.meter: Meter | None = None
        self.note: str | None = None
        try:
            self.meter = make()
        except NoCounter as err:
            self.note = f"not available here: {err}"
        self.started: tuple[float, list[float]] | None = None

    def start(self) -> None:
        if self.meter is None:
            return
        try:
            self.started = (self.clock(), self.meter.read())
        except Exception as err:  # OSError, ValueError, NVML's errors
            self.meter, self.note = None, f"not available here: the counter could not be read ({err})"

    def stop(self, steps: int, samples: float) -> dict:
        """The figures of the window that just ended over ``steps`` steps of ``samples`` samples."""
        meter, figures = self.meter, {**dict.fromkeys(FIGURES), "energy_samples": float(samples),
                                      "energy_note": self.note}
        if meter is None or self.started is None:
            figures["energy_note"] = self.note or "not measured: the window was never started"
            return figures
        start_s, start = self.started
        try:
            end = meter.read()
            window = self.clock() - start_s
            joules = meter.joules(start, end)
        except NoCounter as err:
            figures["energy_note"] = f"not measured: {err}"
            return figures
        except Exception as err:  # OSError, ValueError, NVML's errors
            figures["energy_note"] = f"not measured: the counter could not be read at the end ({err})"
            return figures
        figures.update(energy_window_s=window, energy_period_s=meter.period_s, energy_domain=meter.domain,
                       energy_method=meter.method)
        shortest = MIN_UPDATES * meter.period_s
        if window < shortest:
            needed = math.ceil(steps * shortest / window) if window > 0 and steps else None
            figures["energy_note"] = (
                f"too short to measure: the timed steps took {window:.3f} s, under {MIN_UPDATES} updates of the "
                f"counter (one every {1e3 * meter.period_s:g} ms), so its stale readings could be off by over "
                f"{100 * 2 / MIN_UPDATES:.0f} %" + (f"; about {needed} steps would do" if needed else ""))
            return figures
        figures["energy_j"] = joules
        return figures
