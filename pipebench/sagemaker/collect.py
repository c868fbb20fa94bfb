"""`pipebench sagemaker collect s3://bucket/prefix --out DIR`: the launched jobs' results as one folder.

For each job the launch manifest names, DescribeTrainingJob says whether it completed and where its
output went; the tarball SageMaker uploaded there (`<S3OutputPath>/<job>/output/output.tar.gz`, the
job's /opt/ml/output/data) is downloaded and unpacked to `DIR/<instance type>/<input mode>/`, which keeps
each host's run folder as `pipebench run` wrote it (so `pipebench report` / `checklist` read them
one by one). `DIR/trials.parquet` and `DIR/samples.parquet` hold every job's rows as the row builder
wrote them on the host (the instance type and source mode are the job's: collect checks, it does not
rewrite), their trial ids (and `remeasure_of`, which names one) scoped as
`<instance type>/<input mode>/<host>/<id>` so they stay unique (pipebench.results.rows.member_row).
`DIR/jobs.json` lists the jobs. The folder appears whole or not at all.

What S3 holds is untrusted data: an archive is whatever ran in the job's container wrote. The manifest
and each host's job.json are typed and versioned; an archive is unpacked here, plain files and folders
only, each inside its job's folder; a job.json must name the launched job, its instance type and input
mode, and the host folder it lies in, and its `run_dir` a folder inside that host's; each run folder is
read whole by the run-folder reader, and its machine facts and rows must name the job's instance type
and source mode (or the tf.data service, which the job's trainer may measure beside its channel). Only
once every host of every job has passed is anything moved, and only within DIR's temp folder: nothing
outside DIR is ever moved or removed.
"""
from __future__ import annotations

import dataclasses
import errno
import io
import shutil
import tarfile
from pathlib import Path, PurePosixPath

from pipebench.atomic import atomic_dir, atomic_write_json
from pipebench.errors import DataError, PipebenchError
from pipebench.results import CONFIG_FILE, JOBS_FILE, SAMPLES_FILE, TRIALS_FILE, load
from pipebench.results.rows import member_id, member_row
from pipebench.results.run_folder import RunResults
from pipebench.results.schema import SAMPLE_SCHEMA, TRIAL_SCHEMA
from pipebench.results.store import append_rows, read_table
from pipebench.results.job import JOB_FILE, JobFacts, read_job
from pipebench.sagemaker.launch import LAUNCH_MANIFEST, LaunchedJob, LaunchManifest, aws_errors, client, read_manifest
from pipebench.sagemaker.s3uri import launch_folder, parse_s3_uri, s3_join, s3_key
from pipebench.typed import to_json
from pipebench.values import echo, name_text

OUTPUT_TARBALL = "output.tar.gz"
#: What one job's archive may cost (a few MiB is usual: run folders, maybe TensorBoard profiles). Past a cap
#: collect stops at once, so a hostile archive (a gzip bomb, a million empty files) costs bounded time and memory.
ARCHIVE_MAX_BYTES = 1 << 30
UNPACKED_MAX_BYTES = 4 << 30
MEMBERS_MAX = 100_000
MANIFEST_MAX_BYTES = 1 << 20
_MEMBER_KINDS = {tarfile.SYMTYPE: "a symbolic link", tarfile.LNKTYPE: "a hard link", tarfile.CHRTYPE: "a device",
                 tarfile.BLKTYPE: "a device", tarfile.FIFOTYPE: "a FIFO"}
#: What unpacking meets when two members share a name (as a file and a folder, or twice): the archive's fault.
_NAMED_TWICE = {errno.EEXIST, errno.ENOTDIR, errno.EISDIR}


@dataclasses.dataclass(frozen=True)
class HostRun:
    """One host's results in an unpacked archive, checked: the job it belongs to, its job.json and run folder."""

    job: LaunchedJob
    facts: JobFacts
    run_dir: Path
    where: str  # the archive's S3 URI

    @property
    def label(self) -> str:
        """Give `<instance type>/<input mode>/<host>`: the run folder's place in DIR and its trial ids' prefix."""
        return f"{self.job.instance_type}/{self.job.input_mode}/{self.facts.current_host}"


def _launched(s3, bucket: str, prefix: str) -> LaunchManifest:
    """Give the launch manifest, checked."""
    key = s3_key(prefix, LAUNCH_MANIFEST)
    try:
        body = _fetch(s3, bucket, key, MANIFEST_MAX_BYTES)
    except s3.exceptions.NoSuchKey:
        raise PipebenchError(f"{s3_join(bucket, key)}: missing; not a folder `pipebench sagemaker launch` "
                             "wrote to") from None
    return read_manifest(body, s3_join(bucket, key))


