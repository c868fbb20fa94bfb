"""Pipe mode: the local emulator speaks SageMaker's protocol, the real PipeModeDataset reads through it.

Emulator tests use plain FIFO reads and run everywhere; the PipeModeDataset tests need
sagemaker_tensorflow, which exists only in the TF 2.14 environment (scripts/setup.sh tf214).
"""
from __future__ import annotations

import contextlib
import gzip
import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest
from pipeline_fixtures import ROWS, batches, flat

from pipebench.errors import TrialError, UnavailableError
from pipebench.pipeline.presets import preset
from pipebench.sources.modes import in_source_mode
from pipebench.sources.pipe_emulator import ChannelFeed, PipeEmulator, channel_feed
from pipebench.sources.pipe_fallback import FifoChannel
from pipebench.sources.session import trial_sources
from pipebench.testing import alive, all_gone, trial_spec
from pipebench.typed import to_json

HAVE_PIPE = importlib.util.find_spec("sagemaker_tensorflow") is not None
needs_pipe = pytest.mark.skipif(not HAVE_PIPE, reason="sagemaker_tensorflow exists only in the TF 2.14 env "
                                                      "(scripts/setup.sh tf214)")


def _text_files(folder: Path, count: int, lines: int = 50) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(count):
        path = folder / f"part-{k}.txt"
        path.write_text("".join(f"file{k} line{j}\n" for j in range(lines)))
        paths.append(str(path))
    return paths


def _open_fifo(path: Path, timeout: float = 10.0):
    """Open an epoch's FIFO for reading once it exists, polling as PipeModeDataset does."""
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return open(path, "rb")


def _gone(pids: list[int], root: Path | None) -> bool:
    """Give whether every pid has exited within 10 s and `root` (if given) is removed by then."""
    return all_gone(pids, within_sec=10) and (root is None or not root.exists())


@pytest.mark.slow
def test_emulator_writes_sagemakers_config_and_streams_each_epoch_in_order(tmp_path):
    files = _text_files(tmp_path / "in", 3)
    whole = b"".join(Path(f).read_bytes() for f in files)
    root = tmp_path / "emu"
    with PipeEmulator(root, {"train": ChannelFeed(tuple(files))}, epochs=3) as emulator:
        config = json.loads((emulator.config_dir / "inputdataconfig.json").read_text())
        assert config["train"]["TrainingInputMode"] == "Pipe" and config["train"]["CompressionType"] == "None"
        assert sorted(os.listdir(emulator.pipe_dir)) == ["train_0", "train_1"]  # two epochs ahead, no more
        for epoch in range(3):
            with _open_fifo(emulator.fifo("train", epoch)) as fifo:
                assert fifo.read() == whole
        pids = emulator.writer_pids()
    assert _gone(pids, root)


@pytest.mark.slow
def test_emulator_shuffles_files_per_epoch_decompresses_gzip_and_caps_bandwidth(tmp_path):
    plain = _text_files(tmp_path / "in", 6)
    files = []
    for path in plain:
        with gzip.open(path + ".gz", "wb") as f:
            f.write(Path(path).read_bytes())
        files.append(path + ".gz")
    feed = channel_feed(files, shuffle_seed=3, bandwidth_bytes_per_sec=200_000)
    assert feed.gzip and feed.input_data_config()["ShuffleConfig"] == {"Seed": 3}
    orders = [feed.epoch_files(e) for e in range(2)]
    assert orders[0] != orders[1] and sorted(orders[0]) == sorted(files)
    with PipeEmulator(tmp_path / "emu", {"train": feed}, epochs=2) as emulator:
        for epoch in range(2):
            started = time.monotonic()
            with _open_fifo(emulator.fifo("train", epoch)) as fifo:
                got = fifo.read()
            assert time.monotonic() - started >= len(got) / 200_000 * 0.9  # the cap holds (a lower bound)
            assert got == b"".join(gzip.open(f).read() for f in orders[epoch])


