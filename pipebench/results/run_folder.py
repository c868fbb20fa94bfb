"""A run folder `results/<experiment>/<run-id>/`: made and read in one place.

It holds `config.yaml` (the resolved experiment), `machine.json` (MachineFacts), `data.json`
(DataFacts), `trials.parquet`, `samples.parquet`, `summary.md` and one folder per trial (its
spec, record and stderr). The set-up files are written once, when the folder is made; a resumed
run, or a `pipebench worker` joining with its own `--run-dir`, reads them back typed.
"""
from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass
from pathlib import Path

import yaml

from pipebench.atomic import atomic_write_bytes, atomic_write_json
from pipebench.config import Experiment, parse_experiment
from pipebench.datasets import DataFacts, DataSet
from pipebench.errors import ConfigError
from pipebench.measure.facts import MachineFacts
from pipebench.results import CONFIG_FILE, DATA_FILE, MACHINE_FILE, SAMPLES_FILE, TRIALS_FILE
from pipebench.results.schema import SAMPLE_SCHEMA, TRIAL_SCHEMA
from pipebench.results.store import append_rows, read_table

TRIALS_DIR = "trials"


@dataclass(frozen=True)
class RunFolder:
    """One run's folder, with the facts it was set up with."""

    path: Path
    machine: MachineFacts
    data: DataFacts

    @property
    def run_id(self) -> str:
        return self.path.name

    def trial_dir(self, trial_id: str) -> Path:
        return self.path / TRIALS_DIR / trial_id

    def rows(self) -> list[dict]:
        """Give the trials measured so far, in the order they finished."""
        return read_table(self.path / TRIALS_FILE, TRIAL_SCHEMA).to_pylist()

    def append(self, row: dict, samples: list[dict]) -> None:
        """Store one finished trial's row and its samples (each table rewritten atomically)."""
        append_rows(self.path / TRIALS_FILE, TRIAL_SCHEMA, [row])
        if samples:
            append_rows(self.path / SAMPLES_FILE, SAMPLE_SCHEMA,
                        [{**s, "run_id": self.run_id, "trial_id": row["trial_id"]} for s in samples])


def new_run_dir(experiment: Experiment) -> Path:
    """Give a fresh results/<experiment>/<run-id> folder (the run id sorts by time)."""
    run_id = dt.datetime.now().strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)
    folder = Path(experiment["results"]) / experiment.name / run_id
    folder.mkdir(parents=True)
    return folder


def load_resumed(run_dir: Path) -> Experiment:
    """Give the experiment a run folder was started with (its resolved config.yaml)."""
    path = Path(run_dir) / CONFIG_FILE
    if not path.exists():
        raise ConfigError(f"{run_dir}: no {CONFIG_FILE}; not a pipebench run folder")
    return parse_experiment(yaml.safe_load(path.read_text()), str(path), path)


def prepare_run_folder(experiment: Experiment, data: DataSet, run_dir: Path | None = None,
                       instance_type: str | None = None) -> RunFolder:
    """Give the run folder, made with its set-up files when new (or when `run_dir` has none yet).

    `instance_type` is what the user asserts this host is (`--instance-type`); machine facts record
    it as asserted, never as a SageMaker job.
    """
    from pipebench.measure.machine import machine_facts

    path = new_run_dir(experiment) if run_dir is None else Path(run_dir)
    if not (path / MACHINE_FILE).exists():  # a new run, or a worker's own --run-dir
        path.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path / CONFIG_FILE, experiment.to_yaml().encode())
        atomic_write_json(path / DATA_FILE, data.facts().to_json())
        atomic_write_json(path / MACHINE_FILE, machine_facts(instance_type).to_json())
    return RunFolder(path, MachineFacts.load(path / MACHINE_FILE), DataFacts.load(path / DATA_FILE))
