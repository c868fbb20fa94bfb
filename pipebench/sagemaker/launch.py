"""`pipebench sagemaker launch`: one training job per instance type × input mode, on the same data.

The launch folder on S3 (`--s3 s3://bucket/prefix`) holds:
  config/experiment.yaml   the resolved experiment the jobs run (one data format)
  config/data.json         the format and the data files' S3 URIs (in Pipe mode the job has no files to list)
  config/manifest.json     the converter's manifest of those files, when there is one: the job's data
                           fingerprint then equals a local run's on the same files
  source/sourcedir.tar.gz  pipebench as script-mode source (pipebench.sagemaker.sourcedir), unless the
                           jobs run a custom image (--image-uri) that has pipebench installed
  data/<format>/part-*     the data files, and nothing else: Pipe mode streams every object under the prefix
  output/<job>/output/output.tar.gz   what each job wrote to /opt/ml/output/data (SageMaker uploads it)
  pipebench-launch.json    the jobs launched, for `pipebench sagemaker collect`
Without --image-uri the jobs run SageMaker's official TensorFlow training image of the region, TF
version and processor (pipebench.sagemaker.images). boto3 is imported only when something is
uploaded or submitted.
"""
from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from pathlib import Path

from pipebench.converters import MANIFEST
from pipebench.config import Experiment, parse_experiment
from pipebench.data_files import REMOTE_PREFIX, expand
from pipebench.errors import ConfigError, DataError, PipebenchError, UsageError
from pipebench.sagemaker import images, sourcedir
from pipebench.sagemaker.cluster import DataWorkers
from pipebench.sagemaker.environment import INPUT_MODES
from pipebench.sagemaker.requests import (job_name, script_mode_hyperparameters, trainer_instance_type,
                                          training_job_request, validate)
from pipebench.sagemaker.s3uri import launch_folder, parse_s3_uri, s3_join, s3_key
from pipebench.typed import from_json, parse_json, to_json
from pipebench.values import echo
from pipebench.versioned import VERSION_KEY, WAS, check_version

LAUNCH_MANIFEST = "pipebench-launch.json"
LAUNCH_VERSION = 1
SOURCE_KEY = "source"
DATA_LIST = "data.json"
EXPERIMENT_FILE = "experiment.yaml"


def client(service: str, region: str | None = None):
    """Give a boto3 client; AWS_ENDPOINT_URL (boto3's own variable) points it at another endpoint, e.g. moto."""
    try:
        import boto3
    except ImportError:
        raise UsageError("talking to AWS needs boto3: pip install 'pipebench[aws]'") from None
    return boto3.client(service, region_name=region)


def default_region() -> str | None:
    """Give the region boto3 would use (AWS_REGION, AWS_DEFAULT_REGION, the profile's config), or None."""
    try:
        import botocore.exceptions
        import botocore.session
    except ImportError:
        raise UsageError("SageMaker requests need botocore: pip install 'pipebench[aws]'") from None
    try:
        return botocore.session.get_session().get_config_variable("region")
    except botocore.exceptions.BotoCoreError as err:  # e.g. AWS_PROFILE names no profile
        raise UsageError(f"AWS configuration: {err}") from None


def job_experiment(experiment: Experiment, data_format: str) -> Experiment:
    """Give the experiment narrowed to the one data format the jobs receive."""
    if data_format not in experiment["data"]["formats"]:
        raise UsageError(f"--format {data_format}: not in the experiment's data.formats "
                         f"({', '.join(experiment['data']['formats'])})")
    if experiment["pipelines"]["functions"]:  # the jobs' source tarball holds pipebench, not the user's files
        raise UsageError("pipelines.functions: SageMaker jobs do not receive your own Python files yet; launch "
                         "without them (--set pipelines.functions=[]) or run them with `pipebench run` there")
    orderings = experiment["pipelines"]["orderings"]
    if orderings is not None and (orderings.get("source") or {}).get("format") != data_format:
        raise UsageError(f"--format {data_format}: pipelines.orderings reads "
                         f"{(orderings.get('source') or {}).get('format')}; launch with that format or "
                         "--set pipelines.orderings=null")
    return parse_experiment(experiment.resolved, experiment.name, experiment.source,
                            (f"data.formats=[{data_format}]", f"pipelines.formats=[{data_format}]"))


