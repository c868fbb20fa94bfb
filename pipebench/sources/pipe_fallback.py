"""FALLBACK Pipe-mode reader in pure Python, for environments where PipeModeDataset does not exist.

It is not SageMaker's op, and every result it gives says so (`sources.pipe.reader: python`). It
speaks the same protocol, so it reads the emulator's channels and SageMaker's alike:
`inputdataconfig.json` must list the channel as Pipe; each iterator takes the next epoch index
from `<state_dir>/.<channel>-pipe_mode-state` under the op's own lock file (so it can share a
channel's state with the op); a missing FIFO is polled with sleeps of 1 s, 2 s, ...; records are
text lines (split on `\\n` only, as the op's TextLine reader) or TFRecord frames whose length CRC is
checked (the op checks that one, not the data CRC). Python hands records to TensorFlow in chunks,
so its cost shows against the op's, not per-element call overhead. One difference: it takes its
epoch index at an iterator's first read, the op when the iterator is made (TF's `repeat(n)` makes
one iterator more than it reads, which costs the op an epoch and the fallback none).
"""
from __future__ import annotations

import fcntl
import json
import struct
import time
from collections.abc import Iterator
from pathlib import Path

from pipebench.errors import TrialError

_READ_BYTES = 1 << 16  # as the op reads
_CHUNK_RECORDS = 256
_FIFO_WAIT_SEC = 120  # total of the growing sleeps before giving up on a missing FIFO


class FifoChannel:
    """One Pipe-mode channel read in Python: `chunks()` streams the next epoch's records in lists."""

    def __init__(self, channel: str, record_format: str, pipe_dir: str, state_dir: str, config_dir: str) -> None:
        config = json.loads((Path(config_dir) / "inputdataconfig.json").read_text())
        if (config.get(channel) or {}).get("TrainingInputMode", "").lower() != "pipe":
            raise TrialError(f"pipe fallback: channel {channel} is not a Pipe-mode channel in {config_dir}")
        self.channel, self.text = channel, record_format == "TextLine"
        self.pipe_dir, self.state_dir = Path(pipe_dir), Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)

    def next_epoch(self) -> int:
        """Give the epoch index this iterator reads and advance the shared one, under the op's lock."""
        with open(self.state_dir / f".{self.channel}-pipe_mode-lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            state = self.state_dir / f".{self.channel}-pipe_mode-state"
            index = int(state.read_text() or 0) if state.exists() else 0
            state.write_text(str(index + 1))
            return index

    def _wait_for(self, fifo: Path) -> None:
        sleep, slept = 0, 0
        while not fifo.exists():
            if slept >= _FIFO_WAIT_SEC:
                raise TrialError(f"pipe fallback: {fifo} did not appear within {_FIFO_WAIT_SEC} s")
            sleep += 1
            time.sleep(sleep)
            slept += sleep

    def chunks(self) -> Iterator[list[bytes]]:
        """Yield the next epoch's records, a list of up to 256 at a time."""
        fifo = self.pipe_dir / f"{self.channel}_{self.next_epoch()}"
        self._wait_for(fifo)
        with open(fifo, "rb", buffering=_READ_BYTES) as stream:
            records = _lines(stream) if self.text else _frames(stream, fifo)
            chunk: list[bytes] = []
            for record in records:
                chunk.append(record)
                if len(chunk) == _CHUNK_RECORDS:
                    yield chunk
                    chunk = []
            if chunk:
                yield chunk


def _lines(stream) -> Iterator[bytes]:
    for line in stream:
        yield line[:-1] if line.endswith(b"\n") else line


def _frames(stream, where: Path) -> Iterator[bytes]:
    from pipebench.converters.tfrecord import masked_crc32c

    while header := stream.read(12):
        if len(header) < 12:
            raise TrialError(f"pipe fallback: {where}: truncated TFRecord header")
        (length,), (crc,) = struct.unpack("<Q", header[:8]), struct.unpack("<I", header[8:])
        if masked_crc32c(header[:8]) != crc:
            raise TrialError(f"pipe fallback: {where}: invalid TFRecord header crc")
        data = stream.read(length)
        if len(data) < length or len(stream.read(4)) < 4:
            raise TrialError(f"pipe fallback: {where}: truncated TFRecord")
        yield data
