"""`pipebench run`: materialise data, plan trials, run each in a worker, store rows, summarise.

A run folder `results/<experiment>/<run-id>/` holds `config.yaml` (resolved), `machine.json`,
`trials.parquet`, `samples.parquet`, `summary.md` and one folder per trial (its spec, record and
stderr). Rows are appended as trials finish; `--resume RUN_DIR` skips the trials already there.
The process running or resuming a folder holds its lock (`pipebench.results.run_folder.hold`), so a
second one is refused instead of running the same trials again.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pipebench.config import Experiment
from pipebench.measure import stats
from pipebench.measure.manager import Limits, run_worker
from pipebench.results import SAMPLES_FILE, SUMMARY_FILE, TRIALS_FILE
from pipebench.results.run_folder import new_run_dir, own, read_machine
from pipebench.results.schema import SAMPLE_SCHEMA, TRIAL_SCHEMA
from pipebench.results.store import append_rows, read_table

if TYPE_CHECKING:
    from pipebench.datasets import DataSet

_MIN_TRIALS_FOR_FAILURE_BUDGET = 4


def _utc(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Outcome:
    """What a run gives back: its folder, and why it stopped early (None when it ran to its end)."""

    run_dir: Path
    stopped: str | None = None
    failure_budget_spent: bool = False  # stopped because too many trials failed (exit 3 on the CLI)


class _Progress:
    """One line per finished trial: done / total, the best so far, an ETA."""

    def __init__(self, total: int, already: int, stream=sys.stderr) -> None:
        self.total, self.done, self.started, self.stream = total, already, time.monotonic(), stream
        self.ran = 0
        self.best: tuple[float, str] | None = None

    def update(self, row: dict) -> None:
        self.done += 1
        self.ran += 1
        rate = row.get("examples_per_sec_median")
        source = f"@{row['source_mode']}" if row.get("source_mode") not in (None, "file") else ""
        label = f"{row['pipeline']} {row['format']}{source} {row['mode']} b{row['batch_size']}"
        if rate and row["mode"] == "train" and (self.best is None or rate > self.best[0]):
            self.best = (rate, label)
        eta = (time.monotonic() - self.started) / self.ran * (self.total - self.done)
        result = f"{rate:,.0f} ex/s" if rate else f"{row['status']}: {row['reason']}"
        best = f" | best train {self.best[0]:,.0f} ex/s ({self.best[1]})" if self.best else ""
        print(f"[{self.done}/{self.total}] {label}: {result}{best} | ETA {eta / 60:.1f} min",
              file=self.stream, flush=True)


def trial_row(trial: dict, record: dict, sampler: dict, run_id: str, machine: dict, started: float) -> dict:
    """Give the results row of one finished trial (any driver)."""
    threads, env = trial["threads"], trial["env"]
    row = {
        "run_id": run_id, "trial_id": trial["trial_id"], "repeat": trial["repeat"],
        "host": socket.gethostname(), "host_fingerprint": machine.get("host_fingerprint"),
        "instance_type": (machine.get("sagemaker") or {}).get("instance_type"), "tf_version": record.get("tf_version"),
        "started_utc": _utc(started), "ended_utc": _utc(time.time()),
        "mode": trial["mode"], **trial["describe"], "pipeline_fingerprint": trial["pipeline_fingerprint"],
        "data_fingerprint": trial["data_fingerprint"], "config_key": trial["compute_key"],
        "batch_size": trial["batch_size"], "intra_op_threads": threads["intra"], "inter_op_threads": threads["inter"],
        "params_json": json.dumps({k: trial[k] for k in ("pipeline", "batch_size", "threads", "env", "model",
                                                         "measurement", "sources") if k in trial}, sort_keys=True),
        **{f"env_{name}": env.get(name) for name in ("OMP_NUM_THREADS", "KMP_AFFINITY", "KMP_BLOCKTIME",
                                                     "KMP_SETTINGS", "TF_ENABLE_ONEDNN_OPTS")},
    }
    row.update({k: v for k, v in record.items() if k in TRIAL_SCHEMA.names and k not in row})
    row.update({k: v for k, v in sampler.items() if k in TRIAL_SCHEMA.names and v is not None})
    return row


def _attach_input_fraction(row: dict, rows: list[dict]) -> None:
    """Fill a train row's input fraction from the synthetic row of the same compute setting."""
    if row["mode"] != "train" or row["status"] != "ok":
        return
    ceiling = next((r for r in rows if r["mode"] == "synthetic" and r["status"] == "ok"
                    and r["config_key"] == row["config_key"]), None)
    if ceiling is None:
        return
    fraction = stats.input_fraction(row["examples_per_sec_median"], ceiling["examples_per_sec_median"])
    row["input_fraction"] = fraction
    row["input_bound"] = stats.input_bound_label(fraction)
    # DS-Analyzer's prep stall (warm data vs synthetic) is the same ratio, kept under its own name.
    row["prep_stall_pct"] = stats.stall_pct(row["examples_per_sec_median"], ceiling["examples_per_sec_median"])


