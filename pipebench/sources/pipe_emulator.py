"""A local SageMaker Pipe-mode channel, so the real `PipeModeDataset` op runs unchanged.

What SageMaker does for a Pipe channel, and what `PipeEmulator` reproduces on one host:

- `<config_dir>/inputdataconfig.json` lists the channel with `TrainingInputMode: Pipe`
  (PipeModeDataset refuses a channel that is not there or not Pipe);
- epoch N of channel C is the FIFO `<pipe_dir>/C_N`, made before a reader looks for it (the op
  polls for a missing FIFO with sleeps of 1 s, 2 s, 3 s ...), and one writer process per epoch
  streams the channel's files into it in order, then closes it: end of epoch;
- optional per-epoch shuffle of the file order from a seed (SageMaker's `ShuffleConfig`), gzip
  objects decompressed (`CompressionType: Gzip`), and a bandwidth cap;
- the op keeps the epoch index in `<state_dir>/.C-pipe_mode-state` and advances it once per
  iterator; every emulator has its own fresh state_dir.

`ahead` epochs' FIFOs per channel wait for a reader at any time (the next one is made the moment
a reader opens one, so even tiny epochs never wait for the op's 1 s poll); a finished epoch's FIFO
is removed. Two reader processes sharing a channel on one host (and its state_dir) advance one shared
epoch index, so they take alternate epochs, as on SageMaker: one channel per worker.

On exit — success, an exception, Ctrl-C — the writers are killed and the folder with the FIFOs is
removed. Writers also die with the thread that started them (PR_SET_PDEATHSIG), so a SIGKILLed
process leaves no writer; its folder is then removed by whoever owns the scratch space (the trial
manager removes each trial's scratch folder).
"""
from __future__ import annotations

import json
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipebench.children import last_stderr_line
from pipebench.errors import TrialError


@dataclass(frozen=True)
class ChannelFeed:
    """What one channel streams each epoch: its files in order, as stored (gzip or not)."""

    files: tuple[str, ...]
    gzip: bool = False
    shuffle_seed: int | None = None
    bandwidth_bytes_per_sec: float | None = None

    def input_data_config(self) -> dict:
        """Give the channel's entry in inputdataconfig.json, as SageMaker writes it."""
        entry = {"TrainingInputMode": "Pipe", "S3DistributionType": "FullyReplicated",
                 "RecordWrapperType": "None", "CompressionType": "Gzip" if self.gzip else "None"}
        if self.shuffle_seed is not None:
            entry["ShuffleConfig"] = {"Seed": self.shuffle_seed}
        return entry

    def epoch_files(self, epoch: int) -> list[str]:
        """Give the files in the order epoch `epoch` streams them (shuffled per epoch when seeded)."""
        files = list(self.files)
        if self.shuffle_seed is not None:
            random.Random(f"{self.shuffle_seed}:{epoch}").shuffle(files)
        return files


@dataclass
class _Writer:
    channel: str
    epoch: int
    fifo: Path
    stderr_path: Path
    process: subprocess.Popen
    opened: bool = False  # its reader has arrived