@dataclass(frozen=True)
class Launch:
    """What `launch` submits: the requests (validated) and where the launch folder is.

    `given` is the experiment as the user gave it: its data (every format) is made and cached exactly
    as a local run makes it; `experiment`, narrowed to one format, is what the jobs run.
    """

    given: Experiment
    experiment: Experiment
    requests: list[dict]
    bucket: str
    prefix: str
    data_format: str
    region: str | None = None
    tf_version: str | None = None  # the official image's TF version; None with a custom image
    data_workers: tuple[DataWorkers, ...] = ()

    @property
    def uri(self) -> str:
        return s3_join(self.bucket, self.prefix)

    @property
    def source_uri(self) -> str | None:
        """Give where sourcedir.tar.gz goes, or None when a custom image runs (nothing to ship)."""
        return None if self.tf_version is None else s3_join(self.bucket, self.prefix, SOURCE_KEY, sourcedir.TARBALL)

    def uploads(self) -> list[dict]:
        """Give what `submit` uploads, local → S3, without making anything (a dry run lists this)."""
        out = []
        if self.source_uri:
            files = sourcedir.source_files()
            roots = sorted({str(Path(p.__file__).parent) for p in sourcedir.PACKAGES})
            out.append({"local": f"{len(files)} files of {' and '.join(roots)}, {sourcedir.ENTRY_PROGRAM} and "
                                 f"{sourcedir.REQUIREMENTS}, packed as {sourcedir.TARBALL}", "s3": self.source_uri})
        config = s3_join(self.bucket, self.prefix, "config")
        out += [{"local": f"the resolved experiment {self.given.name!r}", "s3": f"{config}/{EXPERIMENT_FILE}"},
                {"local": "the data files' S3 URIs", "s3": f"{config}/{DATA_LIST}"}]
        data = s3_join(self.bucket, self.prefix, "data", self.data_format)
        given = self.given["data"]["files"].get(self.data_format)
        if given:
            found = [f for f in expand(given, f"data.files.{self.data_format}") if not f.startswith(REMOTE_PREFIX)]
            out += [{"local": f, "s3": f"{data}/{Path(f).name}"} for f in found]
            manifest = Path(found[0]).parent / MANIFEST if found else None
            if manifest and manifest.exists():  # as submit finds it: beside the first data file
                out.append({"local": str(manifest), "s3": f"{config}/{MANIFEST}"})
        else:
            synth = self.given["data"]["synth"]
            out.append({"local": f"{synth['rows']:,} synthetic rows in {synth['files']} {self.data_format} files, "
                                 f"made (once) under {self.given['data']['cache_dir']}", "s3": f"{data}/"})
            if self.data_format != "libsvm":  # the synthesizer writes libsvm; only converted formats have a manifest
                out.append({"local": f"their converter's {MANIFEST}", "s3": f"{config}/{MANIFEST}"})
        return out

    def manifest(self) -> LaunchManifest:
        """Give pipebench-launch.json: the jobs and what each measures."""
        jobs = []
        for request in self.requests:
            train = request["InputDataConfig"][1]
            jobs.append(LaunchedJob(request["TrainingJobName"], trainer_instance_type(request), train["InputMode"],
                                    train["DataSource"]["S3DataSource"]["S3DataDistributionType"]))
        return LaunchManifest(LAUNCH_VERSION, self.experiment.name, self.data_format, tuple(jobs), self.source_uri,
                              self.tf_version, self.data_workers)


@dataclass(frozen=True)
class LaunchedJob:
    """One job of a launch: its name, the trainer's instance type and the data channel's input mode."""

    name: str
    instance_type: str
    input_mode: str
    distribution: str


@dataclass(frozen=True)
class LaunchManifest:
    """pipebench-launch.json: what a launch created, which `collect` reads back from S3."""

    schema_version: int
    experiment: str
    data_format: str
    jobs: tuple[LaunchedJob, ...]
    source: str | None  # the source tarball's URI; None with a custom image
    tf_version: str | None
    data_workers: tuple[DataWorkers, ...]


