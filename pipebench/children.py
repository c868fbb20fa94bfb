"""What a parent does with the end of a child process it started: read why it died, and kill what is left of it.

Kept apart from the trial manager so the places that start servers and writers inside a trial (the tf.data
service cluster, the Pipe-mode emulator) and the sharding cluster share it without importing the manager's
sampler.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path
from typing import BinaryIO

STDERR_TAIL_BYTES = 2000
_NO_OUTPUT = "(no output)"


def stderr_tail(stderr: Path | BinaryIO, max_bytes: int = STDERR_TAIL_BYTES) -> str:
    """Give the last `max_bytes` a child wrote to `stderr` (its file's path, or the open file it was given); '' if none.

    An open file is read with pread, which leaves its offset alone: the child may share that offset and still write.
    """
    if isinstance(stderr, Path):
        if not stderr.exists():
            return ""
        with open(stderr, "rb") as f:
            return stderr_tail(f, max_bytes)
    fd = stderr.fileno()
    size = os.fstat(fd).st_size
    return os.pread(fd, min(size, max_bytes), max(0, size - max_bytes)).decode("utf-8", "replace")


def last_stderr_line(stderr: Path | BinaryIO) -> str:
    """Give the last non-blank line a child wrote to `stderr`, stripped; '(no output)' when it wrote none."""
    lines = [line.strip() for line in stderr_tail(stderr).splitlines() if line.strip()]
    return lines[-1] if lines else _NO_OUTPUT


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL `proc`'s process group (it was started with start_new_session), so what it started goes too; reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