@pytest.mark.slow
def test_emulator_cleans_up_after_an_error_and_reports_a_failed_writer(tmp_path):
    files = _text_files(tmp_path / "in", 1)
    root = tmp_path / "emu"
    with pytest.raises(RuntimeError, match="in the trial"):
        with PipeEmulator(root, {"train": ChannelFeed(tuple(files))}) as emulator:
            pids = emulator.writer_pids()
            raise RuntimeError("in the trial")
    assert _gone(pids, root)
    with pytest.raises(TrialError, match="writer of train_0 exited with code 1: .*FileNotFoundError"):
        with PipeEmulator(root, {"train": ChannelFeed((str(tmp_path / "missing"),))}, epochs=1) as emulator:
            with open(emulator.fifo("train", 0), "rb") as fifo:
                assert fifo.read() == b""
            # The reader's EOF comes before the writer's exit (its traceback, its interpreter's end): wait until the
            # supervisor has heard the exit, not a fixed 0.3 s (which a loaded machine overran: no error, flaky).
            deadline = time.monotonic() + 60
            while not emulator.failures and time.monotonic() < deadline:
                time.sleep(0.05)
    assert not root.exists()


_HOLDER = textwrap.dedent("""
    import json, sys, time
    from pipebench.sources.pipe_emulator import ChannelFeed, PipeEmulator
    with PipeEmulator(sys.argv[1], {"train": ChannelFeed((sys.argv[2],))}) as emulator:
        time.sleep(0.3)
        print(json.dumps(emulator.writer_pids()), flush=True)
        time.sleep(600)
""")


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL])
def test_no_writer_or_fifo_outlives_a_process_stopped_by_ctrl_c_or_kill_9(tmp_path, how):
    (path,) = _text_files(tmp_path / "in", 1)
    root = tmp_path / "emu"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(root), path], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    pids = json.loads(holder.stdout.readline())
    assert len(pids) == 2 and all(map(alive, pids))
    holder.send_signal(how)
    holder.wait(timeout=30)
    assert _gone(pids, None), "a writer outlived the process that started it"
    if how == signal.SIGINT:
        assert not root.exists() and "KeyboardInterrupt" in holder.stderr.read()
    else:  # nothing runs in a SIGKILLed process: its FIFOs stay for the scratch folder's owner (the manager)
        assert sorted(p.name for p in (root / "data").iterdir()) == ["train_0", "train_1"]


@pytest.mark.slow
def test_python_fallback_refuses_what_the_op_refuses(tmp_path):
    (path,) = _text_files(tmp_path / "in", 1)  # text, not TFRecord: its first 12 bytes are no valid header
    with PipeEmulator(tmp_path / "emu", {"train": ChannelFeed((path,))}, epochs=1) as emulator:
        folders = (str(emulator.pipe_dir), str(emulator.state_dir), str(emulator.config_dir))
        with pytest.raises(TrialError, match="channel other is not a Pipe-mode channel"):
            FifoChannel("other", "TFRecord", *folders)
        with pytest.raises(TrialError, match="train_0: invalid TFRecord header crc"):
            next(FifoChannel("train", "TFRecord", *folders).chunks())


def test_pipe_mode_drops_what_a_single_stream_cannot_have():
    spec, note = in_source_mode(preset("guide").with_source(buffer_size=1 << 20), "pipe")
    assert "interleave" not in spec.kinds and spec.source.mode == "pipe" and spec.source.buffer_size is None
    assert note == "pipe mode: interleave, buffer_size=1048576 dropped (one FIFO stream per channel)"
    assert in_source_mode(preset("aws-sample"), "pipe")[1] is None
    assert in_source_mode(preset("guide"), "fastfile") == (preset("guide").with_source(mode="fastfile"), None)


def test_every_pipeline_is_planned_in_each_source_mode_file_first():
    from pipebench.config import parse_experiment
    from pipebench.datasets import DataSet
    from pipebench.search.candidates import candidates
    from pipebench.search.grid import trials

    experiment = parse_experiment({"name": "x", "modes": ["input"], "measurement": {"repeats": 1}, "pipelines": {
        "presets": ["guide"], "formats": ["tfrecord"], "source_modes": ["pipe", "file"]}})
    data = DataSet({"tfrecord": ["part-0.tfrecord"]})
    found = candidates(experiment, data)
    assert [c.name_in_space for c in found] == ["guide:tfrecord", "guide:tfrecord@pipe"]
    assert found[1].label().semantics_why == "preset; pipe mode: interleave dropped (one FIFO stream per channel)"
    planned = trials(experiment, data)
    repeats = experiment["measurement"]["repeats"]
    assert sorted(t.label.source_mode for t in planned) == ["file"] * repeats + ["pipe"] * repeats  # seeded shuffle
    assert len({t.trial_id for t in planned}) == 2 * repeats
    assert all(to_json(t.sources) == experiment["sources"] for t in planned if t.label.source_mode == "pipe")