#: SageMaker's TrainingJobName pattern: a job name is also a folder name in `collect`'s output.
_JOB_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")
#: ml.<family>.<size>, each part plain: an instance type is also a folder name in `collect`'s output.
_INSTANCE_TYPE = re.compile(r"ml(\.[a-z0-9-]+)+")


def read_manifest(data: bytes, where: str) -> LaunchManifest:
    """Give the launch manifest in `data`, read from `where`: typed, versioned, and each job's name, instance
    type and input mode ones SageMaker could have run; one-line DataError otherwise."""
    found = check_version(parse_json(data, where), where, VERSION_KEY, LAUNCH_VERSION, "a launch manifest",
                          "collect with the pipebench that launched it", WAS[LAUNCH_MANIFEST])
    manifest = from_json(LaunchManifest, found, where)
    names = [job.name for job in manifest.jobs]
    if len(set(names)) != len(names):
        raise DataError(f"{where}: jobs: a job is listed twice")
    for index, job in enumerate(manifest.jobs):
        for key, ok, what in (("name", _JOB_NAME.fullmatch(job.name), "a training job name"),
                              ("instance_type", _INSTANCE_TYPE.fullmatch(job.instance_type), "an instance type"),
                              ("input_mode", job.input_mode in INPUT_MODES, "an input mode")):
            if not ok:
                raise DataError(f"{where}: jobs[{index}].{key}: {echo(getattr(job, key))} is not {what}")
    return manifest


def _image_of(instance_type: str, data_workers: tuple[DataWorkers, ...], region: str, tf_version: str) -> str:
    """Give the official image for a job: one image for all its groups, the GPU one if any group has GPUs.

    The GPU images run on CPU instances too, so a GPU trainer fed by CPU data workers gets the GPU image.
    """
    types = [instance_type, *(w.instance_type for w in data_workers)]
    gpu = [t for t in types if images.processor(t) == "gpu"]
    return images.training_image_uri(region, tf_version, (gpu or types)[0])


def plan(experiment: Experiment, *, instance_types: list[str], input_modes: list[str], role_arn: str, s3_uri: str,
         image_uri: str | None = None, region: str | None = None, tf_version: str | None = None,
         data_format: str = "tfrecord", sharded: bool = False, instance_count: int = 1,
         data_workers: tuple[DataWorkers, ...] = (), now: dt.datetime | None = None) -> Launch:
    """Give the launch: one validated CreateTrainingJob request per instance type × input mode.

    Without `image_uri` each job runs the official TensorFlow training image (script mode), which
    needs `region` (boto3's when None; `tf_version` defaults to images.DEFAULT_TF_VERSION); with it, the
    custom image must have pipebench installed, and no region is looked up.
    """
    tf_version = tf_version or images.DEFAULT_TF_VERSION
    bad = [m for m in input_modes if m not in INPUT_MODES]
    if bad:
        raise UsageError(f"--input-mode {bad[0]}: must be one of {', '.join(INPUT_MODES)}")
    if data_workers and "Pipe" in input_modes:
        raise UsageError("--input-mode Pipe with --data-workers: Pipe mode's dataset is a custom op that reads "
                         "the host's own FIFOs, so a tf.data service worker cannot run it; use File or FastFile")
    script_mode = image_uri is None
    if script_mode:
        region = region or default_region()  # only the official image needs one: its URI names the region
        if not region:
            raise UsageError("sagemaker launch: no AWS region for the official image; give --region or set "
                             "AWS_DEFAULT_REGION")
        version = images.full_version(tf_version)
        if "Pipe" in input_modes and not images.has_pipe_mode_dataset(version):
            raise UsageError(f"--input-mode Pipe: the TensorFlow {version} training image has no sagemaker-tensorflow "
                             f"(PipeModeDataset; only {', '.join(sorted(images.PIPE_MODE_VERSIONS))} has it): use "
                             "--tf-version 2.14 or an --image-uri with it")
    given, experiment = experiment, job_experiment(experiment, data_format)
    bucket, prefix = launch_folder(s3_uri)
    now = now or dt.datetime.now(dt.timezone.utc)
    budget_min = experiment["budget"]["max_minutes"]
    # The budget bounds the measuring; data copy, image pull and TF start-up come on top.
    max_runtime = int(budget_min * 60 + 1800) if budget_min else 86_400
    launch = Launch(given, experiment, [], bucket, prefix, data_format, region,
                    images.full_version(tf_version) if script_mode else None, tuple(data_workers))
    hyperparameters = (script_mode_hyperparameters(launch.source_uri, region, sourcedir.ENTRY_PROGRAM)
                       if script_mode else None)
    for instance_type in dict.fromkeys(instance_types):
        image = image_uri or _image_of(instance_type, launch.data_workers, region, tf_version)
        for mode in dict.fromkeys(input_modes):
            request = training_job_request(
                name=job_name(experiment.name, instance_type, mode, now), role_arn=role_arn, image_uri=image,
                instance_type=instance_type, input_mode=mode, prefix=s3_join(bucket, prefix), data_format=data_format,
                sharded=sharded, instance_count=instance_count, max_runtime_sec=max_runtime,
                script_mode=hyperparameters, data_workers=launch.data_workers)
            validate(request)
            launch.requests.append(request)
    return launch


