"""The typed records of a trial and a study: TrialRow (one trials.parquet row, read in one place), TrialSpec's
blocks (the schema's keys, no others), TrialRecord's invariants and importances.json (StudyRecord).

No process, no TensorFlow: rows are made by the real row builder (report_fixtures) and stored in real Parquet.
"""
from __future__ import annotations

import dataclasses
import json
import typing

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from report_fixtures import VECTORIZED, machine, make_run, row_of, study_record, trial

import pipebench.results as results
from pipebench.config import resolve_block, typed_block
from pipebench.errors import ConfigError, DataError
from pipebench.measure.trial import Measurement, Model, Quality, Sources, TrialRecord, TrialSpec, TrialStatus
from pipebench.results.schema import TRIAL_SCHEMA, VERSION_KEY
from pipebench.results.store import read_table
from pipebench.results.study import IMPORTANCES_FILE, Unavailable, read_study, write_study
from pipebench.results.trial_row import TrialRow, records, rows_of
from pipebench.testing import trial_spec, windows_at
from pipebench.typed import from_json, to_json

#: The Python type each Arrow type of the schema is read as.
_PYTHON = {pa.string(): str, pa.int64(): int, pa.float64(): float, pa.bool_(): bool,
           pa.list_(pa.string()): tuple[str, ...], pa.list_(pa.float64()): tuple[float, ...]}


def _row(**changes) -> TrialRow:
    return dataclasses.replace(trial("t", "train", "aws-sample", "tfrecord", VECTORIZED, 1000.0, ["data/x"]),
                               **changes)


def test_a_row_has_every_column_of_the_schema_in_its_order_and_type():
    hints = typing.get_type_hints(TrialRow)
    assert [f.name for f in dataclasses.fields(TrialRow)] == TRIAL_SCHEMA.names
    for field in TRIAL_SCHEMA:
        kind = _PYTHON[field.type]
        assert hints[field.name] in (kind, kind | None), field.name


def test_a_stored_row_reads_back_equal_from_parquet_and_from_its_dataframe(tmp_path):
    """pandas holds a whole-number column with nulls as floats and lists as arrays: the reader gives ints and tuples."""
    rows = [_row(intra_op_threads=2), _row(trial_id="u", knobs_not_applied=("x: no such stage",))]
    run = results.load(make_run(tmp_path / "run", rows, machine()))
    assert run.rows == records(run.trials) == rows
    assert run.rows[1].intra_op_threads is None and run.rows[0].intra_op_threads == 2
    assert isinstance(run.rows[0].intra_op_threads, int) and isinstance(run.rows[0].batch_size, int)
    assert run.rows[1].knobs_not_applied == ("x: no such stage",)


def test_rows_of_an_older_schema_read_with_the_columns_added_since_as_none(tmp_path):
    row = _row()
    v4 = pa.schema([f for f in TRIAL_SCHEMA if f.name not in ("profile_dir", "service_json",
                                                               "service_bytes_per_example", "input_bound_basis",
                                                               "train_device")])
    table = pa.Table.from_pylist([{name: row.to_dict()[name] for name in v4.names}], schema=v4)
    pq.write_table(table.replace_schema_metadata({VERSION_KEY: b"4"}), tmp_path / "trials.parquet")
    (old,) = rows_of(read_table(tmp_path / "trials.parquet", TRIAL_SCHEMA), "trials.parquet")
    assert (old.profile_dir, old.service_json, old.input_bound_basis) == (None, None, None)
    assert old.examples_per_sec_mean == row.examples_per_sec_mean and old.trainer == row.trainer


def test_a_cell_of_the_wrong_type_or_a_missing_key_is_one_line_naming_the_row():
    with pytest.raises(DataError, match=r"^trials: row 1: repeat: must be int, not NoneType None$"):
        rows_of(pa.Table.from_pylist([{"run_id": "r", "trial_id": "t", "status": "ok", "mode": "input"}],
                                     schema=TRIAL_SCHEMA), "trials")
    with pytest.raises(DataError, match=r"^a test row: status: must be str, not int 3$"):
        row_of({"run_id": "r", "trial_id": "t", "repeat": 0, "status": 3, "mode": "input"})


def test_the_json_a_row_keeps_is_read_by_the_row_itself():
    row = _row()
    assert row.pipeline_spec == json.loads(row.params_json)["pipeline"]
    assert row.stage_kinds == ["cache", "shuffle", "batch", "decode", "repeat", "prefetch"]
    assert row.source_setting("num_parallel_reads") == 4 and row.source_setting("no such setting") is None
    assert row.trainer == "auto" and row.service == {}  # not a service-mode trial
    bare = row_of({"run_id": "r", "trial_id": "t", "repeat": 0, "status": "failed", "mode": "input"})
    assert (bare.stage_kinds, bare.trainer, bare.source_setting("mode"), bare.ok) == ([], None, None, False)


_WINDOWS = windows_at("input", [10.0, 11.0])


@pytest.mark.parametrize("kwargs,message", [
    ({"status": TrialStatus.OK}, "status ok with no windows_measured"),
    ({"status": TrialStatus.OK, "windows_measured": _WINDOWS, "reason": "fine"}, "status ok with a reason"),
    ({"status": TrialStatus.OK, "windows_measured": _WINDOWS, "profiled": True}, "a profiling re-run with windows"),
    ({"status": TrialStatus.FAILED}, "status failed with no reason"),
    ({"status": TrialStatus.TIMEOUT, "reason": "  "}, "status timeout with no reason"),
    ({"status": TrialStatus.PRUNED, "reason": "pruned", "windows_measured": _WINDOWS},
     "status pruned with windows_measured"),
])
def test_a_record_that_cannot_have_happened_is_refused(kwargs, message):
    """Every field of TrialRecord was optional: an ok record with no windows, or a failure without a reason, was
    valid, and became a row with no figures or a row that could not say why (Optuna's FrozenTrial._validate)."""
    with pytest.raises(ValueError, match=f"^{message}"):
        TrialRecord(**kwargs)


