"""Idle cores kept awake: the second speed of a pipeline that hands its elements between threads one at a time.

A core with nothing to run halts; on a virtual machine a halt leaves the guest (a VM exit), and waking it again (an
interrupt through the host) takes tens of microseconds. A pipeline whose stage hands every element from one thread
to another (tf.data.experimental.parallel_interleave of one cycle: make_batched_features_dataset's reader) waits for
that wake-up at each hand-off when the two threads do not keep both cores busy. On this project's 2-vCPU Firecracker
machine (cpuidle haltpoll, guest polling off, 2026-12-04) real_tft_sentiment_varlen_tf1's pipeline read 31-47k rows/s
at 0.9 cores in most seconds and 90-150k at 1.3-1.6 cores in others, switching with what else kept a core busy (its
consumer's pace, a spinning process beside it); with idle cores kept polling it read 99-148k in every second of
three processes. So such a pipeline has two speeds, and which one a training gets depends on whether its cores
sleep while it waits: one figure alone is either.

Linux's PM QoS request keeps them awake: while a process holds /dev/cpu_dma_latency open with 0 written to it, the
idle governor picks no state that takes longer than 0 µs to leave (it polls). `pipebench diagnose` times the whole
pipeline once more so (`hold`), paired with it, and says the ratio (pipebench.diagnose.selfcheck widens its band by
it: a plain loop may read either speed). The same request is what tuned's latency-performance profile holds. The
device is root's: elsewhere this says "unavailable" and why.
"""
from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipebench.measure.intervals import Interval

#: Linux's PM QoS request for CPU wake-up latency (the kernel's Documentation/power/pm_qos_interface.rst).
DEVICE = Path("/dev/cpu_dma_latency")
#: The arm that times the whole pipeline with idle cores kept awake.
NAME = "cores kept awake"


def unavailable(device: Path = DEVICE) -> str | None:
    """Give why idle cores cannot be kept awake here ("unavailable: ..."), or None when they can."""
    if not device.exists():
        return f"unavailable: {device} does not exist (Linux's PM QoS request; not in every container)"
    if not os.access(device, os.W_OK):
        return f"unavailable: {device} is writable by root only"
    return None


@contextmanager
def hold(device: Path = DEVICE) -> Iterator[None]:
    """Keep idle cores from sleeping while inside (a PM QoS request of 0 µs, released when its file closes)."""
    fd = os.open(device, os.O_WRONLY)
    try:
        os.write(fd, struct.pack("i", 0))
        yield
    finally:
        os.close(fd)


def spread(gain: Interval | None) -> float:
    """Give how much faster the pipeline read with idle cores kept awake, where that was shown (the interval above 1),
    else 1: the factor between its two speeds."""
    return gain.mean if gain is not None and gain.decided and gain.low > 1.0 else 1.0
