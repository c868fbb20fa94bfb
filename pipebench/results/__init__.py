"""Results of `pipebench run`: the only way notebooks and reports read them.

`load(run_dir)` gives a `RunResults` with pandas DataFrames; `load_many` refuses to mix machines or
data sets unless asked (checked metadata, as pyperf does).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from pipebench.errors import PipebenchError
from pipebench.results.schema import SAMPLE_SCHEMA, TRIAL_SCHEMA
from pipebench.results.store import read_table

TRIALS_FILE = "trials.parquet"
SAMPLES_FILE = "samples.parquet"
MACHINE_FILE = "machine.json"
CONFIG_FILE = "config.yaml"
SUMMARY_FILE = "summary.md"
#: Written by the Optuna driver after a study: Optuna's parameter importances, pins, references, best.
IMPORTANCES_FILE = "importances.json"


@dataclass
class RunResults:
    """One run folder: its trials and samples tables, machine facts and resolved config."""

    run_dir: Path
    trials: "pandas.DataFrame"  # noqa: F821
    samples: "pandas.DataFrame"  # noqa: F821
    machine: dict
    config: dict
    study: dict | None = None  # importances.json, when the run was an Optuna study


def load(run_dir: Path) -> RunResults:
    """Read a run folder; ResultsVersionError for tables of another schema version."""
    run_dir = Path(run_dir)
    if not (run_dir / TRIALS_FILE).exists():
        raise PipebenchError(f"{run_dir}: no {TRIALS_FILE} (not a pipebench run folder?)")
    trials = read_table(run_dir / TRIALS_FILE, TRIAL_SCHEMA).to_pandas()
    samples = read_table(run_dir / SAMPLES_FILE, SAMPLE_SCHEMA).to_pandas()
    machine = json.loads((run_dir / MACHINE_FILE).read_text()) if (run_dir / MACHINE_FILE).exists() else {}
    config = yaml.safe_load((run_dir / CONFIG_FILE).read_text()) if (run_dir / CONFIG_FILE).exists() else {}
    study = json.loads((run_dir / IMPORTANCES_FILE).read_text()) if (run_dir / IMPORTANCES_FILE).exists() else None
    return RunResults(run_dir, trials, samples, machine, config, study)


def load_many(run_dirs: list[Path], allow_mixed: bool = False) -> list[RunResults]:
    """Read several runs; refuse different hosts or data unless `allow_mixed`."""
    runs = [load(d) for d in run_dirs]
    if not allow_mixed:
        for column in ("host_fingerprint", "data_fingerprint"):
            seen = {v for r in runs for v in r.trials[column].dropna().unique()}
            if len(seen) > 1:
                raise PipebenchError(f"runs differ in {column} ({len(seen)} values): comparing them compares "
                                     "machines or data, not pipelines; pass allow_mixed=True (--allow-mixed) "
                                     "to do it anyway")
    return runs