def _fetch(s3, bucket: str, key: str, cap: int) -> bytes:
    """Give an S3 object's bytes; DataError past `cap` bytes, read no further than that."""
    body = s3.get_object(Bucket=bucket, Key=key)["Body"]
    data = body.read(cap + 1)
    body.close()
    if len(data) > cap:
        raise DataError(f"{s3_join(bucket, key)}: larger than {cap:,} bytes, more than pipebench wrote there; "
                        "not collected")
    return data


def _output_of(sagemaker, name: str) -> tuple[str, str]:
    """Give (bucket, key) of a finished job's output.tar.gz; PipebenchError while it runs or when it failed."""
    described = sagemaker.describe_training_job(TrainingJobName=name)
    status = described["TrainingJobStatus"]
    if status != "Completed":
        reason = described.get("FailureReason")
        raise PipebenchError(f"training job {name}: {status}" + (f": {reason}" if reason else
                                                                  "; collect once every job has completed"))
    bucket, prefix = parse_s3_uri(described["OutputDataConfig"]["S3OutputPath"])
    return bucket, s3_key(prefix, name, "output", OUTPUT_TARBALL)


def _member_parts(member: tarfile.TarInfo, where: str) -> tuple[str, ...]:
    """Give a member's path inside the archive's folder, as parts; DataError unless it is a plain file or folder
    that stays inside."""
    if not (member.isreg() or member.isdir()):
        kind = _MEMBER_KINDS.get(member.type, f"of tar type {member.type!r}")
        raise DataError(f"{where}: member {echo(member.name)}: {kind}, not a file or folder")
    path = PurePosixPath(member.name)
    if path.is_absolute():
        raise DataError(f"{where}: member {echo(member.name)}: an absolute path")
    if ".." in path.parts:
        raise DataError(f"{where}: member {echo(member.name)}: leaves the archive's folder")
    if not path.parts and not member.isdir():
        raise DataError(f"{where}: member {echo(member.name)}: a file without a name")
    return path.parts  # "." and empty parts dropped


def _unpack(data: bytes, into: Path, where: str) -> None:
    """Extract a job's output.tar.gz into the new folder `into`: plain files and folders only, each inside it.

    Every member is checked before anything is written, and the files are written here (new files, this
    process's modes) rather than by tarfile, whose safe "data" filter some Python 3.10 releases lack.
    """
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            members, unpacked = [], 0
            for member in tar:  # checked as they come, so a bomb stops at a cap, not after it is all read
                members.append((member, _member_parts(member, where)))
                unpacked += member.size
                if len(members) > MEMBERS_MAX or unpacked > UNPACKED_MAX_BYTES:
                    raise DataError(f"{where}: holds more than {MEMBERS_MAX:,} members or {UNPACKED_MAX_BYTES:,} "
                                    "bytes unpacked, more than a pipebench job writes; not collected")
            into.mkdir(parents=True)
            for member, parts in members:
                target = into.joinpath(*parts)
                try:
                    if member.isdir():
                        target.mkdir(parents=True, exist_ok=True)
                        continue
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with tar.extractfile(member) as source, open(target, "xb") as sink:
                        shutil.copyfileobj(source, sink)
                except OSError as err:
                    if err.errno in _NAMED_TWICE:
                        raise DataError(f"{where}: member {echo(member.name)}: named twice in the archive") from None
                    if err.errno == errno.ENAMETOOLONG:
                        raise DataError(f"{where}: member {echo(member.name)}: a name too long to unpack") from None
                    raise
    except (tarfile.TarError, EOFError) as err:
        raise DataError(f"{where}: not a readable tar.gz: {str(err).splitlines()[0] if str(err) else 'truncated'}") \
            from None


def _check_run_folder(run_dir: Path, job_dir: Path, where: str) -> RunResults:
    """Read a host's run folder whole with the run-folder reader, so a damaged part is refused before anything
    moves; the error names the part inside the archive."""
    try:
        return load(run_dir)
    except PipebenchError as err:
        raise DataError(str(err).replace(f"{job_dir}/", f"{where}: ")) from None


def _check_job_of_run(run: RunResults, facts: JobFacts, at: str) -> None:
    """Refuse a run folder whose machine facts or rows name another instance type or source mode than its job's:
    the rows are collected as the host wrote them."""
    if run.machine.sagemaker.instance_type != facts.instance_type:
        raise DataError(f"{at}/machine.json: instance_type {echo(run.machine.sagemaker.instance_type)} is not the "
                        f"job's ({facts.instance_type})")
    for name in ("instance_type", "source_mode"):
        allowed = {facts.instance_type} if name == "instance_type" else {facts.source_mode, "service"}
        other = sorted(set(run.trials[name].dropna()) - allowed) or (["null"] if run.trials[name].isna().any() else [])
        if other:
            raise DataError(f"{at}/trials.parquet: {name} {echo(other[0])} is not the job's "
                            f"({' or '.join(sorted(allowed))})")