def run(experiment: Experiment, run_dir: Path | None = None, log=print) -> Path:
    """Run (or resume, when run_dir is given) the experiment; give the run folder (`execute` says why it stopped)."""
    return execute(experiment, run_dir, log).run_dir


def execute(experiment: Experiment, run_dir: Path | None = None, log=print) -> Outcome:
    """Run (or resume, when run_dir is given) the experiment, holding its folder's lock; give the outcome."""
    if experiment["search"]["driver"] == "optuna":
        from pipebench.search.study import search

        return search(experiment, run_dir, log)
    from pipebench.datasets import materialise
    from pipebench.measure.machine import machine_facts
    from pipebench.search.grid import trials as plan

    with contextlib.ExitStack() as owned:
        if run_dir is not None:  # a resume: refuse a second process on the folder before any work
            owned.enter_context(own(run_dir, created=False))
        data = materialise(experiment, log=log)
        planned = plan(experiment, data)
        if run_dir is None:  # a new run: created only now, so a failure above leaves no folder behind
            run_dir = new_run_dir(experiment, machine_facts())
            owned.enter_context(own(run_dir, created=True))
        return _run_grid(experiment, run_dir, data, planned, log)


def _run_grid(experiment: Experiment, run_dir: Path, data: DataSet, planned: list[dict], log) -> Outcome:
    """Run the planned trials the folder does not hold yet, append their rows, summarise; give the outcome."""
    from pipebench.measure.sampler import Sampler
    from pipebench.report.summary import best_table, verdicts, write_summary

    machine = read_machine(run_dir)
    run_id = run_dir.name
    previous = read_table(run_dir / TRIALS_FILE, TRIAL_SCHEMA).to_pylist()
    done = {r["trial_id"] for r in previous}
    budget = experiment["budget"]
    limits = Limits(budget["trial_timeout_sec"], budget["memory_cap_mb"] << 20)
    hz = experiment["measurement"]["sample_hz"]
    todo = [t for t in planned if t["trial_id"] not in done]
    if budget["max_trials"] is not None:
        todo = todo[: max(0, budget["max_trials"] - len(done))]
    log(f"run {run_dir}: {len(planned)} trials planned, {len(done)} done before, {len(todo)} to run")
    progress = _Progress(len(done) + len(todo), len(done))
    rows = list(previous)
    deadline = time.monotonic() + budget["max_minutes"] * 60 if budget["max_minutes"] else None
    stopped, spent = None, False
    for trial in todo:
        if deadline is not None and time.monotonic() > deadline:
            stopped = f"time budget of {budget['max_minutes']} min used up"
            break
        started = time.time()
        files = trial["pipeline"]["source"]["files"] if experiment["measurement"]["page_cache"] else ()
        outcome = run_worker(trial, run_dir / "trials" / trial["trial_id"], limits,
                             sampler_factory=lambda pid: Sampler(pid, 1.0 / hz, data_files=files))
        row = trial_row(trial, outcome.record, outcome.sampler_summary, run_id, machine, started)
        _attach_input_fraction(row, rows)
        rows.append(row)
        append_rows(run_dir / TRIALS_FILE, TRIAL_SCHEMA, [row])
        if outcome.samples:
            append_rows(run_dir / SAMPLES_FILE, SAMPLE_SCHEMA,
                        [{**s, "run_id": run_id, "trial_id": trial["trial_id"]} for s in outcome.samples])
        progress.update(row)
        failed = sum(r["status"] not in ("ok", "unavailable") for r in rows)
        if len(rows) >= _MIN_TRIALS_FOR_FAILURE_BUDGET and failed / len(rows) > budget["max_failure_rate"]:
            stopped = f"{failed} of {len(rows)} trials failed, past max_failure_rate {budget['max_failure_rate']}"
            spent = True
            break
    write_summary(run_dir, rows, machine, data, stopped)
    log(best_table(rows))
    log("\n".join(verdicts(rows)))
    log(f"results: {run_dir} (summary: {run_dir / SUMMARY_FILE})" + (f"; stopped early: {stopped}" if stopped else ""))
    return Outcome(run_dir, stopped, spent)
