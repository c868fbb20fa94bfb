"""A stand-in for the pynvml module: the calls pipebench makes, answered from a list of fake GPUs."""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace


class NVMLError(Exception):
    """What pynvml raises (its NVMLError_* classes derive from NVMLError)."""


@dataclass
class FakeGPU:
    name: str = "Tesla V100-SXM2-16GB"
    util_pct: int = 0
    mem_used_bytes: int = 0
    mem_total_bytes: int = 16 * 2**30


class FakeNVML:
    """Module-like object; `calls` records every call so tests can check init/shutdown pairing."""

    NVMLError = NVMLError

    def __init__(self, gpus: list[FakeGPU], driver: str | bytes = "535.104.12", fail_init: str | None = None):
        self.gpus = gpus
        self.driver = driver
        self.fail_init = fail_init
        self.calls: list[str] = []

    def nvmlInit(self) -> None:
        self.calls.append("init")
        if self.fail_init:
            raise NVMLError(self.fail_init)

    def nvmlShutdown(self) -> None:
        self.calls.append("shutdown")

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGPU:
        return self.gpus[index]

    def nvmlDeviceGetName(self, handle: FakeGPU) -> str:
        return handle.name

    def nvmlSystemGetDriverVersion(self) -> str | bytes:
        return self.driver

    def nvmlDeviceGetUtilizationRates(self, handle: FakeGPU) -> SimpleNamespace:
        return SimpleNamespace(gpu=handle.util_pct, memory=0)

    def nvmlDeviceGetMemoryInfo(self, handle: FakeGPU) -> SimpleNamespace:
        return SimpleNamespace(used=handle.mem_used_bytes, total=handle.mem_total_bytes,
                               free=handle.mem_total_bytes - handle.mem_used_bytes)
