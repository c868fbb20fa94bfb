"""Results tables: the Parquet schema (golden file), atomic appends, version checks, loading."""
from __future__ import annotations

import json
import multiprocessing
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from report_fixtures import VECTORIZED, machine, make_run, trial

import pipebench.results as results
from pipebench.errors import PipebenchError, ResultsVersionError
from pipebench.results.schema import SAMPLE_SCHEMA, SCHEMA_VERSION, TRIAL_SCHEMA, VERSION_KEY
from pipebench.results.store import append_rows, read_table

GOLDEN = Path(__file__).parent / "golden" / "results_schema.json"
GOLDEN_RUN = Path(__file__).parent / "golden" / "run-v2"


def _describe(schema: pa.Schema) -> list[list[str]]:
    return [[f.name, str(f.type)] for f in schema]


def test_schema_matches_golden_file():
    golden = json.loads(GOLDEN.read_text())
    assert golden["schema_version"] == SCHEMA_VERSION, "bump SCHEMA_VERSION when columns change"
    assert _describe(TRIAL_SCHEMA) == golden["trials"]
    assert _describe(SAMPLE_SCHEMA) == golden["samples"]


def test_append_keeps_rows_types_and_version(tmp_path):
    path = tmp_path / "trials.parquet"
    append_rows(path, TRIAL_SCHEMA, [{"trial_id": "a", "status": "ok", "examples_per_sec_median": 10.5}])
    append_rows(path, TRIAL_SCHEMA, [{"trial_id": "b", "status": "timeout", "reason": "slow"}])
    table = pq.read_table(path)
    assert table.schema.metadata[VERSION_KEY] == str(SCHEMA_VERSION).encode()
    assert table.column("trial_id").to_pylist() == ["a", "b"]
    assert table.column("examples_per_sec_median").to_pylist() == [10.5, None]
    assert [p.name for p in tmp_path.iterdir()] == ["trials.parquet"], "no temp file left behind"


def test_append_refuses_a_key_no_column_holds(tmp_path):
    """A producer's fact the schema has no column for is a bug to see, not data to drop silently."""
    path = tmp_path / "trials.parquet"
    with pytest.raises(ValueError, match="no column for unknown"):
        append_rows(path, TRIAL_SCHEMA, [{"trial_id": "b", "status": "ok", "unknown": 1}])
    assert not path.exists()


def _append_many(path: Path, count: int) -> None:
    for i in range(count):
        append_rows(path, TRIAL_SCHEMA, [{"trial_id": f"t{i:04d}" * 40, "status": "ok"}])


def test_reading_while_another_process_appends_gives_whole_tables(tmp_path):
    # A report read during a run: each read must see one whole table, never the footer of one file
    # and the pages of the file renamed over it.
    path = tmp_path / "trials.parquet"
    append_rows(path, TRIAL_SCHEMA, [{"trial_id": "first", "status": "ok"}])
    writer = multiprocessing.get_context("spawn").Process(target=_append_many, args=(path, 300))
    writer.start()
    counts = []
    while writer.is_alive():
        counts.append(read_table(path, TRIAL_SCHEMA).num_rows)
    writer.join()
    assert writer.exitcode == 0
    assert len(counts) > 10, "the reader never overlapped the writer"
    assert counts == sorted(counts) and read_table(path, TRIAL_SCHEMA).num_rows == 301


def _write_version(path: Path, version: int) -> None:
    table = TRIAL_SCHEMA.empty_table().replace_schema_metadata({VERSION_KEY: str(version).encode()})
    pq.write_table(table, path)


def test_newer_and_older_tables_are_refused_with_direction(tmp_path):
    _write_version(tmp_path / "new.parquet", SCHEMA_VERSION + 1)
    with pytest.raises(ResultsVersionError, match="newer .* update pipebench"):
        read_table(tmp_path / "new.parquet", TRIAL_SCHEMA)
    _write_version(tmp_path / "old.parquet", 1)
    with pytest.raises(ResultsVersionError, match="older .* upgrade"):
        read_table(tmp_path / "old.parquet", TRIAL_SCHEMA)


def test_tables_of_the_last_release_are_read_with_the_columns_added_since_null():
    """tests/golden/run-v2 is a real run folder written by pipebench 0.1.0 (schema v2)."""
    trials = read_table(GOLDEN_RUN / "trials.parquet", TRIAL_SCHEMA)
    assert trials.schema.names == TRIAL_SCHEMA.names and trials.num_rows == 3
    assert set(trials.column("mode").to_pylist()) == {"input", "train", "synthetic"}
    assert trials.column("examples_per_sec_median").null_count == 0
    assert trials.column("env_seen_json").null_count == 3  # a v3 column: v2 never kept it
    assert read_table(GOLDEN_RUN / "samples.parquet", SAMPLE_SCHEMA).num_rows > 0


def test_an_old_machine_json_says_upgrade_and_upgrade_makes_the_folder_readable(tmp_path, cli):
    run = tmp_path / "run"
    shutil.copytree(GOLDEN_RUN, run)
    with pytest.raises(ResultsVersionError, match=r"machine.json: machine facts layout v1 is older than v2: run "
                                                  r"`pipebench upgrade .*run`"):
        results.load(run)
    code, out, _ = cli("upgrade", run)
    assert code == 0 and "rewrote trials.parquet (schema v2 → v3)" in out and "machine.json (layout 1 → 2)" in out
    loaded = results.load(run)
    assert loaded.machine.cpu.vcpus == 2 and loaded.data.rows == 4000 and loaded.data.source == "synthetic"
    assert loaded.trials["trial_id"].is_unique and len(loaded.trials) == 3
    code, out, _ = cli("upgrade", run)
    assert code == 0 and out.strip().endswith("already current")


def test_load_gives_dataframes_and_refuses_mixing_hosts(tmp_path):
    for name, host in (("a", "h1"), ("b", "h2")):
        make_run(tmp_path / name, [trial(name, "input", "aws-sample", "tfrecord", VECTORIZED, 1.0, [],
                                         host_fingerprint=host)], machine())
    loaded = results.load(tmp_path / "a")
    assert list(loaded.trials["trial_id"]) == ["a"] and loaded.machine.cpu.vcpus == 4
    with pytest.raises(PipebenchError, match="host_fingerprint"):
        results.load_many([tmp_path / "a", tmp_path / "b"])
    assert len(results.load_many([tmp_path / "a", tmp_path / "b"], allow_mixed=True)) == 2
    with pytest.raises(PipebenchError, match="not a pipebench run folder"):
        results.load(tmp_path)
