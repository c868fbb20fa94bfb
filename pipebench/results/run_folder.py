"""Run folders: made, locked and read in one place.

A run folder `results/<experiment>/<run-id>/` holds `config.yaml` (the resolved experiment),
`machine.json` (MachineFacts), `data.json` (DataFacts), `trials.parquet` and `samples.parquet`
(appended as trials finish), `summary.md`, `importances.json` (an Optuna study's), `capacity.json`
(per-stage cost profiles, once `pipebench capacity` has measured them) and one folder per trial. The set-up files are written once, with the folder, whole or not at all. Every part is read
here, and a part that exists but cannot be read is a one-line `FILE: reason` error, never a
default: a report of half a run folder would present guesses as measurements.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import functools
import json
import os
import secrets
import shutil
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from pipebench.atomic import atomic_dir, atomic_write_bytes, atomic_write_json, naming
from pipebench.datasets import DataFacts, DataSet
from pipebench.errors import ConfigError, DataError, OutputFolderError, ResultsVersionError, UsageError
from pipebench.measure.facts import MachineFacts
from pipebench.results.job import read_jobs
from pipebench.results.schema import SAMPLE_SCHEMA, TRIAL_SCHEMA
from pipebench.results.stage_costs import PROFILE_FILE, PROFILE_VERSION, CapacityProfiles
from pipebench.results.store import append_rows, check_table, read_table, write_table
from pipebench.results.study import StudyRecord, read_study
from pipebench.results.trial_row import TrialRow, records, rows_of
from pipebench.versioned import WAS, load_versioned

if TYPE_CHECKING:
    import pandas

    from pipebench.config import Experiment

TRIALS_FILE = "trials.parquet"
SAMPLES_FILE = "samples.parquet"
MACHINE_FILE = "machine.json"
DATA_FILE = "data.json"
CONFIG_FILE = "config.yaml"
SUMMARY_FILE = "summary.md"
#: Held (flock) by the process running the folder; names it: pid, host, start time.
LOCK_FILE = ".lock"
#: Written by `pipebench sagemaker collect`: the folder holds one run folder per job and host.
JOBS_FILE = "jobs.json"
TRIALS_DIR = "trials"


@dataclass(frozen=True)
class RunFolder:
    """One run's folder, with the facts it was set up with (what the trial loop writes into)."""

    path: Path
    machine: MachineFacts
    data: DataFacts

    @property
    def run_id(self) -> str:
        return self.path.name

    def trial_dir(self, trial_id: str) -> Path:
        return self.path / TRIALS_DIR / trial_id

    def rows(self) -> list[TrialRow]:
        """Give the trials measured so far, in the order they finished."""
        return rows_of(read_table(self.path / TRIALS_FILE, TRIAL_SCHEMA), str(self.path / TRIALS_FILE))

    def append(self, row: TrialRow, samples: list[dict]) -> None:
        """Store one finished trial's row and its samples (each table rewritten atomically)."""
        append_rows(self.path / TRIALS_FILE, TRIAL_SCHEMA, [row.to_dict()])
        if samples:
            append_rows(self.path / SAMPLES_FILE, SAMPLE_SCHEMA,
                        [{**s, "run_id": self.run_id, "trial_id": row.trial_id} for s in samples])

    def note_profile(self, trial_id: str, profile_dir: str) -> None:
        """Record in one trial's row the TensorBoard profile captured once the trials ran, as the row builder says
        (results.rows.profiled_row); trials.parquet is rewritten atomically."""
        import pyarrow as pa

        from pipebench.results.rows import profiled_row

        rows = [profiled_row(row, profile_dir) if row.trial_id == trial_id else row for row in self.rows()]
        write_table(self.path / TRIALS_FILE, pa.Table.from_pylist([row.to_dict() for row in rows], schema=TRIAL_SCHEMA))


@dataclass
class RunResults:
    """One run folder as reports read it: its tables, machine and data facts, resolved config and study."""

    run_dir: Path
    trials: pandas.DataFrame
    samples: pandas.DataFrame
    machine: MachineFacts
    data: DataFacts
    config: dict
    study: StudyRecord | None = None  # importances.json, when the run was an Optuna study
    capacity: CapacityProfiles | None = None  # capacity.json, once `pipebench capacity` has profiled the run

    @functools.cached_property
    def rows(self) -> list[TrialRow]:
        """Give the trials table's rows, typed (pipebench.results.trial_row); read once, on first use."""
        return records(self.trials)


