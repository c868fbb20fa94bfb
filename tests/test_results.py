"""Results tables: the Parquet schema (golden file), atomic appends, version checks, loading, damaged
run folders, the run folder's lock."""
from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from report_fixtures import VECTORIZED, job_record, machine, make_run, passing_rows, passing_run, trial

import pipebench.results as results
from pipebench.errors import ConfigError, DataError, PipebenchError, ResultsVersionError, UsageError
from pipebench.results import run_folder
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


@pytest.mark.slow
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
    with pytest.raises(ResultsVersionError, match=r"machine.json: layout 1 \(no schema_version\) is older than the 2 this pipebench reads: run "
                                                  r"`pipebench upgrade .*run`"):
        results.load(run)
    code, out, _ = cli("upgrade", run)
    assert code == 0 and f"rewrote trials.parquet (schema v2 → v{SCHEMA_VERSION})" in out and "machine.json (layout 1 → 2)" in out
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
    assert len(loaded.samples) == 6 and loaded.config["name"] == "handmade" and loaded.study is None
    with pytest.raises(PipebenchError, match="host_fingerprint"):
        results.load_many([tmp_path / "a", tmp_path / "b"])
    assert len(results.load_many([tmp_path / "a", tmp_path / "b"], allow_mixed=True)) == 2
    with pytest.raises(UsageError, match="no trials.parquet: not a pipebench run folder"):
        results.load(tmp_path)


# --- damaged run folders: each unreadable part is one error naming the file (the CLI's view: test_bad_runs.py) ---

DAMAGED = {  # name → (how to damage the run folder, the error class, what its message says)
    "trials truncated": (lambda run: _truncate(run / "trials.parquet"), DataError,
                         r"trials.parquet: not a readable Parquet table \(Parquet magic bytes not found"),
    "trials empty": (lambda run: (run / "trials.parquet").write_bytes(b""), DataError,
                     r"trials.parquet: not a readable Parquet table \(Parquet file size is 0 bytes\)"),
    "samples random bytes": (lambda run: (run / "samples.parquet").write_bytes(bytes(range(256)) * 8), DataError,
                             r"samples.parquet: not a readable Parquet table"),
    "trials of other columns": (lambda run: pq.write_table(pa.table({"x": [1]}).replace_schema_metadata(
        {VERSION_KEY: str(SCHEMA_VERSION).encode()}), run / "trials.parquet"), DataError,
        rf"trials.parquet: its columns are not those of results schema v{SCHEMA_VERSION} \(.* missing, e.g. run_id"),
    "machine missing": (lambda run: (run / "machine.json").unlink(), DataError, r"machine.json: missing"),
    "machine not JSON": (lambda run: (run / "machine.json").write_text('{"cpu": {\n  "vcpus": }'), DataError,
                         r"machine.json:2: not valid JSON: Expecting value"),
    "machine a list": (lambda run: (run / "machine.json").write_text("[1, 2]"), DataError,
                       r"machine.json: not machine facts \(a JSON list, not an object\)"),
    "machine wrong shape": (lambda run: _edit_json(run / "machine.json", lambda m: m["cpu"].update(vcpus="four")),
                            DataError, r"machine.json: cpu.vcpus: must be int, not str"),
    "machine key missing": (lambda run: _edit_json(run / "machine.json", lambda m: m["cpu"].pop("model")),
                            DataError, r"machine.json: cpu.model: missing"),
    "data facts not JSON": (lambda run: (run / "data.json").write_text("{"), DataError, r"data.json:1: not valid JSON"),
    "machine not UTF-8": (lambda run: (run / "machine.json").write_bytes(b"\xff\xfe{}"), DataError,
                          r"machine.json: not UTF-8 text"),
    "config missing": (lambda run: (run / "config.yaml").unlink(), DataError, r"config.yaml: missing"),
    "config not YAML": (lambda run: (run / "config.yaml").write_text("name: [x\n"), ConfigError,
                        r"config.yaml:2: not valid YAML"),
    "config not a mapping": (lambda run: (run / "config.yaml").write_text("- a list\n"), ConfigError,
                             r"config.yaml: the experiment must be a mapping, not list"),
    "config invalid": (lambda run: (run / "config.yaml").write_text("name: x\nbudget: {max_trials: many}\n"),
                       ConfigError, r"config.yaml: budget.max_trials: must be int"),
    "importances not JSON": (lambda run: (run / "importances.json").write_text("{"), DataError,
                             r"importances.json:1: not valid JSON"),
    "a file": (lambda run: (shutil.rmtree(run), run.write_text("x")), UsageError, r"a file, not a pipebench run folder"),
    "gone": (lambda run: shutil.rmtree(run), UsageError, r"no such run folder"),
}


def _edit_json(path: Path, change) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-100])


@pytest.mark.parametrize("damage", DAMAGED, ids=str)
def test_a_damaged_run_folder_is_refused_naming_the_part(tmp_path, damage):
    make, error, says = DAMAGED[damage]
    run = passing_run(tmp_path)
    make(run)
    with pytest.raises(error, match=says):
        results.load(run)