def test_a_result_json_that_breaks_an_invariant_is_a_one_line_error_naming_the_file(tmp_path):
    good = TrialRecord(TrialStatus.OK, windows_measured=_WINDOWS)
    path = tmp_path / "result.json"
    path.write_text(json.dumps({**to_json(good), "windows_measured": []}))
    with pytest.raises(DataError, match=rf"^{path}: the document: status ok with no windows_measured"):
        TrialRecord.load(path)
    assert from_json(TrialRecord, to_json(good), "result.json") == good
    assert TrialRecord(TrialStatus.OK, profiled=True).windows_measured == ()  # the profiler's window is not timed


@pytest.mark.parametrize("name,block", [("measurement", Measurement), ("model", Model), ("quality", Quality),
                                        ("sources", Sources)])
def test_a_trials_blocks_are_the_experiments_with_exactly_its_keys(name, block):
    assert to_json(typed_block(block, name, {})) == resolve_block(name, {})  # every key, each with its default
    with pytest.raises(ConfigError, match=rf"^{name}\.extra: unknown key"):
        typed_block(block, name, {"extra": 1})


def test_a_trial_json_with_a_key_outside_the_schema_is_refused(tmp_path):
    """prefix_stages, profile_dir, paired and settle rode in `measurement` as keys no schema had: a dict[str, Any]
    took them, and anything else, silently. They are TrialSpec fields now, and the blocks hold the schema's keys."""
    spec = trial_spec(prefix_stages=2, settle=False)
    path = tmp_path / "trial.json"
    path.write_text(json.dumps(spec.to_json()))
    assert TrialSpec.load(path) == spec
    document = spec.to_json()
    document["measurement"]["prefix_stages"] = 2
    path.write_text(json.dumps(document))
    with pytest.raises(DataError, match=rf"^{path}: measurement\.prefix_stages: unknown key"):
        TrialSpec.load(path)
    with pytest.raises(ConfigError, match=r"^measurement\.paired: unknown key"):
        trial_spec(measurement={"paired": False})


def test_a_rows_params_hold_the_blocks_as_the_experiment_gives_them():
    row = _row()
    spec = trial_spec()
    assert row.params["measurement"] == to_json(spec.measurement) == {**resolve_block("measurement", {}),
                                                                       "warmup_max_sec": 1.0, "window_sec": 0.2,
                                                                       "windows": 2, "max_windows": 4,
                                                                       "steady_cv_pct": 50.0}
    assert row.params["sources"] == resolve_block("sources", {})


def test_importances_json_is_one_typed_record_written_and_read_back(tmp_path):
    """importances.json was a dict written with default=str and read with .get chains: a missing key read as None."""
    record = study_record("s1", {"examples_per_sec": {"batch_size": 0.7}, "auc": Unavailable("too few trials")},
                          trial_ids=("s1-7", "s1-9"))
    write_study(tmp_path, record)
    assert read_study(tmp_path) == record and read_study(tmp_path / "nowhere") is None
    assert read_study(tmp_path).winner.examples_per_sec.n == 3
    document = json.loads((tmp_path / IMPORTANCES_FILE).read_text())
    assert document["importances"]["auc"] == {"unavailable": "too few trials"}  # the file's shape is kept
    del document["winner_withheld"]  # a study with a winner left it out before
    (tmp_path / IMPORTANCES_FILE).write_text(json.dumps(document))
    assert read_study(tmp_path) == record
    del document["pinned"]
    (tmp_path / IMPORTANCES_FILE).write_text(json.dumps(document))
    with pytest.raises(DataError, match=rf"^{tmp_path / IMPORTANCES_FILE}: pinned: missing$"):
        read_study(tmp_path)


def test_a_winner_written_before_the_intervals_one_shape_reads_as_the_same_record(tmp_path):
    """Before 2026-11-27 the winner's rate was {mean, low, high, rounds} and a gain {ratio, low, high, rounds,
    verdict}; now both are the interval's one shape {mean, low, high, n}."""
    from pipebench.measure.intervals import Interval
    from pipebench.results.study import WinnerGain

    gains = {"reference deck": WinnerGain(Interval(1.5, 1.2, 1.9, 3), "faster"),
             "TF defaults": WinnerGain(None, "not compared (no shared round)")}
    record = study_record("s1", {"examples_per_sec": {"batch_size": 0.7}}, trial_ids=("s1-7",))
    record = dataclasses.replace(record, winner=dataclasses.replace(record.winner, gains=gains))
    write_study(tmp_path, record)
    document = json.loads((tmp_path / IMPORTANCES_FILE).read_text())
    assert document["winner"]["gains"]["reference deck"]["ratio"] == {"mean": 1.5, "low": 1.2, "high": 1.9, "n": 3}
    rate = document["winner"]["examples_per_sec"]
    document["winner"]["examples_per_sec"] = {"mean": rate["mean"], "low": rate["low"], "high": rate["high"],
                                              "rounds": rate["n"]}
    document["winner"]["gains"] = {"reference deck": {"ratio": 1.5, "low": 1.2, "high": 1.9, "rounds": 3,
                                                      "verdict": "faster"},
                                   "TF defaults": {"ratio": None, "low": None, "high": None, "rounds": 0,
                                                   "verdict": "not compared (no shared round)"}}
    (tmp_path / IMPORTANCES_FILE).write_text(json.dumps(document))
    assert read_study(tmp_path) == record