def _folder(run_dir: Path) -> Path:
    """Give `run_dir` if it is a folder; UsageError when it is missing or a file."""
    run_dir = Path(run_dir)
    if not run_dir.exists():
        raise UsageError(f"{run_dir}: no such run folder")
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir}: a file, not a pipebench run folder")
    return run_dir


def member_runs(run_dir: Path) -> list[Path]:
    """Give the run folders a path stands for: a collected folder's members (one per job and host), else itself."""
    run_dir = Path(run_dir)
    jobs = run_dir / JOBS_FILE
    if not jobs.exists():
        return [run_dir]
    return [run_dir / job.run_dir for job in read_jobs(jobs)]


def read_machine(run_dir: Path) -> MachineFacts:
    """Give the run's machine facts; DataError if machine.json is missing or unreadable, ResultsVersionError
    for another layout (with what to do)."""
    path = Path(run_dir) / MACHINE_FILE
    if not path.exists():
        raise DataError(f"{path}: missing (every run writes its machine facts there)")
    return MachineFacts.load(path)


def read_data(run_dir: Path) -> DataFacts:
    """Give what the run's data.json says; ResultsVersionError for a folder of pipebench 0.1.0 (no data.json)."""
    path = Path(run_dir) / DATA_FILE
    if not path.exists():
        raise ResultsVersionError(f"{path}: missing (a run folder of pipebench 0.1.0): run `pipebench upgrade "
                                  f"{run_dir}`")
    return DataFacts.load(path)


def read_experiment(run_dir: Path, user_code: bool = False) -> Experiment:
    """Give the experiment the run was started with (its config.yaml, validated); ConfigError if invalid.

    Its function pipelines' files are read only with `user_code` (a resume runs them again, and they must not
    have changed); the run's results are read without them."""
    from pipebench.config import load_experiment

    path = Path(run_dir) / CONFIG_FILE
    if not path.exists():
        raise DataError(f"{path}: missing (every run writes its resolved experiment there)")
    return load_experiment(path, user_code=user_code)


def read_capacity(run_dir: Path) -> CapacityProfiles | None:
    """Give the run's per-stage cost profiles (capacity.json), None when the run has not been profiled;
    DataError if it cannot be read (ResultsVersionError, saying what to do, for another layout version)."""
    path = Path(run_dir) / PROFILE_FILE
    if not path.exists():
        return None
    return load_versioned(CapacityProfiles, path, PROFILE_VERSION, "a capacity profile",
                          f"run `pipebench capacity {run_dir}` again", WAS[PROFILE_FILE])


def load(run_dir: Path) -> RunResults:
    """Give every part of a run folder; UsageError if it is not one, DataError / ResultsVersionError /
    ConfigError naming the first part that cannot be read."""
    run_dir = _folder(run_dir)
    if (run_dir / JOBS_FILE).exists():
        raise UsageError(f"{run_dir}: a folder `pipebench sagemaker collect` wrote, which holds "
                         f"{len(member_runs(run_dir))} run folders: read it with load_many (report and checklist do)")
    if not (run_dir / TRIALS_FILE).exists():
        raise UsageError(f"{run_dir}: no {TRIALS_FILE}: not a pipebench run folder (or no trial has finished yet)")
    trials = read_table(run_dir / TRIALS_FILE, TRIAL_SCHEMA)
    samples = read_table(run_dir / SAMPLES_FILE, SAMPLE_SCHEMA)
    machine = read_machine(run_dir)
    data = read_data(run_dir)
    config = read_experiment(run_dir).resolved
    return RunResults(run_dir, trials.to_pandas(), samples.to_pandas(), machine, data, config, read_study(run_dir),
                      read_capacity(run_dir))


