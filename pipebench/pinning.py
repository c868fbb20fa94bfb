"""Where a trial's worker may run: the CPUs it is pinned to before it starts, and optionally a CPU-time quota.

Pinning is set in the child between fork and exec (Popen's preexec_fn calls sched_setaffinity), so
it is in place before Python, let alone TensorFlow, starts: TensorFlow sizes its thread pools from
the CPUs it may schedule on, and so does tf.data's AUTOTUNE budget. The worker reports what it saw
(TrialRecord.cpus_at_start, tf_inter_op_pool_threads).

A fractional number of cores (1.5) is the next whole number of CPUs with a CFS quota on the worker's
process tree: a cgroup of the v1 `cpu` controller made for the worker (cpu.cfs_quota_us =
cores × cpu.cfs_period_us), which the child joins before exec and which is removed when it ends.
That needs the v1 cpu controller mounted and writable (root); cgroup v2's cpu.max would do the same
but needs the cpu controller delegated to a child group, which `quota_unavailable` checks for
neither. TensorFlow still sees the whole CPUs, as in a container given `--cpus 1.5`.
"""
from __future__ import annotations

import contextlib
import math
import os
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pipebench.errors import UsageError

#: The cgroup v1 cpu controller's mount point.
CPU_CGROUP = Path("/sys/fs/cgroup/cpu")
CFS_PERIOD_US = 100_000


@dataclass(frozen=True)
class Pinning:
    """The CPUs a worker may use, and the share of them it may keep busy (None: all of them)."""

    cpus: tuple[int, ...]
    quota_cores: float | None = None

    @property
    def cores(self) -> float:
        """Give the cores' worth of CPU time the worker may use per second."""
        return len(self.cpus) if self.quota_cores is None else self.quota_cores

    def text(self) -> str:
        """Give it as 'CPU 0', 'CPUs 0,1' or '1.5 cores of CPUs 0,1'."""
        where = f"CPU{'s' if len(self.cpus) > 1 else ''} {','.join(map(str, self.cpus))}"
        return where if self.quota_cores is None else f"{self.quota_cores:g} cores of {where}"


def usable_cpus() -> tuple[int, ...]:
    """Give the CPUs this process may run on, in order."""
    return tuple(sorted(os.sched_getaffinity(0)))


def quota_unavailable(root: Path = CPU_CGROUP) -> str | None:
    """Give why CPU quotas cannot be set here, or None when they can (the v1 cpu controller is writable)."""
    quota = root / "cpu.cfs_quota_us"
    if not quota.exists():
        v2 = Path("/sys/fs/cgroup/unified/cgroup.controllers")
        controllers = v2.read_text().split() if v2.exists() else []
        return (f"no cgroup v1 cpu controller at {root}, and pipebench does not set cgroup v2's cpu.max"
                + (f" (the v2 hierarchy here offers: {', '.join(controllers) or 'no controllers'})" if v2.exists() else ""))
    if not os.access(root, os.W_OK):
        return f"{root}: not writable by this user (a quota needs a cgroup of its own)"
    return None


def pinning_for(cores: float, cpus: tuple[int, ...] | None = None) -> Pinning:
    """Give the pinning for `cores` (whole or fractional) on the first CPUs this process may use.

    UsageError when this machine has fewer CPUs than asked, or a fractional count cannot get a quota here.
    """
    cpus = usable_cpus() if cpus is None else cpus
    whole = math.ceil(cores)
    if cores <= 0 or whole > len(cpus):
        raise UsageError(f"{cores:g} cores asked, but this process may use {len(cpus)} CPU(s) "
                         f"({','.join(map(str, cpus))})")
    if whole == cores:
        return Pinning(cpus[:whole])
    why = quota_unavailable()
    if why:
        raise UsageError(f"{cores:g} cores: a fractional count needs a CPU quota, unavailable here: {why}")
    return Pinning(cpus[:whole], cores)


@contextlib.contextmanager
def placed(pinning: Pinning | None, root: Path = CPU_CGROUP) -> Iterator[Callable[[], None] | None]:
    """Yield the preexec_fn that puts a child where `pinning` says (None: anywhere), with its quota's
    cgroup made for the block and removed after it (the worker's tree must have ended by then)."""
    if pinning is None:
        yield None
        return
    cpus = set(pinning.cpus)
    group = None
    if pinning.quota_cores is not None:
        group = root / f"pipebench-{os.getpid()}-{secrets.token_hex(4)}"
        group.mkdir()
        (group / "cpu.cfs_period_us").write_text(str(CFS_PERIOD_US))
        (group / "cpu.cfs_quota_us").write_text(str(round(pinning.quota_cores * CFS_PERIOD_US)))
    procs = None if group is None else str(group / "cgroup.procs")

    def place() -> None:  # in the child, after fork, before exec
        os.sched_setaffinity(0, cpus)
        if procs is not None:
            with open(procs, "w") as f:
                f.write(str(os.getpid()))

    try:
        yield place
    finally:
        if group is not None:
            with contextlib.suppress(OSError):
                group.rmdir()
