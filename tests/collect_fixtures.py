"""Launched jobs and their output archives, hand-made, for `pipebench sagemaker collect` against moto.

`launch_jobs` plays `pipebench sagemaker launch` without the data upload: the jobs are created in moto
(which reports them completed) and the launch manifest is written. `host` writes one host's folder as
the entry point leaves it in /opt/ml/output/data (job.json and a hand-made run folder of
report_fixtures, no TensorFlow); `upload_archive` packs a job's folder as SageMaker's output.tar.gz,
with any hostile members added. A collect case's folder also holds `mine`, a run folder of the user's
that no archive may move or remove.
"""
from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import boto3
from report_fixtures import VECTORIZED, machine, make_run, trial
from sagemaker_fixtures import TINY

from pipebench.config import parse_experiment
from pipebench.results.trial_row import TrialRow
from pipebench.sagemaker.launch import plan
from pipebench.typed import to_json

ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"
IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/pipebench:latest"
BUCKET, PREFIX = "bench", "launch"
LAUNCH_URI = f"s3://{BUCKET}/{PREFIX}"
RUN_DIR = "results/tiny/20261126-101010-abcd"
SOURCE_MODES = {"File": "file", "FastFile": "fastfile", "Pipe": "pipe"}
#: A key `job_json` leaves out.
MISSING = object()


def launch_jobs(input_modes: tuple[str, ...] = ("File",), instance_type: str = "ml.c5.xlarge") -> list[dict]:
    """Create one job per input mode in moto and write the launch manifest, as launch does; give its jobs."""
    launch = plan(parse_experiment(TINY, "tiny"), instance_types=[instance_type], input_modes=list(input_modes),
                  role_arn=ROLE, s3_uri=LAUNCH_URI, image_uri=IMAGE)
    sagemaker = boto3.client("sagemaker")
    for request in launch.requests:
        sagemaker.create_training_job(**request)
    manifest = to_json(launch.manifest())
    put_manifest(manifest)
    return manifest["jobs"]


def put_manifest(manifest: dict) -> None:
    boto3.client("s3").put_object(Bucket=BUCKET, Key=f"{PREFIX}/pipebench-launch.json",
                                  Body=json.dumps(manifest).encode())


def run_rows(run_id: str = "20261126-101010-abcd", job: dict | None = None) -> list[TrialRow]:
    """Give a run's rows: a trial on a busy machine and its re-measure (`remeasure_of` names it); on `job`'s
    instance type and source mode, as its entry point's run writes them."""
    files = ["/opt/ml/input/data/train/part-0.tfrecord"]
    common = dict(mode="input", pipeline="aws-sample", fmt="tfrecord", stages=VECTORIZED, files=files, run_id=run_id)
    if job is not None:
        common.update(source_mode=SOURCE_MODES[job["input_mode"]], instance_type=job["instance_type"])
    return [trial("t1", examples_per_sec=1000.0, busy=True, **common),
            trial("t1-again", examples_per_sec=1100.0, remeasure_of="t1", **common)]


def run_folder(path: Path, job: dict | None = None) -> Path:
    """Write a whole run folder at `path` (tables, machine.json, data.json, config.yaml), measured in `job` if
    given; give it."""
    return make_run(path, run_rows(path.name, job), machine(instance_type=job and job["instance_type"]))


def job_json(job: dict, host: str, run_dir: str, **changes) -> dict:
    """Give the job.json the entry point writes for `job` on `host`, with `changes` (MISSING drops a key)."""
    facts = {"schema_version": 1, "job_name": job["name"], "instance_type": job["instance_type"],
             "input_mode": job["input_mode"], "source_mode": SOURCE_MODES[job["input_mode"]],
             "distribution": job["distribution"], "hosts": [host], "current_host": host, "num_cpus": 4, "num_gpus": 0,
             "data_format": "tfrecord", "role": "trainer", "instance_group": "homogeneousCluster",
             "service_dispatcher": None, "fed_by": [], "run_dir": run_dir}
    facts.update(changes)
    return {k: v for k, v in facts.items() if v is not MISSING}


HostWriter = Callable[[Path, Path, dict], None]


def host(name: str = "algo-1", run_dir: str = RUN_DIR, job_text: str | None = None, run: bool = True,
         files: dict[str, bytes | None] | None = None, **changes) -> HostWriter:
    """Give a writer of one host's folder `name` into an archive's root: job.json (`run_dir` may hold {tmp}, the
    case folder; `job_text` replaces the whole file) and, if `run`, a run folder at RUN_DIR whose `files` are
    replaced (None: removed)."""
    def write(root: Path, case: Path, job: dict) -> None:
        folder = root / name
        if run:
            run_folder(folder / RUN_DIR, job)
            for file_name, data in (files or {}).items():
                (folder / RUN_DIR / file_name).unlink()
                if data is not None:
                    (folder / RUN_DIR / file_name).write_bytes(data)
        folder.mkdir(parents=True, exist_ok=True)
        text = job_text if job_text is not None else json.dumps(job_json(job, name, run_dir.format(tmp=case),
                                                                         **changes))
        (folder / "job.json").write_text(text)
    return write


def member(name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"", linkname: str = "",
           size: int | None = None) -> Callable[[tarfile.TarFile], None]:
    """Give an adder of one raw member (any name, any type) to an archive; `size` declares a size its data lacks
    (the header alone is written)."""
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type, info.size, info.linkname, info.mode = kind, len(data) if kind == tarfile.REGTYPE else 0, linkname, 0o644
        if size is not None:
            info.size = size
            tar.fileobj.write(info.tobuf(tar.format, tar.encoding, tar.errors))
            return
        tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
    return add


def archive(root: Path, extra: tuple[Callable[[tarfile.TarFile], None], ...] = ()) -> bytes:
    """Give root's folders as SageMaker packs /opt/ml/output/data (one entry per host), then the `extra` members."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(root.iterdir()) if root.exists() else ():
            tar.add(path, arcname=path.name)
        for add in extra:
            add(tar)
    return buffer.getvalue()


def upload_archive(job: dict, data: bytes) -> None:
    """Put `data` where SageMaker uploads the job's output (<S3OutputPath>/<job>/output/output.tar.gz)."""
    boto3.client("s3").put_object(Bucket=BUCKET, Key=f"{PREFIX}/output/{job['name']}/output/output.tar.gz", Body=data)


@dataclass(frozen=True)
class Archive:
    """One job's output archive: its hosts' folders, then raw members; or `raw` bytes as they are."""

    hosts: tuple[HostWriter, ...] = ()
    members: tuple[Callable[[tarfile.TarFile], None], ...] = ()
    raw: bytes | None = None


def collect_case(*archives: Archive, manifest: Callable[[dict], dict] | None = None) -> Callable[[Path], None]:
    """Give a Bad.make: the user's run folder `mine`, then one launched job per archive (File, FastFile, Pipe),
    its archive uploaded; `manifest` may rewrite the launch manifest afterwards."""
    def make(case: Path) -> None:
        run_folder(case / "mine")
        launched = launch_jobs(("File", "FastFile", "Pipe")[:len(archives)])
        for index, (job, made) in enumerate(zip(launched, archives)):
            root = case.parent / f"{case.name}-archive-{index}"  # beside the case: not the user's files
            for write in made.hosts:
                write(root, case, job)
            upload_archive(job, made.raw if made.raw is not None else archive(root, made.members))
        if manifest:
            put_manifest(manifest(json.loads(boto3.client("s3").get_object(
                Bucket=BUCKET, Key=f"{PREFIX}/pipebench-launch.json")["Body"].read())))
    return make