def submit(launch: Launch, log=print) -> LaunchManifest:
    """Upload the experiment and its data (local files uploaded, s3:// objects copied), create the jobs, write the
    launch manifest; give the manifest."""
    from pipebench.datasets import materialise

    data = materialise(launch.given, log=log)
    files = data.files.get(launch.data_format)
    if not files:
        raise ConfigError(f"data: no {launch.data_format} files to upload")
    s3 = client("s3", launch.region)
    names = [Path(f).name for f in files]
    if len(set(names)) != len(names):
        raise ConfigError(f"data.files.{launch.data_format}: two files share a name; SageMaker's channel is one folder")
    log(f"uploading (or copying, for s3:// objects) {len(files)} {launch.data_format} file(s) to "
        f"{s3_join(launch.bucket, launch.prefix, 'data')}")
    try:
        if launch.source_uri:
            _, key = parse_s3_uri(launch.source_uri)
            log(f"uploading pipebench's source to {launch.source_uri}")
            s3.put_object(Bucket=launch.bucket, Key=key, Body=sourcedir.build_tarball(launch.tf_version))
        for path, name in zip(files, names):
            key = s3_key(launch.prefix, "data", launch.data_format, name)
            if str(path).startswith("s3://"):  # already on S3 (data.files may name objects): copied there
                source_bucket, source_key = parse_s3_uri(str(path))
                s3.copy({"Bucket": source_bucket, "Key": source_key}, launch.bucket, key)
            else:
                s3.upload_file(str(path), launch.bucket, key)
        config = {EXPERIMENT_FILE: launch.experiment.to_yaml().encode(),
                  DATA_LIST: json.dumps({"format": launch.data_format, "files": [
                      s3_join(launch.bucket, launch.prefix, "data", launch.data_format, n) for n in names]}).encode()}
        converter_manifest = Path(files[0]).parent / MANIFEST
        if converter_manifest.exists():
            config[MANIFEST] = converter_manifest.read_bytes()
        for name, body in config.items():
            s3.put_object(Bucket=launch.bucket, Key=s3_key(launch.prefix, "config", name), Body=body)
        sagemaker = client("sagemaker", launch.region)
        for request in launch.requests:
            sagemaker.create_training_job(**request)
            log(f"created {request['TrainingJobName']}")
        manifest = launch.manifest()
        s3.put_object(Bucket=launch.bucket, Key=s3_key(launch.prefix, LAUNCH_MANIFEST),
                      Body=json.dumps(to_json(manifest), indent=2).encode())
    except aws_errors() as err:
        raise PipebenchError(f"{launch.uri}: {err}") from None
    return manifest


def aws_errors() -> tuple[type[Exception], ...]:
    """Give the exception types boto3 raises for AWS-side failures (to turn into one-line errors)."""
    import boto3.exceptions
    import botocore.exceptions

    return (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError, boto3.exceptions.Boto3Error)
