"""Results tables: the Parquet schema (golden file), atomic appends, version checks, loading."""
from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pipebench.results as results
from pipebench.errors import PipebenchError, ResultsVersionError
from pipebench.results.schema import SAMPLE_SCHEMA, SCHEMA_VERSION, TRIAL_SCHEMA, VERSION_KEY
from pipebench.results.store import append_rows, read_table

GOLDEN = Path(__file__).parent / "golden" / "results_schema.json"


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
    append_rows(path, TRIAL_SCHEMA, [{"trial_id": "b", "status": "timeout", "reason": "slow", "unknown": 1}])
    table = pq.read_table(path)
    assert table.schema.metadata[VERSION_KEY] == str(SCHEMA_VERSION).encode()
    assert table.column("trial_id").to_pylist() == ["a", "b"]
    assert table.column("examples_per_sec_median").to_pylist() == [10.5, None]
    assert [p.name for p in tmp_path.iterdir()] == ["trials.parquet"], "no temp file left behind"


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
    _write_version(tmp_path / "old.parquet", SCHEMA_VERSION - 1)
    with pytest.raises(ResultsVersionError, match="older .* upgrade"):
        read_table(tmp_path / "old.parquet", TRIAL_SCHEMA)


def test_load_gives_dataframes_and_refuses_mixing_hosts(tmp_path):
    for name, host in (("a", "h1"), ("b", "h2")):
        run = tmp_path / name
        run.mkdir()
        append_rows(run / results.TRIALS_FILE, TRIAL_SCHEMA,
                    [{"trial_id": name, "status": "ok", "host_fingerprint": host, "data_fingerprint": "d"}])
        (run / results.MACHINE_FILE).write_text(json.dumps({"vcpus": 2}))
    loaded = results.load(tmp_path / "a")
    assert list(loaded.trials["trial_id"]) == ["a"] and loaded.samples.empty and loaded.machine == {"vcpus": 2}
    with pytest.raises(PipebenchError, match="host_fingerprint"):
        results.load_many([tmp_path / "a", tmp_path / "b"])
    assert len(results.load_many([tmp_path / "a", tmp_path / "b"], allow_mixed=True)) == 2
    with pytest.raises(PipebenchError, match="not a pipebench run folder"):
        results.load(tmp_path)
