"""job.json and jobs.json: what one host of a SageMaker job ran, and the jobs a collected folder holds.

The entry point writes job.json beside its run folder. It travels to `collect` inside the job's output
archive, which whatever ran in the container wrote, so it is read as untrusted data: typed and versioned
(`schema_version`; `job_version` before 2026-11-27, still read), its input and source modes a pair the
entry point makes, and `run_dir` a relative path that stays inside the host's folder. Whether its names
are the launched job's is for `collect` to check, which knows the launch. `collect` lists the jobs it
merged in DIR/jobs.json, the same records with `run_dir` relative to DIR; every reader of a collected
folder finds its members through `read_jobs`. It sits in results/ because a collected run folder holds
these files and everything that reads a run reads them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pipebench.errors import DataError
from pipebench.typed import from_json, parse_json
from pipebench.values import echo
from pipebench.versioned import VERSION_KEY, WAS, check_version

JOB_FILE = "job.json"
JOB_VERSION = 1
#: A job.json is a few hundred bytes; one past this is not pipebench's and is not parsed.
JOB_MAX_BYTES = 1 << 20
SOURCE_MODE_OF_INPUT_MODE = {"File": "file", "FastFile": "fastfile", "Pipe": "pipe"}


@dataclass(frozen=True)
class FeedingGroup:
    """A data-worker group that fed the trainer through the job's tf.data service."""

    group: str
    instance_type: str | None
    hosts: tuple[str, ...]


@dataclass(frozen=True)
class JobFacts:
    """One host's job.json: which job, instance and input mode, and where its run folder is."""

    schema_version: int
    job_name: str | None  # the launch passes it as a hyperparameter; SageMaker tells a container nothing else
    instance_type: str | None
    input_mode: str  # the `train` channel's: File | FastFile | Pipe
    source_mode: str  # the pipebench source mode it maps to
    distribution: str | None  # FullyReplicated | ShardedByS3Key
    hosts: tuple[str, ...]
    current_host: str
    num_cpus: int
    num_gpus: int
    data_format: str
    role: str  # "trainer" (only the trainer runs the experiment and writes a job.json)
    instance_group: str | None
    service_dispatcher: str | None  # HOST:PORT of the job's tf.data service; None without data workers
    fed_by: tuple[FeedingGroup, ...]
    run_dir: str  # the run folder, relative to the host's folder


def read_job(path: Path, where: str) -> JobFacts:
    """Give the job.json at `path`, named `where` in errors; one-line DataError for anything it cannot be."""
    if Path(path).stat().st_size > JOB_MAX_BYTES:
        raise DataError(f"{where}: larger than {JOB_MAX_BYTES:,} bytes; not a job record pipebench wrote")
    return job_record(parse_json(Path(path).read_bytes(), where), where)


def read_jobs(path: Path) -> tuple[JobFacts, ...]:
    """Give the jobs a collected folder's jobs.json lists; one-line DataError naming the entry otherwise."""
    found = parse_json(Path(path).read_bytes(), str(path))
    if not isinstance(found, list):
        raise DataError(f"{path}: must be a list of job records, not a JSON {type(found).__name__}")
    return tuple(job_record(entry, f"{path}: [{index}]") for index, entry in enumerate(found))


def job_record(found: object, where: str) -> JobFacts:
    """Give the job record `found` (parsed JSON, read from `where`): versioned, typed and checked."""
    found = check_version(found, where, VERSION_KEY, JOB_VERSION, "a job record",
                          "collect with the pipebench that launched the job", WAS[JOB_FILE])
    facts = from_json(JobFacts, found, where)
    expected = SOURCE_MODE_OF_INPUT_MODE.get(facts.input_mode)
    if expected is None:
        raise DataError(f"{where}: input_mode {echo(facts.input_mode)}: not one of "
                        f"{', '.join(SOURCE_MODE_OF_INPUT_MODE)}")
    if facts.source_mode != expected:
        raise DataError(f"{where}: source_mode {echo(facts.source_mode)} does not go with input_mode "
                        f"{facts.input_mode} ({expected})")
    run_dir = PurePosixPath(facts.run_dir)
    if run_dir.is_absolute() or ".." in run_dir.parts or not run_dir.parts:
        raise DataError(f"{where}: run_dir {echo(facts.run_dir)}: not a folder inside the host's folder")
    return facts