class PipeEmulator:
    """Context manager: the FIFOs, config and state folders of Pipe-mode channels, fed by writer processes.

    `root` (created here, removed on exit; a new temp folder when None) holds `data/` (pipe_dir),
    `config/` (config_dir), `state/` (state_dir) and the writers' stderr. `epochs` None streams
    as many epochs as readers ask for; `ahead` epochs per channel wait for a reader at any time.
    """

    def __init__(self, root: str | Path | None, channels: Mapping[str, ChannelFeed], epochs: int | None = None,
                 ahead: int = 2) -> None:
        if not channels:
            raise TrialError("pipe emulator: no channels")
        self.root = Path(root) if root is not None else None
        self.channels = dict(channels)
        self.epochs = epochs
        self.ahead = ahead
        self.failures: list[str] = []
        self._writers: list[_Writer] = []
        self._next_epoch = dict.fromkeys(self.channels, 0)
        self._stopping = False
        self._wake_r, self._wake_w = -1, -1
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._thread_error: BaseException | None = None

    @property
    def pipe_dir(self) -> Path:
        return self._root() / "data"

    @property
    def config_dir(self) -> Path:
        return self._root() / "config"

    @property
    def state_dir(self) -> Path:
        return self._root() / "state"

    def _root(self) -> Path:
        if self.root is None:
            raise TrialError("pipe emulator: not started (use it in a `with` block)")
        return self.root

    def fifo(self, channel: str, epoch: int) -> Path:
        return self.pipe_dir / f"{channel}_{epoch}"

    def writer_pids(self) -> list[int]:
        """Give the process ids of the writers now running."""
        with self._lock:
            return [w.process.pid for w in self._writers]

    def __enter__(self) -> PipeEmulator:
        if self.root is None:
            self.root = Path(tempfile.mkdtemp(prefix="pipebench-pipe-"))
        else:
            self.root.mkdir(parents=True)
        for folder in (self.pipe_dir, self.config_dir, self.state_dir, self.root / "writers"):
            folder.mkdir(exist_ok=True)
        config = {name: feed.input_data_config() for name, feed in self.channels.items()}
        (self.config_dir / "inputdataconfig.json").write_text(json.dumps(config, indent=2))
        self._wake_r, self._wake_w = os.pipe()
        started = threading.Event()
        self._thread = threading.Thread(target=self._supervise, args=(started,), name="pipe-emulator", daemon=True)
        self._thread.start()
        started.wait()
        if self._thread_error is not None:
            self.close()
            raise TrialError(f"pipe emulator: {self._thread_error}")
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()
        if exc_type is None and self.failures:
            raise TrialError(f"pipe emulator: {self.failures[0]}")

    def close(self) -> None:
        """Stop the writers and remove every FIFO and folder; safe to call twice."""
        self._stopping = True
        if self._thread is not None:
            os.write(self._wake_w, b"x")
            self._thread.join()
            self._thread = None
            os.close(self._wake_r)
            os.close(self._wake_w)
        with self._lock:
            for writer in self._writers:
                if (writer.process.poll() or 0) > 0:  # failed before the supervisor heard of it
                    self.failures.append(f"writer of {writer.fifo.name} exited with code "
                                         f"{writer.process.returncode}: {last_stderr_line(writer.stderr_path)}")
                writer.process.kill()
                writer.process.wait()
                writer.process.stdout.close()
            self._writers.clear()
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)

    def _supervise(self, started: threading.Event) -> None:
        """Keep `ahead` epochs per channel waiting for a reader; reap writers as they finish.

        Writers report on stdout when their reader arrives and close it when they exit, so this
        thread sleeps in select() and reacts at once, without polling. Writers are started from
        this thread, so PR_SET_PDEATHSIG ties them to it: when it ends (close, or the process
        dying) they are killed.
        """
        try:
            self._refill()
        except BaseException as err:  # noqa: BLE001 — reported by __enter__
            self._thread_error = err
        started.set()
        while self._thread_error is None and not self._stopping:
            with self._lock:
                outputs = {w.process.stdout.fileno(): w for w in self._writers}
            ready, _, _ = select.select([self._wake_r, *outputs], [], [])
            try:
                for fd in ready:
                    if fd in outputs:
                        self._hear(outputs[fd])
                self._refill()
            except OSError as err:  # e.g. the folder vanished under us: stop feeding, report on exit
                self.failures.append(f"emulator stopped: {err}")
                return

    def _hear(self, writer: _Writer) -> None:
        """Take a writer's news: its reader arrived, or it exited (then its FIFO goes)."""
        news = os.read(writer.process.stdout.fileno(), 64)
        if news:
            writer.opened = True
            return
        code = writer.process.wait()
        writer.process.stdout.close()
        writer.fifo.unlink(missing_ok=True)
        with self._lock:
            self._writers.remove(writer)
        if code != 0 and not self._stopping:
            self.failures.append(f"writer of {writer.fifo.name} exited with code {code}: {last_stderr_line(writer.stderr_path)}")

    def _refill(self) -> None:
        with self._lock:
            for channel, feed in self.channels.items():
                while sum(w.channel == channel and not w.opened for w in self._writers) < self.ahead and \
                        (self.epochs is None or self._next_epoch[channel] < self.epochs):
                    self._writers.append(self._start_writer(channel, feed, self._next_epoch[channel]))
                    self._next_epoch[channel] += 1

    def _start_writer(self, channel: str, feed: ChannelFeed, epoch: int) -> _Writer:
        fifo = self.fifo(channel, epoch)
        os.mkfifo(fifo)
        job = {"fifo": str(fifo), "files": feed.epoch_files(epoch), "gzip": feed.gzip,
               "bandwidth_bytes_per_sec": feed.bandwidth_bytes_per_sec, "parent_pid": os.getpid()}
        stderr_path = self._root() / "writers" / f"{channel}_{epoch}.stderr"
        with open(stderr_path, "wb") as stderr:
            process = subprocess.Popen([sys.executable, "-m", "pipebench.sources.pipe_writer", json.dumps(job)],
                                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr)
        return _Writer(channel, epoch, fifo, stderr_path, process)


def channel_feed(files: Sequence[str], shuffle_seed: int | None = None,
                 bandwidth_bytes_per_sec: float | None = None) -> ChannelFeed:
    """Give a feed for `files`, declared Gzip when they are gzip objects (read from their first bytes)."""
    if not files:
        raise TrialError("pipe emulator: the channel has no files to stream")
    with open(files[0], "rb") as f:
        gzipped = f.read(2) == b"\x1f\x8b"
    return ChannelFeed(tuple(files), gzipped, shuffle_seed, bandwidth_bytes_per_sec)
