"""The CPU seconds a worker's process tree has used, read from inside the worker at window bounds.

The worker reads it just before and just after each timed window (pipebench.measure.windows), so a
window's `cpu_sec` is what its pipeline cost in CPU, whichever threads or child processes did the
work (tf.data's pools, a Pipe-mode emulator's writers). CPU-seconds per example is then
`cpu_sec / examples`, one value per window, and an interval over the rounds like any figure.

- this process: `time.process_time()` (CLOCK_PROCESS_CPUTIME_ID: user + system of every thread,
  to the nanosecond; os.times() counts in 10 ms ticks, too coarse for a one-second window);
- children already reaped: os.times() children_user + children_system;
- children alive: psutil's user + system of each (and of the children they reaped). A child that
  exits and is reaped inside a window moves from the third term to the second, so it is counted
  once either way; what a child used between its last reading and an unreaped exit is lost.

No TensorFlow import here.
"""
from __future__ import annotations

import os
import time

import psutil


def process_tree_cpu_sec(me: psutil.Process | None = None) -> float:
    """Give the CPU seconds (user + system) this process and its descendants have used so far."""
    me = me or psutil.Process()
    reaped = os.times()
    total = time.process_time() + reaped.children_user + reaped.children_system
    for child in me.children(recursive=True):
        try:
            used = child.cpu_times()
        except psutil.Error:  # it exited between the listing and the reading
            continue
        total += used.user + used.system + used.children_user + used.children_system
    return total