def test_a_collected_folder_is_read_as_its_member_runs(tmp_path):
    member = make_run(tmp_path / "collected" / "ml.c5.xlarge" / "File" / "algo-1", passing_rows([]), machine())
    (tmp_path / "collected" / run_folder.JOBS_FILE).write_text(json.dumps([job_record("ml.c5.xlarge", "ml.c5.xlarge/File/algo-1")]))
    (loaded,) = results.load_many([tmp_path / "collected"])
    assert loaded.run_dir == member
    with pytest.raises(UsageError, match="holds 1 run folders: read it with load_many"):
        results.load(tmp_path / "collected")


def test_resume_checks_every_part_it_reads_and_allows_a_run_killed_before_its_first_row(tmp_path):
    run = passing_run(tmp_path)
    assert run_folder.load_resumed(run).name == "handmade"
    for name in ("trials.parquet", "samples.parquet"):
        (run / name).unlink()
    assert run_folder.load_resumed(run).name == "handmade", "no table yet: the run starts from its first trial"
    (run / "config.yaml").unlink()
    with pytest.raises(UsageError, match="no config.yaml: not a pipebench run folder"):
        run_folder.load_resumed(run)


# --- SIGABRT after the old-schema error (Arrow releasing Python-owned buffers at interpreter exit) ---

@pytest.mark.slow
def test_an_old_table_is_one_error_line_and_exit_1_every_time(tmp_path):
    """Regression: exiting right after the version error aborted (exit 134, "terminate called without
    an active exception") about one time in ten, when the table had been read through a Python file
    object. Each command runs the real CLI 20 times in a fresh process, as many at once as this process has
    CPUs (each run is its own process: the abort was at its exit, whatever ran beside it)."""
    from concurrent.futures import ThreadPoolExecutor

    run = passing_run(tmp_path)
    table = pq.read_table(run / "trials.parquet")
    pq.write_table(table.replace_schema_metadata({VERSION_KEY: b"1"}), run / "trials.parquet")
    env = {k: v for k, v in os.environ.items() if k != "PIPEBENCH_DEBUG"}
    expected = (1, f"pipebench: error: {run / 'trials.parquet'}: results schema v1 is older than v{SCHEMA_VERSION}: "
                   "upgrade the results with the pipebench version that wrote them\n")

    def attempt(command: list[str]) -> tuple[int, str]:
        done = subprocess.run([sys.executable, "-m", "pipebench.cli", *command, str(run)], capture_output=True,
                              text=True, env=env, timeout=120)
        return done.returncode, done.stderr

    attempts = [(command, index) for command in (["report"], ["checklist"], ["run", "--resume"]) for index in range(20)]
    with ThreadPoolExecutor(max_workers=len(os.sched_getaffinity(0))) as pool:
        found = list(pool.map(lambda item: attempt(item[0]), attempts))
    assert [(item, ran) for item, ran in zip(attempts, found) if ran != expected] == []


# --- the run folder's lock ---

_HOLDER = """
import sys, time
from pipebench.results.run_folder import hold
with hold(sys.argv[1]):
    print("held", flush=True)
    time.sleep(600)
"""


@pytest.mark.slow
def test_a_second_holder_is_refused_naming_the_first_until_it_dies_even_by_kill_minus_nine(tmp_path):
    run = passing_run(tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(run)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        owner = json.loads((run / ".lock").read_text())
        assert owner["pid"] == holder.pid
        with pytest.raises(UsageError, match=rf"^{run}: already running \(pid {holder.pid} on "
                                             rf"{owner['host']} since \d{{4}}-\d\d-\d\dT[\d:]+\+00:00\)$"):
            with run_folder.hold(run):
                pass
    finally:
        holder.kill()
        holder.wait()
    assert (run / ".lock").exists(), "kill -9 leaves the file; the kernel dropped the lock"
    # a second holder has just locked the dead one's file and not yet written its name: a third, refused in
    # between, waits for the live name rather than name the dead holder (two resumes at once did)
    second = os.open(run / ".lock", os.O_RDWR)
    fcntl.flock(second, fcntl.LOCK_EX | fcntl.LOCK_NB)
    named = threading.Timer(0.3, lambda: os.pwrite(second, json.dumps(
        {"pid": os.getpid(), "host": owner["host"], "since": "2026-12-03T17:08:12+00:00"}).encode().ljust(200), 0))
    named.start()
    with pytest.raises(UsageError, match=rf"^{run}: already running \(pid {os.getpid()} on "):
        with run_folder.hold(run):
            pass
    named.join()
    os.truncate(run / ".lock", 0)
    os.close(second)
    with run_folder.hold(run):
        assert json.loads((run / ".lock").read_text())["pid"] == os.getpid()
    assert not (run / ".lock").exists(), "a holder that lets go removes the file"


def test_a_folder_created_for_a_run_that_fails_before_its_first_row_is_removed(tmp_path):
    run = passing_run(tmp_path)
    (run / "trials.parquet").unlink()
    with pytest.raises(KeyboardInterrupt):
        with run_folder.own(run, created=True):
            raise KeyboardInterrupt
    assert not run.exists()
    kept = passing_run(tmp_path / "kept")
    with pytest.raises(KeyboardInterrupt):
        with run_folder.own(kept, created=True):
            raise KeyboardInterrupt
    assert (kept / "trials.parquet").exists() and not (kept / ".lock").exists(), "a folder with rows stays"