def _host_runs(job_dir: Path, job: LaunchedJob, where: str) -> list[HostRun]:
    """Give each host's results in an unpacked job, checked; DataError naming the archive and the host."""
    found = []
    for host_dir in sorted(p for p in job_dir.iterdir() if (p / JOB_FILE).is_file()):
        at = f"{where}: {name_text(host_dir.name)}/{JOB_FILE}"
        facts = read_job(host_dir / JOB_FILE, at)
        for key, launched in (("job_name", job.name), ("instance_type", job.instance_type),
                              ("input_mode", job.input_mode)):
            if getattr(facts, key) != launched:
                raise DataError(f"{at}: {key} {echo(getattr(facts, key))} is not the launched job's ({launched})")
        if facts.current_host != host_dir.name:
            raise DataError(f"{at}: current_host {echo(facts.current_host)} is not the folder it is in "
                            f"({name_text(host_dir.name)})")
        # read_job refused absolute paths and `..`, and the archive held no links: this stays inside
        run_dir = host_dir / facts.run_dir
        if not run_dir.is_dir():
            raise DataError(f"{at}: run_dir {echo(facts.run_dir)}: no such folder in the archive")
        _check_job_of_run(_check_run_folder(run_dir, job_dir, where), facts,
                          f"{where}: {name_text(host_dir.name)}/{facts.run_dir}")
        found.append(HostRun(job, facts, run_dir, where))
    if not found:
        raise DataError(f"{where}: no {JOB_FILE} inside; not written by pipebench's SageMaker entry point")
    return found


def collect(s3_uri: str, out: Path, force: bool = False, log=print) -> Path:
    """Download the launched jobs' outputs and merge them into `out`; give `out`."""
    bucket, prefix = launch_folder(s3_uri)
    s3, sagemaker = client("s3"), client("sagemaker")
    try:
        manifest = _launched(s3, bucket, prefix)
        outputs = [(job, _output_of(sagemaker, job.name)) for job in manifest.jobs]
        with atomic_dir(Path(out), force=force) as tmp:
            staging, hosts = tmp / ".unpack", []
            for job, (output_bucket, key) in outputs:
                where = s3_join(output_bucket, key)
                try:
                    data = _fetch(s3, output_bucket, key, ARCHIVE_MAX_BYTES)
                except s3.exceptions.NoSuchKey:
                    raise PipebenchError(f"{where}: missing, though job {job.name} completed") from None
                _unpack(data, staging / job.name, where)
                hosts += _host_runs(staging / job.name, job, where)
            # Every host of every job has passed: only now is anything moved, and only within tmp.
            jobs, trials, samples, config = [], [], [], None
            for host in hosts:
                dest = tmp / host.label
                if dest.exists():
                    raise DataError(f"{host.where}: a second job for {host.label}; collect one launch at a time")
                dest.parent.mkdir(parents=True, exist_ok=True)
                host.run_dir.rename(dest)
                atomic_write_json(dest / JOB_FILE, to_json(host.facts))  # the run folder says which job made it
                rows = read_table(dest / TRIALS_FILE, TRIAL_SCHEMA).to_pylist()
                trials += [member_row(r, host.label) for r in rows]
                samples += [{**r, "trial_id": member_id(host.label, r["trial_id"])}
                            for r in read_table(dest / SAMPLES_FILE, SAMPLE_SCHEMA).to_pylist()]
                config = config or (dest / CONFIG_FILE).read_bytes()
                jobs.append(to_json(dataclasses.replace(host.facts, run_dir=host.label)))
                log(f"{host.job.name}: {host.job.instance_type}/{host.job.input_mode} on {host.facts.current_host}, "
                    f"{len(rows)} trial(s)")
            append_rows(tmp / TRIALS_FILE, TRIAL_SCHEMA, trials)
            if samples:
                append_rows(tmp / SAMPLES_FILE, SAMPLE_SCHEMA, samples)
            (tmp / CONFIG_FILE).write_bytes(config)
            atomic_write_json(tmp / JOBS_FILE, jobs)
            shutil.rmtree(staging)
    except aws_errors() as err:
        raise PipebenchError(f"{s3_join(bucket, prefix)}: {err}") from None
    return Path(out)
