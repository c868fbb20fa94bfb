"""Results of `pipebench run`: the only way notebooks and reports read them.

`load(run_dir)` gives a `RunResults` with pandas DataFrames; `load_many` refuses to mix machines or
data sets unless asked (checked metadata, as pyperf does).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from pipebench.datasets import DataFacts
from pipebench.errors import PipebenchError, ResultsVersionError
from pipebench.measure.facts import MachineFacts
from pipebench.results.schema import SAMPLE_SCHEMA, TRIAL_SCHEMA
from pipebench.results.store import read_table

TRIALS_FILE = "trials.parquet"
SAMPLES_FILE = "samples.parquet"
MACHINE_FILE = "machine.json"
DATA_FILE = "data.json"
CONFIG_FILE = "config.yaml"
SUMMARY_FILE = "summary.md"
#: Written by the Optuna driver after a study: Optuna's parameter importances, pins, references, best.
IMPORTANCES_FILE = "importances.json"
#: Written by `pipebench sagemaker collect`: the folder holds one run folder per job and host.
JOBS_FILE = "jobs.json"


@dataclass
class RunResults:
    """One run folder: its trials and samples tables, machine and data facts, and resolved config."""

    run_dir: Path
    trials: "pandas.DataFrame"  # noqa: F821
    samples: "pandas.DataFrame"  # noqa: F821
    machine: MachineFacts
    data: DataFacts
    config: dict
    study: dict | None = None  # importances.json, when the run was an Optuna study


def load(run_dir: Path) -> RunResults:
    """Read a run folder; ResultsVersionError for tables or facts of another version."""
    run_dir = Path(run_dir)
    if (run_dir / JOBS_FILE).exists():
        raise PipebenchError(f"{run_dir}: a folder `pipebench sagemaker collect` wrote, which holds "
                             f"{len(member_runs(run_dir))} run folders: read it with load_many (report and checklist do)")
    if not (run_dir / TRIALS_FILE).exists():
        raise PipebenchError(f"{run_dir}: no {TRIALS_FILE} (not a pipebench run folder?)")
    trials = read_table(run_dir / TRIALS_FILE, TRIAL_SCHEMA).to_pandas()
    samples = read_table(run_dir / SAMPLES_FILE, SAMPLE_SCHEMA).to_pandas()
    machine = MachineFacts.load(run_dir / MACHINE_FILE)
    if not (run_dir / DATA_FILE).exists():
        raise ResultsVersionError(f"{run_dir}: no {DATA_FILE} (a run folder of pipebench 0.1.0): "
                                  f"run `pipebench upgrade {run_dir}`")
    data = DataFacts.load(run_dir / DATA_FILE)
    config = yaml.safe_load((run_dir / CONFIG_FILE).read_text()) if (run_dir / CONFIG_FILE).exists() else {}
    study = json.loads((run_dir / IMPORTANCES_FILE).read_text()) if (run_dir / IMPORTANCES_FILE).exists() else None
    return RunResults(run_dir, trials, samples, machine, data, config, study)


def member_runs(run_dir: Path) -> list[Path]:
    """Give the run folders a path stands for: a collected folder's members (one per job and host), else itself."""
    run_dir = Path(run_dir)
    jobs = run_dir / JOBS_FILE
    if not jobs.exists():
        return [run_dir]
    return [run_dir / job["run_dir"] for job in json.loads(jobs.read_text())]


def load_many(run_dirs: list[Path], allow_mixed: bool = False) -> list[RunResults]:
    """Read several runs (a collected folder as its member runs); refuse different hosts or data unless `allow_mixed`."""
    runs = [load(d) for given in run_dirs for d in member_runs(given)]
    if not allow_mixed:
        for column in ("host_fingerprint", "data_fingerprint"):
            seen = {v for r in runs for v in r.trials[column].dropna().unique()}
            if len(seen) > 1:
                raise PipebenchError(f"runs differ in {column} ({len(seen)} values): comparing them compares "
                                     "machines or data, not pipelines; pass allow_mixed=True (--allow-mixed) "
                                     "to do it anyway")
    return runs