@pytest.mark.tf214
@pytest.mark.skipif(HAVE_PIPE, reason="checks the environments without sagemaker_tensorflow")
def test_pipe_is_unavailable_without_sagemaker_tensorflow_and_starts_no_writer(data, tmp_path):
    from pipebench.measure.build import build

    spec = preset("aws-sample", format="tfrecord", files=(data["tfrecord"],)).with_source(mode="pipe")
    with pytest.raises(UnavailableError, match=r"^unavailable: sagemaker_tensorflow is not importable .*tf214"):
        with trial_sources(spec, {}, tmp_path / "scratch"):
            pass
    assert not (tmp_path / "scratch").exists()
    with pytest.raises(UnavailableError, match="not importable"):
        build(spec, {"pipe": {"emulate": False}})


@pytest.mark.tf214
@pytest.mark.parametrize("reader", [pytest.param("op", marks=needs_pipe), "python"])
@pytest.mark.parametrize("fmt", ["tfrecord", "libsvm", "packed"])
def test_pipe_mode_through_the_emulator_yields_exactly_the_file_mode_rows_over_two_epochs(data, tmp_path, fmt,
                                                                                          reader):
    from pipebench.measure.build import build

    spec = preset("aws-sample", format=fmt, files=(data[fmt],), batch_size=100, epochs=2)
    if fmt == "packed":
        spec = spec.with_source(rows_per_record=16)
    file_rows = flat(batches(build(spec).dataset))
    pipe_spec, _ = in_source_mode(spec, "pipe")
    with trial_sources(pipe_spec, {"pipe": {"reader": reader}}, tmp_path / "scratch") as sources:
        built = build(pipe_spec, sources)
        assert (built.source_note or "").startswith("FALLBACK") == (reader == "python")
        pipe_rows = flat(batches(built.dataset))
        state = Path(sources["pipe"]["state_dir"]) / ".train-pipe_mode-state"
        # one iterator per epoch, as the op counts them, plus one: TF's repeat(2) makes its input's
        # iterator once more before it checks the count (the op opens train_2 and reads nothing;
        # the fallback takes its epoch at the first read, so it does not)
        assert state.read_text() == ("3" if reader == "op" else "2")
    assert len(file_rows) == 2 * ROWS and pipe_rows == file_rows
    assert not (tmp_path / "scratch" / "pipe").exists()


_READER = textwrap.dedent("""
    import json, os, sys, time
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    from sagemaker_tensorflow import PipeModeDataset
    pipe_dir, config_dir, state_dir, control, name = sys.argv[1:]
    dataset = PipeModeDataset("train", record_format="TextLine", pipe_dir=pipe_dir, config_dir=config_dir,
                              state_dir=state_dir)
    for turn in range(2):
        while not os.path.exists(f"{control}/{name}-go-{turn}"):
            time.sleep(0.02)
        iterator = iter(dataset)
        with open(f"{state_dir}/.train-pipe_mode-state") as f:
            epoch = int(f.read()) - 1
        lines = [line.numpy().decode() for line in iterator]
        with open(f"{control}/{name}-{turn}.part", "w") as f:
            json.dump({"epoch": epoch, "lines": lines}, f)
        os.replace(f"{control}/{name}-{turn}.part", f"{control}/{name}-{turn}.json")  # whole, or not there
""")


