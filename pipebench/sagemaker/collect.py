"""`pipebench sagemaker collect s3://bucket/prefix --out DIR`: the launched jobs' results as one folder.

For each job the launch manifest names, DescribeTrainingJob says whether it completed and where its
output went; the tarball SageMaker uploaded there (`<S3OutputPath>/<job>/output/output.tar.gz`, the
job's /opt/ml/output/data) is downloaded and unpacked to `DIR/<instance type>/<input mode>/`, which keeps
each host's run folder as `pipebench run` wrote it (so `pipebench report` / `checklist` read them
one by one). `DIR/trials.parquet` and `DIR/samples.parquet` hold every job's rows, stamped with
the job's instance type and source mode; trial ids become `<instance type>/<input mode>/<host>/<id>`
so they stay unique. `DIR/jobs.json` lists the jobs. The folder appears whole or not at all.
"""
from __future__ import annotations

import io
import json
import shutil
import tarfile
from pathlib import Path

from pipebench.atomic import atomic_dir, atomic_write_json
from pipebench.errors import PipebenchError
from pipebench.results import CONFIG_FILE, JOBS_FILE, SAMPLES_FILE, TRIALS_FILE
from pipebench.results.schema import SAMPLE_SCHEMA, TRIAL_SCHEMA
from pipebench.results.store import append_rows, read_table
from pipebench.sagemaker.entry import JOB_FILE
from pipebench.sagemaker.launch import LAUNCH_MANIFEST, aws_errors, client
from pipebench.sagemaker.s3uri import launch_folder, parse_s3_uri, s3_join, s3_key

OUTPUT_TARBALL = "output.tar.gz"


def _launched(s3, bucket: str, prefix: str) -> list[str]:
    """Give the job names the launch manifest lists."""
    key = s3_key(prefix, LAUNCH_MANIFEST)
    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except s3.exceptions.NoSuchKey:
        raise PipebenchError(f"{s3_join(bucket, key)}: missing; not a folder `pipebench sagemaker launch` "
                             "wrote to") from None
    return [job["name"] for job in json.loads(body)["jobs"]]


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


def _unpack(data: bytes, into: Path, where: str) -> None:
    """Extract a job's tarball into `into`, refusing members that would land outside it."""
    into.mkdir(parents=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
            for member in tar.getmembers():
                target = (into / member.name).resolve()
                if not (member.isfile() or member.isdir()) or not target.is_relative_to(into.resolve()):
                    raise PipebenchError(f"{where}: member {member.name!r} is not a plain file inside the archive")
            # Every member was checked above; the "data" filter (Python >= 3.10.12) also drops odd permissions.
            tar.extractall(into, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    except tarfile.TarError as err:
        raise PipebenchError(f"{where}: not a readable tar.gz: {err}") from None


def _host_runs(job_dir: Path, where: str) -> list[tuple[dict, Path]]:
    """Give (job.json, run folder) for each host's results in an unpacked job."""
    found = []
    for job_file in sorted(job_dir.glob(f"*/{JOB_FILE}")):
        facts = json.loads(job_file.read_text())
        run_dir = job_file.parent / facts["run_dir"]
        if not (run_dir / TRIALS_FILE).exists():
            raise PipebenchError(f"{where}: {job_file.parent.name}/{facts['run_dir']} has no {TRIALS_FILE}")
        found.append((facts, run_dir))
    if not found:
        raise PipebenchError(f"{where}: no {JOB_FILE} inside; not written by pipebench's SageMaker entry point")
    return found


def collect(s3_uri: str, out: Path, force: bool = False, log=print) -> Path:
    """Download the launched jobs' outputs and merge them into `out`; give `out`."""
    bucket, prefix = launch_folder(s3_uri)
    s3, sagemaker = client("s3"), client("sagemaker")
    try:
        names = _launched(s3, bucket, prefix)
        outputs = {name: _output_of(sagemaker, name) for name in names}
        with atomic_dir(Path(out), force=force) as tmp:
            jobs, trials, samples, config = [], [], [], None
            for name, (output_bucket, key) in outputs.items():
                where = s3_join(output_bucket, key)
                try:
                    data = s3.get_object(Bucket=output_bucket, Key=key)["Body"].read()
                except s3.exceptions.NoSuchKey:
                    raise PipebenchError(f"{where}: missing, though job {name} completed") from None
                staging = tmp / ".unpack" / name
                _unpack(data, staging, where)
                for facts, run_dir in _host_runs(staging, where):
                    label = f"{facts['instance_type']}/{facts['input_mode']}"
                    dest = tmp / facts["instance_type"] / facts["input_mode"] / facts["current_host"]
                    if dest.exists():
                        raise PipebenchError(f"{where}: a second job for {label} on {facts['current_host']}; "
                                             "collect one launch at a time")
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    run_dir.rename(dest)
                    atomic_write_json(dest / JOB_FILE, facts)  # the run folder says which job made it
                    stamp = {"instance_type": facts["instance_type"], "source_mode": facts["source_mode"]}
                    rows = read_table(dest / TRIALS_FILE, TRIAL_SCHEMA).to_pylist()
                    rename = {r["trial_id"]: f"{label}/{facts['current_host']}/{r['trial_id']}" for r in rows}
                    trials += [{**r, **stamp, "trial_id": rename[r["trial_id"]]} for r in rows]
                    samples += [{**r, "trial_id": rename.get(r["trial_id"], r["trial_id"])}
                                for r in read_table(dest / SAMPLES_FILE, SAMPLE_SCHEMA).to_pylist()]
                    config = config or (dest / CONFIG_FILE).read_bytes()
                    jobs.append({**facts, "run_dir": str(dest.relative_to(tmp))})
                    log(f"{name}: {label} on {facts['current_host']}, {len(rows)} trial(s)")
            append_rows(tmp / TRIALS_FILE, TRIAL_SCHEMA, trials)
            if samples:
                append_rows(tmp / SAMPLES_FILE, SAMPLE_SCHEMA, samples)
            (tmp / CONFIG_FILE).write_bytes(config)
            atomic_write_json(tmp / JOBS_FILE, jobs)
            shutil.rmtree(tmp / ".unpack")
    except aws_errors() as err:
        raise PipebenchError(f"{s3_join(bucket, prefix)}: {err}") from None
    return Path(out)
