"""CPU, memory, page-cache and GPU use of a trial's process tree, sampled from the manager on a thread.

Sampling runs outside the TF process so it adds no Python work to what is measured; 2–10 Hz
(interval_sec 0.1–0.5) keeps its own CPU use small.

What a Sample holds and how it is counted:
- `cpu_pct`: CPU time (user + system) of every live process in the tree rooted at `pid`, per wall
  second, ×100 (100 = one vCPU busy). A process born between two samples counts from its birth;
  one that exits between them loses its last partial interval. `_of_vcpus` and
  `_of_physical_cores` divide by the CPUs the root may run on (its affinity at start) and by the
  physical cores under them: with hyperthreads, 100% of physical cores is not a full machine.
- `per_core_pct`: busy share of each CPU of the host (/proc/stat), by CPU number; other work on
  the host shows here too.
- `rss_bytes`: summed over the tree (pages two processes share count twice); `root_rss_peak_bytes`
  is the root's VmHWM, which also catches peaks between samples.
- `page_cache_resident_fraction`: share of the data files' pages in the page cache (mincore), so a
  "cold" trial can show it really read from storage. Costs one byte and a page-table walk per 4 KiB
  page per sample: keep data_files empty for very large data sets unless needed.
- `gpu_*`: NVML utilization (mean over the chosen devices) and memory used (sum), when NVML works.

`t_sec` is the injected clock, time.monotonic by default: CLOCK_MONOTONIC is system-wide on
Linux, so a worker's time.monotonic() window bounds line up with samples (summarize's since/until).
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType

import numpy as np
import psutil

from pipebench.children import ProcessTree
from pipebench.measure.machine import open_nvml, physical_cores
from pipebench.page_cache import resident_fraction_of


@dataclass(frozen=True)
class Sample:
    """One reading of the tree and the host; as_row() gives it as a Parquet row."""

    t_sec: float
    wall_time: float  # time.time(), for people reading the table
    processes: int
    threads: int
    cpu_pct: float
    cpu_pct_of_vcpus: float
    cpu_pct_of_physical_cores: float
    per_core_pct: tuple[float, ...]
    rss_bytes: int
    root_rss_peak_bytes: int | None
    page_cache_resident_fraction: float | None = None
    gpu_util_pct: float | None = None
    gpu_mem_used_bytes: int | None = None
    gpu_util_pct_per_device: tuple[float, ...] | None = None

    def as_row(self) -> dict:
        """Give the sample as a flat dict of scalars; the per-core and per-device readings are lists."""
        row = asdict(self)
        row["per_core_pct"] = list(self.per_core_pct)
        if self.gpu_util_pct_per_device is not None:
            row["gpu_util_pct_per_device"] = list(self.gpu_util_pct_per_device)
        return row


@dataclass(frozen=True)
class Usage:
    """What the samples of a span (a trial's measured windows) say; None where nothing was read.

    `other_cpu_pct_median` is the host's busy CPU minus the trial tree's, in the same units as
    `cpu_pct` (100 = one vCPU): work of other processes that competed with the trial.
    """

    samples: int
    cpu_pct_median: float | None
    cpu_pct_p95: float | None
    cpu_pct_of_vcpus_median: float | None
    cpu_pct_of_physical_cores_median: float | None
    busiest_core_pct_median: float | None
    other_cpu_pct_median: float | None
    rss_median_bytes: int | None
    page_cache_resident_fraction_start: float | None
    page_cache_resident_fraction_end: float | None
    gpu_util_pct_median: float | None
    gpu_util_pct_p95: float | None
    gpu_mem_peak_bytes: int | None


def summarize(samples: Sequence[Sample], since: float | None = None, until: float | None = None) -> Usage:
    """Give medians, p95s and peaks of the samples with since <= t_sec <= until.

    Also reachable as `sampler.summarize(samples)`, for callers that hold only the sampler.
    """
    chosen = [s for s in samples if (since is None or s.t_sec >= since) and (until is None or s.t_sec <= until)]

    def stat(values: list, how: str) -> float | None:
        values = [v for v in values if v is not None]
        if not values:
            return None
        if how == "max":
            return max(values)
        return float(np.percentile(values, {"median": 50, "p95": 95}[how]))

    resident = [s.page_cache_resident_fraction for s in chosen if s.page_cache_resident_fraction is not None]
    rss = stat([s.rss_bytes for s in chosen], "median")
    gpu_mem = stat([s.gpu_mem_used_bytes for s in chosen], "max")
    return Usage(
        samples=len(chosen),
        cpu_pct_median=stat([s.cpu_pct for s in chosen], "median"),
        cpu_pct_p95=stat([s.cpu_pct for s in chosen], "p95"),
        cpu_pct_of_vcpus_median=stat([s.cpu_pct_of_vcpus for s in chosen], "median"),
        cpu_pct_of_physical_cores_median=stat([s.cpu_pct_of_physical_cores for s in chosen], "median"),
        busiest_core_pct_median=stat([max(s.per_core_pct) if s.per_core_pct else None for s in chosen], "median"),
        other_cpu_pct_median=stat([max(0.0, sum(s.per_core_pct) - s.cpu_pct) if s.per_core_pct else None
                                   for s in chosen], "median"),
        rss_median_bytes=None if rss is None else int(rss),
        page_cache_resident_fraction_start=resident[0] if resident else None,
        page_cache_resident_fraction_end=resident[-1] if resident else None,
        gpu_util_pct_median=stat([s.gpu_util_pct for s in chosen], "median"),
        gpu_util_pct_p95=stat([s.gpu_util_pct for s in chosen], "p95"),
        gpu_mem_peak_bytes=None if gpu_mem is None else int(gpu_mem),
    )


#: How often the process tree is re-listed; a worker's children appear at start-up, not per step.
_TREE_REFRESH_SEC = 1.0


class Sampler:
    """Samples the process tree rooted at `pid` every interval_sec on a thread, from start() to stop().

    `nvml` is the pynvml module (or a fake with the same calls); None loads pynvml if it is
    installed and NVML finds a driver. `gpu_indices` picks devices (None: all). `on_sample` is
    called with each sample, on the sampler thread (stop()'s last one on the caller's), e.g. for
    the manager's memory cap; an exception it or the sampling raises on the thread is re-raised by
    stop(). Sampling ends by itself when the root exits.
    """

    def __init__(self, pid: int, interval_sec: float = 0.25, data_files: Iterable[str | Path] = (),
                 nvml: ModuleType | None = None, clock: Callable[[], float] = time.monotonic,
                 gpu_indices: Sequence[int] | None = None,
                 on_sample: Callable[[Sample], None] | None = None) -> None:
        self.pid = pid
        self.interval_sec = interval_sec
        self.data_files = [Path(p) for p in data_files]
        self._nvml_module = nvml
        self._clock = clock
        self._gpu_indices = gpu_indices
        self._on_sample = on_sample
        self._samples: list[Sample] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._nvml: ModuleType | None = None
        self._gpus: list = []
        self._root: psutil.Process | None = None
        self._tree = ProcessTree(pid, relist_sec=_TREE_REFRESH_SEC)
        self._last_t = 0.0
        self._last_cpu: dict[tuple[int, int], float] = {}
        self._last_cores: list | None = None
        self.vcpus = 1
        self.physical_cores = 1
        self.gpu_reason: str | None = None

    summarize = staticmethod(summarize)

    def start(self) -> Sampler:
        """Take the baseline reading and start the sampling thread."""
        try:
            self._root = psutil.Process(self.pid)
            affinity = (self._root.cpu_affinity() if hasattr(self._root, "cpu_affinity")
                        else list(range(os.cpu_count() or 1)))  # psutil has no affinity on macOS
        except psutil.Error:
            self._root = None  # the trial died before sampling began: stop() gives no samples
            return self
        self.vcpus = len(affinity)
        self.physical_cores = physical_cores(affinity)
        self._nvml, self.gpu_reason = open_nvml(self._nvml_module)
        if self._nvml is not None:
            count = self._nvml.nvmlDeviceGetCount()
            indices = range(count) if self._gpu_indices is None else [i for i in self._gpu_indices if i < count]
            self._gpus = [self._nvml.nvmlDeviceGetHandleByIndex(i) for i in indices]
            if not self._gpus:
                self.gpu_reason = "NVML sees no GPU" if not count else f"no GPU among indices {list(self._gpu_indices)}"
        self._last_t = self._clock()
        self._last_cpu = self._tree_cpu_seconds(self._last_t)[0]
        self._last_cores = psutil.cpu_times(percpu=True)
        self._thread = threading.Thread(target=self._run, name=f"sampler-{self.pid}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[Sample]:
        """Stop sampling (one last sample if half an interval has passed) and give every sample."""
        if self._thread is not None:
            self._stopping.set()
            self._thread.join()
            self._thread = None
            if self._error is None and self._root is not None and self._clock() - self._last_t >= self.interval_sec / 2:
                self._take()
        if self._nvml is not None:
            self._nvml.nvmlShutdown()
            self._nvml = None
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        return list(self._samples)

    def _run(self) -> None:
        try:
            while not self._stopping.wait(self.interval_sec):
                if self._take() is None:
                    return
        except BaseException as error:  # handed to stop(): a sampler bug must not pass silently
            self._error = error

    def _take(self) -> Sample | None:
        sample = self.sample_now()
        if sample is not None and self._on_sample is not None:
            self._on_sample(sample)
        return sample

    def sample_now(self) -> Sample | None:
        """Take one sample covering the time since the previous one; None once the root has exited."""
        with self._lock:
            if self._root is None:
                return None
            now = self._clock()
            cpu, rss, threads = self._tree_cpu_seconds(now)
            if not cpu:
                self._root = None
                return None
            elapsed = max(now - self._last_t, 1e-9)
            busy_sec = sum(seconds - self._last_cpu.get(key, 0.0) for key, seconds in cpu.items())
            cpu_pct = 100.0 * busy_sec / elapsed
            cores = psutil.cpu_times(percpu=True)
            per_core = tuple(_busy_pct(before, after) for before, after in zip(self._last_cores, cores))
            self._last_t, self._last_cpu, self._last_cores = now, cpu, cores
            gpu_util, gpu_mem = self._gpu_readings()
            sample = Sample(
                t_sec=now, wall_time=time.time(), processes=len(cpu), threads=threads, cpu_pct=cpu_pct,
                cpu_pct_of_vcpus=cpu_pct / self.vcpus, cpu_pct_of_physical_cores=cpu_pct / self.physical_cores,
                per_core_pct=per_core, rss_bytes=rss, root_rss_peak_bytes=_vm_hwm_bytes(self.pid),
                page_cache_resident_fraction=resident_fraction_of(self.data_files) if self.data_files else None,
                gpu_util_pct=float(np.mean(gpu_util)) if gpu_util else None,
                gpu_mem_used_bytes=sum(gpu_mem) if gpu_mem else None,
                gpu_util_pct_per_device=tuple(gpu_util) if gpu_util else None,
            )
            self._samples.append(sample)
            return sample

    def _tree_cpu_seconds(self, now: float) -> tuple[dict[tuple[int, int], float], int, int]:
        """Give ({(pid, start ticks): CPU seconds}, summed RSS, summed threads) of the live tree; all empty once the
        root has exited (a zombie until the manager reaps it: the trial is over). Read from the files of the
        processes already known (pipebench.children.ProcessTree), the tree listed again about once a second."""
        cpu, rss, threads = self._tree.usage(now)
        if not any(pid == self.pid for pid, _ in cpu):
            return {}, 0, 0
        return cpu, rss, threads

    def _gpu_readings(self) -> tuple[list[float], list[int]]:
        util, used = [], []
        for handle in self._gpus:
            util.append(float(self._nvml.nvmlDeviceGetUtilizationRates(handle).gpu))
            used.append(int(self._nvml.nvmlDeviceGetMemoryInfo(handle).used))
        return util, used


def busy_machine(usage: Usage | None, threshold_pct: float) -> bool | None:
    """Whether other processes used more than `threshold_pct` of a vCPU during the windows `usage` covers
    (None when nothing was sampled)."""
    if usage is None or usage.other_cpu_pct_median is None:
        return None
    return usage.other_cpu_pct_median > threshold_pct


class OthersCpu:
    """Other processes' CPU since this meter was made, in % of one vCPU (the units of `other_cpu_pct_median`): the
    host's busy CPU less what `own()` counts as ours, in CPU seconds (this process by default; a worker passes its
    process tree, pipebench.measure.cpu_clock, so a Pipe-mode writer it started is not a neighbour)."""

    def __init__(self, own: Callable[[], float] = time.process_time) -> None:
        self._own = own
        self._start = self._read()

    def _read(self) -> tuple[list, float, float]:
        return psutil.cpu_times(percpu=True), self._own(), time.monotonic()

    def pct(self) -> float:
        """Give other processes' CPU from the meter's start to now."""
        (cores, mine, start), (cores_after, mine_after, now) = self._start, self._read()
        elapsed = now - start
        if elapsed <= 0:
            return 0.0
        host = sum(_busy_pct(before, after) for before, after in zip(cores, cores_after))
        return max(0.0, host - 100.0 * (mine_after - mine) / elapsed)


def steal_cpu_sec() -> float:
    """Give the hypervisor's steal so far, in CPU seconds summed over the vCPUs (time they were ready to run but
    the host ran another guest; 0 where the kernel does not count it). `OthersCpu` counts it as others' CPU."""
    return float(getattr(psutil.cpu_times(), "steal", 0.0))


def others_busy_pct(seconds: float = 1.0) -> float:
    """Give the CPU that processes other than this one use now, over `seconds`, in % of one vCPU."""
    meter = OthersCpu()
    time.sleep(seconds)
    return meter.pct()


def _busy_pct(before, after) -> float:
    """Give the busy percentage of one CPU between two psutil cpu_times readings."""
    idle = (after.idle - before.idle) + (getattr(after, "iowait", 0.0) - getattr(before, "iowait", 0.0))
    total = sum(after) - sum(before)
    if hasattr(after, "guest"):  # guest time is already inside user time on Linux
        total -= (after.guest - before.guest) + (after.guest_nice - before.guest_nice)
    return 0.0 if total <= 0 else max(0.0, min(100.0, 100.0 * (1.0 - idle / total)))


def _vm_hwm_bytes(pid: int) -> int | None:
    """Give the process's peak RSS (VmHWM) from /proc, or None when unreadable."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None
