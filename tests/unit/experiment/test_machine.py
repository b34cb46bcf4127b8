"""How this machine's GPUs are counted: torch only where a GPU driver could give it one."""

from __future__ import annotations

import sys
import types

import pytest

from ddpbench.experiment import machine


def fake_torch(devices: int) -> types.ModuleType:
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(is_available=lambda: devices > 0, device_count=lambda: devices)
    return torch


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the driver's device files are Linux's")
def test_no_gpu_driver_counts_no_gpu_without_asking_torch(monkeypatch, tmp_path):
    monkeypatch.setattr(machine, "GPU_DRIVER_FILES", (str(tmp_path / "nvidiactl"),))
    monkeypatch.setitem(sys.modules, "torch", fake_torch(3))  # what torch would say, were it asked
    assert machine.cuda_device_count() == 0


@pytest.mark.parametrize("devices", [0, 2])
def test_a_gpu_driver_s_device_file_asks_torch(monkeypatch, tmp_path, devices):
    (tmp_path / "kfd").touch()
    monkeypatch.setattr(machine, "GPU_DRIVER_FILES", (str(tmp_path / "nvidiactl"), str(tmp_path / "kfd")))
    monkeypatch.setitem(sys.modules, "torch", fake_torch(devices))
    assert machine.cuda_device_count() == devices
