"""Results of `pipebench run`: the only way notebooks and reports read them.

`load(run_dir)` gives a `RunResults` with pandas DataFrames, the trials' rows typed (`RunResults.rows`,
pipebench.results.trial_row) and typed machine and data facts;
`load_many` reads a collected folder as its member runs and refuses to mix machines or data sets
unless asked (checked metadata, as pyperf does). Both read through `pipebench.results.run_folder`,
which refuses a damaged folder with a one-line error naming the file.
"""
from __future__ import annotations

from pathlib import Path

from pipebench.errors import PipebenchError
from pipebench.results.run_folder import (CONFIG_FILE, DATA_FILE, JOBS_FILE, MACHINE_FILE, SAMPLES_FILE, SUMMARY_FILE,
                                          TRIALS_FILE, RunResults, load, member_runs)
from pipebench.results.study import IMPORTANCES_FILE

__all__ = ["CONFIG_FILE", "DATA_FILE", "IMPORTANCES_FILE", "JOBS_FILE", "MACHINE_FILE", "SAMPLES_FILE",
           "SUMMARY_FILE", "TRIALS_FILE", "RunResults", "load", "load_many", "member_runs"]


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