@pytest.mark.tf214
@needs_pipe
def test_two_readers_sharing_a_channel_take_alternate_epochs_as_on_sagemaker(tmp_path):
    files = _text_files(tmp_path / "in", 6, lines=20)
    feed = ChannelFeed(tuple(files), shuffle_seed=5)  # each epoch its own file order, so rows tell epochs apart
    control = tmp_path / "control"
    control.mkdir()
    with PipeEmulator(tmp_path / "emu", {"train": feed}) as emulator:
        folders = [str(emulator.pipe_dir), str(emulator.config_dir), str(emulator.state_dir)]
        readers = {name: subprocess.Popen([sys.executable, "-c", _READER, *folders, str(control), name],
                                          stderr=subprocess.PIPE, text=True) for name in ("a", "b")}
        try:
            got = {}
            for turn in range(2):
                for name in ("a", "b"):  # they take turns: a, b, a, b
                    (control / f"{name}-go-{turn}").touch()
                    out = control / f"{name}-{turn}.json"
                    deadline = time.monotonic() + 120
                    while not out.exists():
                        assert readers[name].poll() is None, readers[name].stderr.read()
                        assert time.monotonic() < deadline, f"reader {name} read nothing"
                        time.sleep(0.05)
                    got[name, turn] = json.loads(out.read_text())
        finally:
            for reader in readers.values():
                reader.kill()
                reader.wait()
    assert [got["a", t]["epoch"] for t in range(2)] == [0, 2]
    assert [got["b", t]["epoch"] for t in range(2)] == [1, 3]
    for result in got.values():
        expected = [line for path in feed.epoch_files(result["epoch"]) for line in Path(path).read_text().splitlines()]
        assert result["lines"] == expected  # each reader got whole epochs, just not all of them


class _WriterSpotter:
    """Stands in for the manager's sampler: notes the worker's writer processes while it runs."""

    def __init__(self, pid: int) -> None:
        self.pid, self.writers, self._stop = pid, set(), threading.Event()
        self._thread = threading.Thread(target=self._spot, daemon=True)

    def _spot(self) -> None:
        while not self._stop.wait(0.1):
            with contextlib.suppress(psutil.Error):
                self.writers |= {p.pid for p in psutil.Process(self.pid).children()
                                 if "pipebench.sources.pipe_writer" in " ".join(p.cmdline())}

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> list:
        self._stop.set()
        self._thread.join()
        return []


@pytest.mark.tf214
@needs_pipe
def test_a_pipe_trial_killed_at_its_timeout_leaves_no_writer_and_no_fifo(data, tmp_path):
    from pipebench.measure.manager import Limits, run_worker

    spec, _ = in_source_mode(preset("aws-sample", format="tfrecord", files=(data["tfrecord"],), batch_size=64,
                                     epochs=None), "pipe")
    trial = trial_spec(pipeline=spec, trial_id="killed",
                       measurement={"warmup_max_sec": 60.0, "window_sec": 60.0, "windows": 1, "steady_cv_pct": 0})
    trial_dir = tmp_path / "trial"
    spotted: list[_WriterSpotter] = []

    def spotter(pid: int) -> _WriterSpotter:
        spotted.append(_WriterSpotter(pid))
        return spotted[-1]

    outcome = run_worker(trial, trial_dir, Limits(timeout_sec=45, memory_cap_bytes=4 << 30), sampler_factory=spotter)
    writers = spotted[0].writers
    assert outcome.record.status.value == "timeout" and len(writers) >= 2
    assert _gone(writers, trial_dir / "scratch"), "the killed trial left a writer or its FIFOs"


@pytest.mark.tf214
def test_a_pipe_trial_rerun_after_its_manager_was_killed_finds_no_stale_fifo_folder(data, tmp_path):
    """kill -9 of `pipebench run` skips the manager's cleanup: the resumed trial must not trip over
    the scratch/pipe folder (with its FIFOs) the killed one left (it failed with FileExistsError)."""
    from pipebench.measure.manager import Limits, run_worker

    spec, _ = in_source_mode(preset("aws-sample", format="tfrecord", files=(data["tfrecord"],), batch_size=64,
                                     epochs=None), "pipe")
    trial = trial_spec(pipeline=spec, trial_id="resumed", sources={"pipe": {"reader": "python"}})
    trial_dir = tmp_path / "trial"
    stale = trial_dir / "scratch" / "pipe" / "data"
    stale.mkdir(parents=True)
    os.mkfifo(stale / "train_0")
    outcome = run_worker(trial, trial_dir, Limits(timeout_sec=120, memory_cap_bytes=4 << 30))
    assert outcome.record.status.value == "ok", outcome.record.reason
    assert not (trial_dir / "scratch").exists()
