"""Bad-input corpus for run folders: damaged folders for `report`, `checklist` and `run --resume`, usage
errors, a folder another process is running, read-only folders and an unreachable study storage.

Each case is one error line and leaves its folder as it was (tests/badinput.py). Run folders are
small hand-made ones (tests/report_fixtures.py): no case runs a trial, so none needs TensorFlow
beyond the machine facts a new run records.
"""
from __future__ import annotations

import atexit
import fcntl
import json
import os
import shutil
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from badinput import Bad, cases, mount, unmount_under
from pipebench.catalog import DEFAULT_CATALOG
from pipebench.results.schema import SCHEMA_VERSION, VERSION_KEY
from pipebench.testing import tiny_experiment
from report_fixtures import passing_run

RUN = "{tmp}/run"


def _damaged(name: str, damage: Callable[[Path], None]) -> Callable[[Path], None]:
    """Give a make() that writes a hand-made run folder and then damages `name` in it with `damage(path)`."""
    def make(folder: Path) -> None:
        damage(passing_run(folder) / name)
    return make


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _random_bytes(path: Path) -> None:
    path.write_bytes(bytes((i * 37 + 11) % 256 for i in range(3000)))


def _version(version: int) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        table = pq.read_table(path)
        pq.write_table(table.replace_schema_metadata({VERSION_KEY: str(version).encode()}), path)
    return damage


def _text(text: str) -> Callable[[Path], None]:
    return lambda path: path.write_text(text)


def _json(change: Callable[[dict], None]) -> Callable[[Path], None]:
    """Give a damage that changes one part of a JSON document (the rest stays a valid machine.json)."""
    def damage(path: Path) -> None:
        document = json.loads(path.read_text())
        change(document)
        path.write_text(json.dumps(document))
    return damage


def _remove(path: Path) -> None:
    path.unlink()


def _file_not_folder(folder: Path) -> None:
    (folder / "run").write_text("not a folder\n")


def _no_trials(folder: Path) -> None:
    (passing_run(folder) / "trials.parquet").unlink()


_HELD: dict[Path, int] = {}


def _held(folder: Path) -> None:
    """Write a run folder and hold its lock from this (the test) process, as a running pipebench would."""
    run = passing_run(folder)
    fd = os.open(run / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": "2030-01-02T03:04:05+00:00"})
             .encode())
    _HELD[folder] = fd


def _release(folder: Path) -> None:
    os.close(_HELD.pop(folder))


def _held_with_experiment(folder: Path) -> None:
    _held(folder)
    (folder / "exp.yaml").write_text("name: handmade\nsearch: {driver: optuna}\n")


def _catalog(text: str | bytes) -> Callable[[Path], None]:
    """Give a make() writing a run folder and {tmp}/cat.yaml holding `text`."""
    def make(folder: Path) -> None:
        passing_run(folder)
        (folder / "cat.yaml").write_bytes(text.encode() if isinstance(text, str) else text)
    return make


_SHIPPED = DEFAULT_CATALOG.read_text()
_RANDOM = bytes((i * 37 + 11) % 256 for i in range(3000))


def _of_0_1_0(config: str | bytes) -> Callable[[Path], None]:
    """Give a make() writing a run folder as pipebench 0.1.0 left it (no data.json) with this config.yaml."""
    def make(folder: Path) -> None:
        run = passing_run(folder)
        (run / "data.json").unlink()
        (run / "config.yaml").write_bytes(config.encode() if isinstance(config, str) else config)
    return make


_ALREADY_RUNNING = (rf"^{{tmp}}/run: already running \(pid {os.getpid()} on {socket.gethostname()} "
                    r"since 2030-01-02T03:04:05\+00:00\)$")


# --- faults of the system: read-only folders, an unreachable storage ---

def _experiment(folder: Path, **extra) -> None:
    """Write {tmp}/exp.yaml (one libsvm pipeline, data cached in {tmp}/cache) and make its data now."""
    from pipebench.config import load_experiment
    from pipebench.datasets import materialise

    doc = tiny_experiment(folder, data={"synth": {"rows": 500, "files": 1}, "formats": ["libsvm"]},
                          pipelines={"presets": ["lambdaji-libsvm"]}, grid={"batch_size": [64]}, **extra)
    (folder / "exp.yaml").write_text(yaml.safe_dump(doc))
    materialise(load_experiment(folder / "exp.yaml"), log=lambda _: None)


def _umount(folder: Path) -> None:
    subprocess.run(["umount", str(folder)], capture_output=True)