def load_resumed(run_dir: Path) -> Experiment:
    """Give the experiment of a run folder to resume, having checked every part a resume reads or appends to.

    A run killed before its first trial finished has no tables yet: it resumes from the start.
    """
    run_dir = _folder(run_dir)
    if not (run_dir / CONFIG_FILE).exists():
        raise UsageError(f"{run_dir}: no {CONFIG_FILE}: not a pipebench run folder")
    experiment = read_experiment(run_dir, user_code=True)
    open_run_folder(run_dir)
    for name, schema in ((TRIALS_FILE, TRIAL_SCHEMA), (SAMPLES_FILE, SAMPLE_SCHEMA)):
        if (run_dir / name).exists():
            check_table(run_dir / name, schema)
    return experiment


def open_run_folder(run_dir: Path) -> RunFolder:
    """Give an existing run folder with its facts, read back typed."""
    return RunFolder(Path(run_dir), read_machine(run_dir), read_data(run_dir))


def create_run_folder(experiment: Experiment, data: DataSet, machine: MachineFacts,
                      folder: Path | None = None) -> RunFolder:
    """Give a new run folder holding config.yaml, machine.json and data.json, whole or not at all: `folder` (a
    worker's --run-dir), else results/<experiment>/<run-id> (the run id sorts by time).

    A results folder that cannot be written is a one-line error naming it.
    """
    where = "--run-dir" if folder else "results"
    if folder is None:
        run_id = dt.datetime.now().strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)
        folder = Path(experiment["results"]) / experiment.name / run_id
    elif folder.exists():
        raise UsageError(f"{folder}: exists but is not a pipebench run folder (no {MACHINE_FILE})")
    try:
        with atomic_dir(folder) as tmp:
            atomic_write_bytes(tmp / CONFIG_FILE, experiment.to_yaml().encode())
            atomic_write_json(tmp / DATA_FILE, data.facts().to_json())
            atomic_write_json(tmp / MACHINE_FILE, machine.to_json())
    except OutputFolderError as err:
        raise ConfigError(f"{where}: {folder}: cannot create the run folder ({err.why})") from None
    except OSError as err:
        raise ConfigError(f"{where}: {folder}: cannot create the run folder ({err.strerror or err})") from None
    return RunFolder(folder, machine, data.facts())


def _owner(fd: int) -> str:
    """Give who holds a lock, from the lock file's text: `pid N on HOST since T`.

    The holder writes its name just after it takes the lock, so a process refused in between waits
    for the name a moment rather than report an unnamed owner, or the name a killed holder left (a
    pid on this host that no longer runs).
    """
    for _ in range(50):
        try:
            found = json.loads(os.pread(fd, 4096, 0).decode() or "null")
            named = f"pid {found['pid']} on {found['host']} since {found['since']}"
            if found["host"] != socket.gethostname() or psutil.pid_exists(int(found["pid"])):
                return named
        except (ValueError, TypeError, KeyError):
            pass
        time.sleep(0.02)
    return "owner not recorded"


@contextlib.contextmanager
def hold(run_dir: Path) -> Iterator[None]:
    """Hold the run folder's lock for the block; UsageError `RUN_DIR: already running (...)` if another process does.

    An exclusive flock on RUN_DIR/.lock, which names its holder (pid, host, start time). The kernel
    drops it when the holder dies, however (kill -9 included), so a stale .lock never blocks a resume;
    the holder removes the file when it lets go. On network file systems flock is only as good as the
    server's locking. Every driver holds it while it runs or resumes the folder, and it is what keeps
    two processes from running the same trials and appending over each other's rows.
    """
    path = Path(run_dir) / LOCK_FILE
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = _owner(fd)
            os.close(fd)
            raise UsageError(f"{run_dir}: already running ({owner})") from None
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)  # its holder removed the file between our open and our lock: lock the new one
    try:
        since = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": since}).encode(), 0)
        except OSError as err:  # a full disk: the write names no file
            raise naming(err, path) from err
        yield
    finally:
        os.unlink(path)  # before letting go: a waiting process then finds the path gone, and retries
        os.close(fd)


@contextlib.contextmanager
def own(run_dir: Path, created: bool) -> Iterator[None]:
    """Hold the run folder's lock for the block; a folder this run `created` is removed if the block
    fails before any trial row was written (nothing half-started is left behind)."""
    try:
        with hold(run_dir):
            yield
    except BaseException:
        if created and not (Path(run_dir) / TRIALS_FILE).exists():
            shutil.rmtree(run_dir, ignore_errors=True)
        raise
