"""Child processes that must not outlive their parent (a trial worker, a Pipe-mode writer), even after kill -9."""
from __future__ import annotations

import os
import signal
import sys


def die_with_parent(parent_pid: int | None) -> None:
    """Have Linux SIGKILL this process when its parent goes away; exit now if `parent_pid` is already gone."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if parent_pid is not None and os.getppid() != parent_pid:  # it died before prctl took effect
        os._exit(1)
