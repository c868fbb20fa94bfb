"""One epoch of an emulated Pipe-mode channel: `python -m pipebench.sources.pipe_writer JOB_JSON`.

JOB_JSON is `{"fifo": path, "files": [...], "gzip": bool, "bandwidth_bytes_per_sec": float | null,
"parent_pid": int}`. The writer opens the FIFO (blocking until a reader opens it, as SageMaker's
agent does), streams the files' bytes in order — gzip objects decompressed, like a channel with
`CompressionType: Gzip` — at most at the bandwidth cap, and closes it: the reader sees end of
epoch. A reader that goes away mid-epoch (the trial ended) is normal: the writer exits quietly.
It prints `open` on stdout when its reader arrives.
It is its own process so its CPU and the pipe's hand-off are real, and it dies with the emulator
(PR_SET_PDEATHSIG), so a SIGKILLed trial leaves no writer behind.
"""
from __future__ import annotations

import contextlib
import gzip
import json
import os
import signal
import sys
import time

from pipebench.parent_death import die_with_parent

_CHUNK_BYTES = 1 << 20


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def stream(fifo: str, files: list[str], gzipped: bool, bandwidth_bytes_per_sec: float | None) -> None:
    """Write the files' bytes into the FIFO in order, no faster than the bandwidth cap."""
    fd = os.open(fifo, os.O_WRONLY)
    print("open", flush=True)  # tells the emulator this epoch has its reader: time to make the next FIFO
    try:
        started, sent = time.monotonic(), 0
        for path in files:
            with (gzip.open(path, "rb") if gzipped else open(path, "rb")) as f:
                while chunk := f.read(_CHUNK_BYTES):
                    _write_all(fd, chunk)
                    sent += len(chunk)
                    if bandwidth_bytes_per_sec:
                        time.sleep(max(0.0, started + sent / bandwidth_bytes_per_sec - time.monotonic()))
    finally:
        os.close(fd)


def main(argv: list[str]) -> int:
    job = json.loads(argv[0])
    die_with_parent(job["parent_pid"])  # the emulator's thread that started it
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C on the terminal: end quietly, like dd
    with contextlib.suppress(BrokenPipeError):  # the reader closed the epoch early: the trial is over
        stream(job["fifo"], job["files"], job["gzip"], job["bandwidth_bytes_per_sec"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
