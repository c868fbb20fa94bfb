"""The row builder: every trials.parquet column has exactly one producer, and every fact a producer
reports has a column — so nothing the worker, manager or sampler says is dropped or overwritten."""
from __future__ import annotations

import dataclasses
import json

import pytest

from report_fixtures import machine

from pipebench.measure.facts import MachineFacts
from pipebench.measure.manager import Outcome, ProcessFacts
from pipebench.measure.sampler import Usage
from pipebench.measure.trial import TrialRecord, TrialStatus
from pipebench.results.rows import COLUMNS, RowContext, trial_row, unproduced_fields
from pipebench.results.schema import TRIAL_SCHEMA
from pipebench.testing import trial_spec, windows_at

FACTS = MachineFacts.from_json(machine(instance_type="ml.c5.xlarge"), "machine.json")


def _usage(**values) -> Usage:
    return Usage(**{f.name: None for f in dataclasses.fields(Usage)} | {"samples": 3} | values)


def test_every_column_has_one_producer_and_every_reported_fact_a_column():
    assert set(COLUMNS) == set(TRIAL_SCHEMA.names)
    assert unproduced_fields() == {}


def test_worker_facts_outside_the_old_schema_reach_the_row():
    """unsupported_options and env_seen were dropped, so a row could claim tf.data options this TF never applied."""
    record = TrialRecord(TrialStatus.OK, examples_per_sec_median=10.0, unsupported_options=("autotune.ram_budget",),
                         windows_measured=windows_at("input", [10.0, 10.0]),
                         env_seen={"OMP_NUM_THREADS": "2"}, tensorflow_imported_before_settings=False,
                         source_note="EMULATED FastFile")
    row = trial_row(RowContext(trial_spec(), Outcome(record, ProcessFacts(5.0, 0, None, None, 100)), "run", "host",
                               FACTS, 0.0, 1.0))
    assert row.unsupported_options == ("autotune.ram_budget",)
    assert json.loads(row.env_seen_json) == {"OMP_NUM_THREADS": "2"}
    assert row.tensorflow_imported_before_settings is False and row.source_note == "EMULATED FastFile"
    assert row.status == "ok" and row.instance_type == "ml.c5.xlarge"


def test_duration_and_peak_come_from_the_manager_and_cpu_from_the_windows_only():
    """The sampler's 4 Hz span and peak used to overwrite the manager's finer figures."""
    outcome = Outcome(TrialRecord(TrialStatus.OK, examples_per_sec_median=1.0,
                                  windows_measured=windows_at("input", [1.0, 1.0])),
                      ProcessFacts(duration_sec=12.5, exit_code=0, signal=None, stderr_tail=None, rss_peak_bytes=777),
                      usage=_usage(cpu_pct_median=150.0, other_cpu_pct_median=3.0))
    row = trial_row(RowContext(trial_spec(), outcome, "run", "host", FACTS, 0.0, 1.0))
    assert (row.duration_sec, row.rss_peak_bytes) == (12.5, 777)
    assert row.cpu_pct_median == 150.0 and row.usage_samples == 3 and row.other_cpu_pct_median == 3.0


def test_a_train_rows_figures_and_verdict_come_from_its_paired_windows_with_intervals():
    windows = windows_at("train", [15_000, 14_800, 15_200, 15_000], synthetic=[20_000, 19_800, 20_300, 20_000],
                         waited=[0.30, 0.28, 0.32, 0.30])
    outcome = Outcome(TrialRecord(TrialStatus.OK, windows_measured=windows), ProcessFacts(1.0, 0, None, None, 1))
    row = trial_row(RowContext(trial_spec(mode="train"), outcome, "run", "host", FACTS, 0.0, 1.0))
    assert row.examples_per_sec_low < row.examples_per_sec_mean < row.examples_per_sec_high
    assert row.examples_per_sec_mean == pytest.approx(15_000, rel=1e-4)  # the geometric mean of the windows
    assert row.synthetic_examples_per_sec_mean == pytest.approx(20_025, rel=1e-4)
    assert row.input_wait_pct == pytest.approx(30.0)
    assert row.input_wait_low_pct < row.input_wait_pct < row.input_wait_high_pct
    assert row.input_slowdown_pct == pytest.approx(25.0, abs=0.2) and row.rounds is None
    assert row.input_bound == "highly input-bound" and row.input_bound_basis == "slowdown"
    # the slowdown's interval straddles 5% (2.0%, 9.1%, 3.8% in its rounds): undecided, whatever the waiting share says
    undecided = windows_at("train", [15_000] * 3, synthetic=[15_300, 16_500, 15_600], waited=[0.01, 0.01, 0.01])
    outcome = Outcome(TrialRecord(TrialStatus.OK, windows_measured=undecided), ProcessFacts(1.0, 0, None, None, 1))
    row = trial_row(RowContext(trial_spec(mode="train"), outcome, "run", "host", FACTS, 0.0, 1.0))
    assert row.input_bound == "inconclusive" and row.input_slowdown_low_pct < 5 < row.input_slowdown_high_pct
    assert row.input_wait_high_pct < 5  # the waiting share alone would have said "not input-bound"


#: A CPU trainer's case from the quick run: the step barely waits (2%), yet input costs 41% of training speed.
_SHARED_CORES = windows_at("train", [19_000, 19_300, 18_800, 19_100], synthetic=[32_200, 32_500, 32_000, 32_300],
                           waited=[0.020, 0.021, 0.019, 0.020])


@pytest.mark.parametrize(("trainer", "device", "basis", "verdict"), [
    ("auto", "CPU", "slowdown", "highly input-bound"),
    ("auto", "GPU", "waiting", "not input-bound"),  # a fake accelerator trial: the worker placed the step on a GPU
    ("accelerator", "CPU", "waiting", "not input-bound"),  # the user trains elsewhere: --trainer accelerator
    ("cpu", "GPU", "slowdown", "highly input-bound"),
])
def test_the_verdict_reads_the_slowdown_for_a_cpu_trainer_and_the_waiting_share_for_an_accelerator(
        trainer, device, basis, verdict):
    spec = trial_spec(mode="train")
    spec = dataclasses.replace(spec, measurement=dataclasses.replace(spec.measurement, trainer=trainer))
    record = TrialRecord(TrialStatus.OK, windows_measured=_SHARED_CORES, train_device=device)
    row = trial_row(RowContext(spec, Outcome(record, ProcessFacts(1.0, 0, None, None, 1)), "run", "host", FACTS,
                               0.0, 1.0))
    assert (row.input_bound_basis, row.input_bound, row.train_device) == (basis, verdict, device)
    assert row.input_slowdown_low_pct > 20 and row.input_wait_high_pct < 5  # the same windows either way


def test_a_trial_is_flagged_busy_when_other_processes_used_the_machine_during_its_windows():
    for other, busy in ((80.0, True), (3.0, False)):
        outcome = Outcome(TrialRecord(TrialStatus.OK, windows_measured=windows_at("input", [1.0, 1.0])),
                          ProcessFacts(1.0, 0, None, None, 1), usage=_usage(other_cpu_pct_median=other))
        assert trial_row(RowContext(trial_spec(), outcome, "run", "host", FACTS, 0.0, 1.0)).busy_machine is busy
