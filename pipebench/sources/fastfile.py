"""EMULATED FastFile fetches: per-file first-read latency and a shared bandwidth cap, on local files.

On SageMaker, FastFile mode shows the channel's S3 prefix as a read-only folder and streams a
file's bytes from S3 when it is read: every file opened pays a request's first-byte latency, and
all open files share the instance's bandwidth. Locally, `FetchLink.reserve(path)`, run as a
reader opens a file, gives how long the reader must wait as if the file came over such a link —
the request latency (concurrent requests wait it together), then the file's bytes through one link
of `bandwidth_bytes_per_sec` (transfers queue behind each other) — and the reader waits that long
in its own thread (pipebench.sources.readers), then reads the local file. So one reader pays latency +
transfer per file in turn, while `num_parallel_reads` / `interleave` overlap latencies, exactly
the effect worth measuring before choosing FastFile.

This is an emulation, and labelled so in every result: the whole file "arrives" before it is
read (real FastFile lets the reader start on the first bytes, so this overstates a file's time by
about one local read of it), nothing is cached between epochs (each open fetches again, as
FastFile does), and the latency and bandwidth are parameters (`sources.fastfile`), not
measurements of S3.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Fetch:
    """One emulated fetch: which file, how many bytes, when it was asked for and when it arrived."""

    path: str
    size_bytes: int
    asked_sec: float
    arrived_sec: float


class FetchLink:
    """One emulated remote link: request latency per file, transfers queued at a bandwidth cap."""

    def __init__(self, first_read_latency_sec: float, bandwidth_bytes_per_sec: float | None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.first_read_latency_sec = first_read_latency_sec
        self.bandwidth_bytes_per_sec = bandwidth_bytes_per_sec
        self.fetches: list[Fetch] = []
        self._clock = clock
        self._link_free_at = 0.0
        self._lock = threading.Lock()

    def arrival(self, size_bytes: int, asked_sec: float) -> float:
        """Give when a file of `size_bytes` asked for at `asked_sec` has arrived; reserves the link."""
        with self._lock:
            start = max(asked_sec + self.first_read_latency_sec, self._link_free_at)
            transfer = size_bytes / self.bandwidth_bytes_per_sec if self.bandwidth_bytes_per_sec else 0.0
            self._link_free_at = start + transfer
            return self._link_free_at

    def reserve(self, path: str) -> float:
        """Give the seconds a reader opening `path` now must wait for it to arrive; logs the fetch."""
        asked = self._clock()
        size = os.path.getsize(path)
        arrived = self.arrival(size, asked)
        with self._lock:
            self.fetches.append(Fetch(path, size, asked, arrived))
        return max(0.0, arrived - asked)

    __call__ = reserve  # the open hook the readers run

    def describe(self) -> str:
        """Give the emulation's parameters as one line, for results and benchmark output."""
        bandwidth = (f"{self.bandwidth_bytes_per_sec / 1e6:g} MB/s shared" if self.bandwidth_bytes_per_sec
                     else "unlimited bandwidth")
        return f"EMULATED FastFile: {self.first_read_latency_sec * 1e3:g} ms first-read latency per file, {bandwidth}"