def _read_only(folder: Path) -> None:
    """Make `folder` read-only for this user: chmod, or as root (whom chmod does not stop) a read-only bind mount."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return
    steps = [["mount", "--bind", str(folder), str(folder)], ["mount", "-o", "remount,bind,ro", str(folder)]]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True) if shutil.which(step[0]) else None
        if done is None or done.returncode != 0:
            _umount(folder)
            pytest.skip("running as root, where chmod does not stop writes, and a read-only bind mount failed: "
                        + (done.stderr.strip() if done else "no mount command"))
    atexit.register(_umount, folder)  # should the case fail before its after() unmounts it


def _read_only_results(folder: Path) -> None:
    _experiment(folder)
    _read_only(folder / "results")


def _read_only_cache(folder: Path) -> None:
    _experiment(folder)
    shutil.rmtree(folder / "cache")
    _read_only(folder / "cache")


def _unmount(name: str) -> Callable[[Path], None]:
    def after(folder: Path) -> None:
        if os.geteuid() == 0:
            _umount(folder / name)
    return after


def _unreachable_storage(folder: Path) -> None:
    _experiment(folder, search={"driver": "optuna", "n_trials": 2, "confirm_top": 0,
                                "storage": "postgresql://nobody:s3cret@127.0.0.1:1/x"})


CASES = [
    # report: each damaged part of a run folder
    Bad("report-trials-truncated", ("report", RUN, "--out", "{tmp}/out"),
        r"^{tmp}/run/trials\.parquet: not a readable Parquet table \(Parquet magic bytes not found in footer\)$",
        make=_damaged("trials.parquet", _truncate), out="out", code=1, process=True),
    Bad("report-trials-empty", ("report", RUN), r"^{tmp}/run/trials\.parquet: not a readable Parquet table "
        r"\(Parquet file size is 0 bytes\)$", make=_damaged("trials.parquet", _text("")), code=1),
    Bad("report-trials-random-bytes", ("report", RUN), r"^{tmp}/run/trials\.parquet: not a readable Parquet table",
        make=_damaged("trials.parquet", _random_bytes), code=1),
    Bad("report-samples-truncated", ("report", RUN), r"^{tmp}/run/samples\.parquet: not a readable Parquet table",
        make=_damaged("samples.parquet", _truncate), code=1),
    Bad("report-trials-schema-v1", ("report", RUN), r"^{tmp}/run/trials\.parquet: results schema v1 is older than "
        rf"v{SCHEMA_VERSION}: upgrade", make=_damaged("trials.parquet", _version(1)), code=1),
    Bad("report-machine-missing", ("report", RUN), r"^{tmp}/run/machine\.json: missing",
        make=_damaged("machine.json", _remove), code=1),
    Bad("report-machine-not-json", ("report", RUN), r"^{tmp}/run/machine\.json:3: not valid JSON: ",
        make=_damaged("machine.json", _text('{\n "cpu": {"vcpus": 4},\n "gpu": {count: 0}}')), code=1),
    Bad("report-machine-wrong-shape", ("report", RUN), r"^{tmp}/run/machine\.json: tensorflow\.openmp: must be a "
        r"mapping, not str 'no'$", make=_damaged("machine.json", _json(lambda m: m["tensorflow"].update(openmp="no"))),
        code=1),
    Bad("report-machine-old-layout", ("report", RUN), r"^{tmp}/run/machine\.json: layout 1 \(no schema_version\) is "
        r"older than the 2 this pipebench reads: run `pipebench upgrade {tmp}/run`$", make=_damaged("machine.json", _json(lambda m: m.pop(
            "schema_version"))), code=1),
    Bad("report-data-facts-missing", ("report", RUN), r"^{tmp}/run/data\.json: missing \(a run folder of pipebench "
        r"0\.1\.0\): run `pipebench upgrade {tmp}/run`$", make=_damaged("data.json", _remove), code=1),
    Bad("report-config-missing", ("report", RUN), r"^{tmp}/run/config\.yaml: missing",
        make=_damaged("config.yaml", _remove), code=1),
    Bad("report-config-not-yaml", ("report", RUN), r"^{tmp}/run/config\.yaml:2: not valid YAML: ",
        make=_damaged("config.yaml", _text("name: x\n  data: [\n")), code=1),
    Bad("report-config-not-a-mapping", ("report", RUN), r"^{tmp}/run/config\.yaml: the experiment must be a "
        r"mapping, not str$", make=_damaged("config.yaml", _text("just words\n")), code=1),
    Bad("report-config-invalid", ("report", RUN), r"^{tmp}/run/config\.yaml: grid\.batch_size\[0\]: must be int",
        make=_damaged("config.yaml", _text("name: x\ngrid: {batch_size: [big]}\n")), code=1),
    Bad("report-run-folder-is-a-file", ("report", RUN), r"^{tmp}/run: a file, not a pipebench run folder$",
        make=_file_not_folder, code=2),
    Bad("report-run-folder-missing", ("report", RUN), r"^{tmp}/run: no such run folder$", code=2),
    Bad("report-folder-without-trials", ("report", RUN), r"^{tmp}/run: no trials\.parquet: not a pipebench run "
        r"folder", make=_no_trials, code=2),
    # report refuses an existing output folder as every output command does (issue 28: it wrote over a user's files)
    Bad("report-out-holds-a-users-report", ("report", RUN, "--out", "{tmp}/mine"), r"^{tmp}/mine: already exists "
        r"\(use --force to replace it\)$", make=lambda folder: (passing_run(folder), (folder / "mine").mkdir(),
                                                                (folder / "mine" / "report.md").write_text("mine\n")),
        code=2),
    Bad("report-default-out-exists", ("report", RUN), r"^{tmp}/run/report: already exists \(use --force",
        make=lambda folder: (passing_run(folder) / "report").mkdir(), code=2),
    Bad("report-out-is-the-run-folder-with-force", ("report", RUN, "--out", RUN, "--force"),
        r"^output {tmp}/run is the input {tmp}/run; choose an --out apart from the inputs$", make=passing_run, code=2),
    Bad("report-out-holds-the-run-folder-with-force", ("report", RUN, "--out", "{tmp}", "--force"),
        r"^output {tmp} contains the input {tmp}/run", make=passing_run, code=2),
    # checklist reads through the same reader
    Bad("checklist-trials-random-bytes", ("checklist", RUN), r"^{tmp}/run/trials\.parquet: not a readable Parquet",
        make=_damaged("trials.parquet", _random_bytes), code=1),
    Bad("checklist-trials-newer-schema", ("checklist", RUN), rf"^{{tmp}}/run/trials\.parquet: results schema "
        rf"v{SCHEMA_VERSION + 1} is newer than this pipebench's v{SCHEMA_VERSION}: update pipebench",
        make=_damaged("trials.parquet", _version(SCHEMA_VERSION + 1)), code=1),
    Bad("checklist-machine-a-list", ("checklist", RUN), r"^{tmp}/run/machine\.json: not machine facts \(a JSON "
        r"list, not an object\)$", make=_damaged("machine.json", _text("[]")), code=1),
    Bad("checklist-config-not-yaml", ("checklist", RUN), r"^{tmp}/run/config\.yaml:2: not valid YAML",
        make=_damaged("config.yaml", _text("name: [x\n")), code=1),
    Bad("checklist-run-folder-missing", ("checklist", RUN, "--format", "json"), r"^{tmp}/run: no such run folder$",
        code=2),
    # checklist --catalog reads it through the one YAML reader (binary, duplicate keys, size cap)
    Bad("checklist-catalog-binary", ("checklist", RUN, "--catalog", "cat.yaml"),
        r"^cat\.yaml:\d+: (holds a NUL byte: not a text file|not UTF-8 text \(byte 0x[0-9a-f]{2}\))$",
        make=_catalog(_RANDOM), code=1),
    Bad("checklist-catalog-duplicate-type", ("checklist", RUN, "--catalog", "cat.yaml"),
        r"^cat\.yaml:\d+: duplicate key 'ml\.c5\.xlarge'$",
        make=_catalog(_SHIPPED + "  ml.c5.xlarge: {family: c5, vcpus: 4, physical_cores: 2, memory_gib: 8, gpus: 0, "
                      "price_per_hour: 0.001}\n"), code=1),
    Bad("checklist-catalog-over-the-size-cap", ("checklist", RUN, "--catalog", "cat.yaml"),
        r"^cat\.yaml: larger than 1,048,576 bytes, the most a YAML file pipebench reads may hold",
        make=_catalog(_SHIPPED + "#" * (2 << 20) + "\n"), code=1),
    Bad("checklist-catalog-endless", ("checklist", RUN, "--catalog", "/dev/zero"),
        r"^/dev/zero: larger than 1,048,576 bytes", make=passing_run, code=1, memory_mb=3072),
    Bad("checklist-catalog-type-not-a-name", ("checklist", RUN, "--catalog", "cat.yaml"),
        r"^cat\.yaml: instances\.7: an instance type is a name such as ml\.c5\.xlarge, not int$",
        make=_catalog(_SHIPPED + "  7: {family: c5}\n"), code=1),
    # upgrade reads tables, machine.json and config.yaml through their readers
    Bad("upgrade-trials-truncated", ("upgrade", RUN),
        r"^{tmp}/run/trials\.parquet: not a readable Parquet table \(Parquet magic bytes not found in footer\)$",
        make=_damaged("trials.parquet", _truncate), code=1),
    Bad("upgrade-samples-random-bytes", ("upgrade", RUN), r"^{tmp}/run/samples\.parquet: not a readable Parquet",
        make=_damaged("samples.parquet", _random_bytes), code=1),
    Bad("upgrade-trials-newer-schema", ("upgrade", RUN), rf"^{{tmp}}/run/trials\.parquet: results schema "
        rf"v{SCHEMA_VERSION + 1} is newer than this pipebench's v{SCHEMA_VERSION}: update pipebench",
        make=_damaged("trials.parquet", _version(SCHEMA_VERSION + 1)), code=1),
    Bad("upgrade-config-binary", ("upgrade", RUN), r"^{tmp}/run/config\.yaml:\d+: (holds a NUL byte|not UTF-8)",
        make=_of_0_1_0(_RANDOM), code=1),
    Bad("upgrade-config-files-a-list", ("upgrade", RUN),
        r"^{tmp}/run/config\.yaml: data\.files: must be a mapping, not list$",
        make=_of_0_1_0("name: old\ndata: {files: [a.libsvm]}\n"), code=1),
    # run --resume checks every part before it takes the folder
    Bad("resume-trials-truncated", ("run", "--resume", RUN), r"^{tmp}/run/trials\.parquet: not a readable Parquet",
        make=_damaged("trials.parquet", _truncate), code=1),
    Bad("resume-samples-empty", ("run", "--resume", RUN), r"^{tmp}/run/samples\.parquet: not a readable Parquet "
        r"table \(Parquet file size is 0 bytes\)$", make=_damaged("samples.parquet", _text("")), code=1),
    Bad("resume-trials-schema-v1", ("run", "--resume", RUN), r"^{tmp}/run/trials\.parquet: results schema v1 is "
        r"older", make=_damaged("trials.parquet", _version(1)), code=1),
    Bad("resume-machine-not-json", ("run", "--resume", RUN), r"^{tmp}/run/machine\.json:1: not valid JSON",
        make=_damaged("machine.json", _text("cpu: 4")), code=1),
    Bad("resume-machine-missing", ("run", "--resume", RUN), r"^{tmp}/run/machine\.json: missing",
        make=_damaged("machine.json", _remove), code=1),
    Bad("resume-config-invalid", ("run", "--resume", RUN), r"^{tmp}/run/config\.yaml: budgte: unknown key",
        make=_damaged("config.yaml", _text("name: x\nbudgte: {}\n")), code=1),
    Bad("resume-config-missing", ("run", "--resume", RUN), r"^{tmp}/run: no config\.yaml: not a pipebench run "
        r"folder$", make=_damaged("config.yaml", _remove), code=2),
    Bad("resume-run-folder-is-a-file", ("run", "--resume", RUN), r"^{tmp}/run: a file, not a pipebench run folder$",
        make=_file_not_folder, code=2),
    Bad("resume-run-folder-missing", ("run", "--resume", RUN), r"^{tmp}/run: no such run folder$", code=2),
    # a folder another process is running
    Bad("resume-already-running", ("run", "--resume", RUN), _ALREADY_RUNNING, make=_held, after=_release, code=2),
    Bad("worker-run-dir-already-running", ("worker", "{tmp}/exp.yaml", "--storage", "{tmp}/s.journal", "--study",
                                           "s", "--run-dir", RUN), _ALREADY_RUNNING, make=_held_with_experiment,
        after=_release, out="s.journal", code=2),
    # PIPEBENCH_DEBUG is a boolean (issue 28: `0` turned tracebacks on and changed the exit code)
    *(Bad(f"debug-{name}-is-off", ("report", RUN), r"^{tmp}/run: no such run folder$",
          env={"PIPEBENCH_DEBUG": value}, code=2)
      for name, value in (("0", "0"), ("false", "false"), ("No", "No"), ("OFF", "OFF"), ("empty", ""),
                          ("padded-0", " 0 "))),
    # usage errors: one line naming the subcommand, for every level of subcommand
    Bad("usage-no-command", (), r"^the following arguments are required: COMMAND \(see pipebench --help\)$", code=2),
    Bad("usage-unknown-command", ("runn",), r"^argument COMMAND: invalid choice: 'runn' .* \(see pipebench --help\)$",
        code=2),
    Bad("usage-run-unknown-option", ("run", "x.yaml", "--bogus", "r"), r"^run: unrecognized arguments: --bogus r "
        r"\(see pipebench run --help\)$", code=2, process=True),
    Bad("usage-run-unknown-trainer", ("run", "x.yaml", "--trainer", "gpu"), r"^run: argument --trainer: invalid "
        r"choice: 'gpu' \(choose from 'auto', 'cpu', 'accelerator'\) \(see pipebench run --help\)$", code=2),
    Bad("usage-report-no-run-folder", ("report",), r"^report: the following arguments are required: RUN_DIR "
        r"\(see pipebench report --help\)$", code=2),
    Bad("usage-checklist-bad-format", ("checklist", RUN, "--format", "xml"), r"^checklist: argument --format: "
        r"invalid choice: 'xml' \(choose from 'md', 'json'\) \(see pipebench checklist --help\)$", code=2),
    Bad("usage-worker-no-storage", ("worker", "x.yaml"), r"^worker: the following arguments are required: "
        r"--storage, --study \(see pipebench worker --help\)$", code=2),
    Bad("usage-data-synth-rows-zero", ("data", "synth", "--rows", "0", "--out", "o"), r"^data synth: argument "
        r"--rows: must be from 1 to 1,000,000,000,000, not 0 \(see pipebench data synth --help\)$", out="o", code=2),
    Bad("usage-sagemaker-no-subcommand", ("sagemaker",), r"^sagemaker: the following arguments are required: "
        r"SAGEMAKER_COMMAND \(see pipebench sagemaker --help\)$", code=2),
    Bad("usage-long-echo-is-cut", ("env", "--" + "x" * 5000), r"^env: unrecognized arguments: --x+… \(see "
        r"pipebench env --help\)$", code=2),
    # faults of the system
    Bad("run-read-only-results", ("run", "{tmp}/exp.yaml"), r"^results: {tmp}/results/tiny/[\d-]+[0-9a-f]{4}: "
        r"cannot create the run folder \((Read-only file system|Permission denied)\)$", make=_read_only_results,
        after=_unmount("results"), code=1, process=True, tf=True),
    Bad("run-read-only-data-cache", ("run", "{tmp}/exp.yaml"), r"^data\.cache_dir: {tmp}/cache/\S+: cannot create "
        r"the data folder \((Read-only file system|Permission denied)\)$", make=_read_only_cache,
        after=_unmount("cache"), out="results", code=1, process=True),  # mount (as root) is a process
    Bad("run-unreachable-storage", ("run", "{tmp}/exp.yaml"), r"^(?!.*s3cret)search\.storage: cannot reach "
        r"postgresql://nobody@127\.0\.0\.1:1/x \(.*(refused|could not connect).*\)$",
        make=_unreachable_storage, out="results", code=1, process=True, tf=True),
]


@pytest.mark.parametrize("case", cases(CASES))
def test_refused(case, tmp_path, run_case):
    run_case(case, tmp_path)


def _small_results_disk(folder: Path) -> None:
    """Make the experiment, and its results folder a 64 KiB tmpfs: room for a run folder, not for its first rows."""
    _experiment(folder)
    mount(["-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs"], folder / "results" / "tiny")


MOUNTED = [
    # issue 28: the line said `[Errno 28] No space left on device` and named no file
    Bad("run-disk-full", ("run", "{tmp}/exp.yaml"), r"^{tmp}/results/tiny/[\d-]+[0-9a-f]{4}/\S+: No space left on "
        r"device$", make=_small_results_disk, code=1, process=True, tf=True),
]


@pytest.mark.slow  # mount and umount are processes
@pytest.mark.parametrize("case", cases(MOUNTED))
def test_refused_on_a_mount(case, tmp_path, run_case):
    """Needs root for `mount` (skipped, saying so, elsewhere); the mounts are undone whatever happens."""
    try:
        run_case(case, tmp_path)
    finally:
        unmount_under(tmp_path)
