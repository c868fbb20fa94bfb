"""Launch and collect against moto in server mode on loopback: upload, create, describe, collect.

moto creates jobs but runs nothing, so the test plays SageMaker's part for each job: it lays out
/opt/ml from the job's description and the uploaded channels, runs the real entry point, and
uploads /opt/ml/output/data as `<S3OutputPath>/<job>/output/output.tar.gz`.
"""
from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import tarfile
from pathlib import Path

import boto3
import pytest
import yaml

from sagemaker_fixtures import TINY, run_like_toolkit

import pipebench.results as results
from pipebench.errors import PipebenchError
from pipebench.results.schema import SAMPLE_SCHEMA, TRIAL_SCHEMA
from pipebench.results.store import read_table
from pipebench.sources.service_cluster import ServiceCluster
from pipebench.testing import merged

ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"
IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/pipebench:latest"


def _download_prefix(s3, uri: str, into: Path) -> None:
    bucket, _, prefix = uri[len("s3://"):].partition("/")
    into.mkdir(parents=True)
    for item in s3.list_objects_v2(Bucket=bucket, Prefix=prefix)["Contents"]:
        s3.download_file(bucket, item["Key"], str(into / item["Key"][len(prefix):]))


def _lay_out(job: dict, root: Path) -> None:
    """Lay out /opt/ml for the described job under `root`: config files and the channels' data, as SageMaker does."""
    s3 = boto3.client("s3")
    config = root / "input" / "config"
    config.mkdir(parents=True)
    (config / "hyperparameters.json").write_text(json.dumps(job["HyperParameters"]))
    resources = job["ResourceConfig"]
    instance_type = resources.get("InstanceType") or resources["InstanceGroups"][0]["InstanceType"]
    (config / "resourceconfig.json").write_text(json.dumps(
        {"current_host": "algo-1", "hosts": ["algo-1"], "current_instance_type": instance_type}))
    (config / "inputdataconfig.json").write_text(json.dumps({
        c["ChannelName"]: {"TrainingInputMode": c["InputMode"], "RecordWrapperType": "None",
                           "S3DistributionType": c["DataSource"]["S3DataSource"]["S3DataDistributionType"]}
        for c in job["InputDataConfig"]}))
    for channel in job["InputDataConfig"]:  # File and FastFile both show the prefix as a folder
        uri = channel["DataSource"]["S3DataSource"]["S3Uri"]
        _download_prefix(s3, uri, root / "input" / "data" / channel["ChannelName"])


def _play_sagemaker(job: dict, root: Path) -> subprocess.Popen:
    """Lay out /opt/ml for the described job under `root` and start its entry point (as SageMaker would)."""
    _lay_out(job, root)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SM_", "AWS_"))}
    return subprocess.Popen([sys.executable, "-m", "pipebench.sagemaker.entry"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**env, "SAGEMAKER_BASE_DIR": str(root)})


def _upload_output(job: dict, root: Path) -> None:
    """Upload /opt/ml/output/data as SageMaker does: one output.tar.gz under <S3OutputPath>/<job>/output/."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted((root / "output" / "data").iterdir()):
            tar.add(path, arcname=path.name)
    bucket, _, prefix = job["OutputDataConfig"]["S3OutputPath"][len("s3://"):].partition("/")
    boto3.client("s3").put_object(Bucket=bucket, Key=f"{prefix}/{job['TrainingJobName']}/output/output.tar.gz",
                                  Body=buffer.getvalue())


@pytest.mark.tf
def test_launch_creates_the_jobs_and_collect_merges_their_results(tmp_path, aws, cli):
    experiment = tmp_path / "tiny.yaml"
    experiment.write_text(yaml.safe_dump(merged(TINY, {"data": {"cache_dir": str(tmp_path / "cache")}})))
    launched = cli("sagemaker", "launch", str(experiment), "--instance-type", "ml.c5.xlarge", "--input-mode", "File",
                   "--input-mode", "FastFile", "--sharded", "--role", ROLE, "--s3", "s3://bench/launch",
                   "--image-uri", IMAGE)
    assert launched.returncode == 0, launched.stdout + launched.stderr
    assert "pipebench sagemaker collect s3://bench/launch --out DIR" in launched.stdout

    s3, sagemaker = boto3.client("s3"), boto3.client("sagemaker")
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket="bench", Prefix="launch/")["Contents"]}
    assert {"launch/config/experiment.yaml", "launch/config/data.json", "launch/config/manifest.json",
            "launch/data/tfrecord/part-00000-of-00002.tfrecord", "launch/data/tfrecord/part-00001-of-00002.tfrecord",
            "launch/pipebench-launch.json"} == keys
    manifest = json.loads(s3.get_object(Bucket="bench", Key="launch/pipebench-launch.json")["Body"].read())
    assert [(j["instance_type"], j["input_mode"], j["distribution"]) for j in manifest["jobs"]] == [
        ("ml.c5.xlarge", "File", "ShardedByS3Key"), ("ml.c5.xlarge", "FastFile", "ShardedByS3Key")]

    jobs = [sagemaker.describe_training_job(TrainingJobName=j["name"]) for j in manifest["jobs"]]
    for job, mode in zip(jobs, ("File", "FastFile")):
        assert job["InputDataConfig"] == [
            {"ChannelName": "config", "InputMode": "File",
             "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://bench/launch/config/",
                                             "S3DataDistributionType": "FullyReplicated"}}},
            {"ChannelName": "train", "InputMode": mode,
             "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://bench/launch/data/tfrecord/",
                                             "S3DataDistributionType": "ShardedByS3Key"}}}]
        assert job["AlgorithmSpecification"]["TrainingInputMode"] == mode
        assert job["ResourceConfig"]["InstanceType"] == "ml.c5.xlarge"

    not_yet = cli("sagemaker", "collect", "s3://bench/launch", "--out", str(tmp_path / "early"))
    assert not_yet.returncode == 1 and "output.tar.gz: missing, though job" in not_yet.stderr
    assert not (tmp_path / "early").exists()

    roots = [tmp_path / f"job-{i}" for i in range(len(jobs))]
    running = [_play_sagemaker(job, root) for job, root in zip(jobs, roots)]
    for proc in running:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, out
    for job, root in zip(jobs, roots):
        _upload_output(job, root)

    collected = cli("sagemaker", "collect", "s3://bench/launch", "--out", str(tmp_path / "merged"))
    assert collected.returncode == 0, collected.stdout + collected.stderr
    trials = read_table(tmp_path / "merged" / "trials.parquet", TRIAL_SCHEMA).to_pandas()
    assert sorted(zip(trials["instance_type"], trials["source_mode"], trials["status"])) == [
        ("ml.c5.xlarge", "fastfile", "ok"), ("ml.c5.xlarge", "file", "ok")]
    assert trials["trial_id"].is_unique and trials["run_id"].nunique() == 2
    samples = read_table(tmp_path / "merged" / "samples.parquet", SAMPLE_SCHEMA).to_pandas()
    assert set(samples["trial_id"]) <= set(trials["trial_id"])
    runs = results.load_many([tmp_path / "merged"], allow_mixed=True)  # one run folder per job and host
    assert sorted(r.trials["source_mode"].iloc[0] for r in runs) == ["fastfile", "file"]
    assert {r.machine.sagemaker.instance_type for r in runs} == {"ml.c5.xlarge"} and runs[0].config["name"] == "tiny"
    with pytest.raises(PipebenchError, match="holds 2 run folders"):
        results.load(tmp_path / "merged")
    listed = json.loads((tmp_path / "merged" / "jobs.json").read_text())
    assert sorted((j["input_mode"], j["job_name"]) for j in listed) == sorted(
        (j["input_mode"], j["name"]) for j in manifest["jobs"])
    for mode in ("File", "FastFile"):  # each job's run folder, as `pipebench run` wrote it
        assert len(results.load(tmp_path / "merged" / "ml.c5.xlarge" / mode / "algo-1").trials) == 1


def test_collect_errors_are_one_line(tmp_path, aws, cli):
    missing = cli("sagemaker", "collect", "s3://bench/nothing", "--out", str(tmp_path / "o"))
    assert missing.returncode == 1
    assert missing.stderr == ("pipebench: error: s3://bench/nothing/pipebench-launch.json: missing; not a folder "
                              "`pipebench sagemaker launch` wrote to\n")
    bad = cli("sagemaker", "collect", "bench/nothing", "--out", str(tmp_path / "o"))
    assert bad.returncode == 2
    assert bad.stderr == "pipebench: error: bench/nothing: not an S3 URI (expected s3://bucket/prefix)\n"
    no_bucket = cli("sagemaker", "collect", "s3://no-such-bucket/x", "--out", str(tmp_path / "o"))
    assert no_bucket.returncode == 1 and "NoSuchBucket" in no_bucket.stderr and "Traceback" not in no_bucket.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.tf
def test_script_mode_launch_ships_the_source_and_a_heterogeneous_job_records_what_fed_it(tmp_path, aws, cli,
                                                                                        monkeypatch):
    """Without --image-uri: the source tarball is uploaded, and the trainer host of a job with a data-worker group,
    played from the uploaded tarball as the toolkit runs it, records its group and feeders and stops the data host.

    The data host is played by a plain socket on its shutdown port (moved to a free one in the job's
    hyperparameters.json): the data role's servers are tested on their own in test_sagemaker_cluster.py.
    """
    experiment = tmp_path / "tiny.yaml"
    experiment.write_text(yaml.safe_dump(merged(TINY, {"data": {"cache_dir": str(tmp_path / "cache")}})))
    monkeypatch.setenv("PIPEBENCH_IMAGE_URI", "")
    launched = cli("sagemaker", "launch", str(experiment), "--instance-type", "ml.c5.xlarge", "--input-mode", "File",
                   "--data-workers", "ml.c5.2xlarge:1", "--role", ROLE, "--s3", "s3://bench/launch")
    assert launched.returncode == 0, launched.stdout + launched.stderr
    assert "uploading pipebench's source to s3://bench/launch/source/sourcedir.tar.gz" in launched.stdout

    s3, sagemaker = boto3.client("s3"), boto3.client("sagemaker")
    tarball = s3.get_object(Bucket="bench", Key="launch/source/sourcedir.tar.gz")["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as tar:
        names = set(tar.getnames())
        requirements = tar.extractfile("requirements.txt").read().decode()
    assert {"pipebench_entry.py", "requirements.txt", "pipebench/sagemaker/entry.py", "pipebench/catalog.yaml",
            "pipebench/converters/__init__.py"} <= names
    assert not any("__pycache__" in n for n in names)
    assert "numba>=0.58\n" in requirements and "numpy<2\n" in requirements and "extra" not in requirements
    manifest = json.loads(s3.get_object(Bucket="bench", Key="launch/pipebench-launch.json")["Body"].read())
    assert (manifest["source"], manifest["tf_version"], manifest["data_workers"]) == (
        "s3://bench/launch/source/sourcedir.tar.gz", "2.14.1", [{"instance_type": "ml.c5.2xlarge", "count": 1}])
    (job,) = [sagemaker.describe_training_job(TrainingJobName=j["name"]) for j in manifest["jobs"]]
    assert job["AlgorithmSpecification"]["TrainingImage"] == (
        "763104351884.dkr.ecr.us-east-1.amazonaws.com/tensorflow-training:2.14.1-cpu-py310")
    assert job["HyperParameters"]["sagemaker_submit_directory"] == '"s3://bench/launch/source/sourcedir.tar.gz"'

    # SageMaker's part for the trainer host: /opt/ml from the job, groups in resourceconfig.json, the
    # submit directory downloaded and extracted into /opt/ml/code, then the program run as the toolkit does.
    root = tmp_path / "job"
    _lay_out(job, root)
    data_host = socket.create_server(("127.0.0.1", 0))
    # the data host's tf.data service: a real dispatcher and worker, which the trainer's service trials read through
    service = ServiceCluster(1, fixed_worker_list=False)
    config = root / "input" / "config"
    hyperparameters = {**job["HyperParameters"], "pipebench_shutdown_port": str(data_host.getsockname()[1])}
    (config / "hyperparameters.json").write_text(json.dumps(hyperparameters))
    (config / "resourceconfig.json").write_text(json.dumps({
        "current_host": "algo-1", "current_instance_type": "ml.c5.xlarge", "current_group_name": "trainer",
        "hosts": ["algo-1", "localhost"], "network_interface_name": "eth0", "instance_groups": [
            {"instance_group_name": "trainer", "instance_type": "ml.c5.xlarge", "hosts": ["algo-1"]},
            {"instance_group_name": "data-1", "instance_type": "ml.c5.2xlarge", "hosts": ["localhost"]}]}))
    bucket, _, key = json.loads(hyperparameters["sagemaker_submit_directory"])[len("s3://"):].partition("/")
    with tarfile.open(fileobj=io.BytesIO(s3.get_object(Bucket=bucket, Key=key)["Body"].read()), mode="r:gz") as tar:
        tar.extractall(root / "code")
    with data_host, service:
        dispatcher_port = service.dispatcher.rsplit(":", 1)[1]
        hyperparameters["pipebench_dispatcher_port"] = dispatcher_port
        (config / "hyperparameters.json").write_text(json.dumps(hyperparameters))
        result = run_like_toolkit(root, root / "code")
        data_host.settimeout(10)
        told, _ = data_host.accept()  # the trainer told the data host to stop
        told.close()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "fed by data-1" in result.stdout
    _upload_output(job, root)

    collected = cli("sagemaker", "collect", "s3://bench/launch", "--out", str(tmp_path / "merged"))
    assert collected.returncode == 0, collected.stdout + collected.stderr
    (listed,) = json.loads((tmp_path / "merged" / "jobs.json").read_text())
    assert (listed["role"], listed["instance_group"], listed["service_dispatcher"], listed["fed_by"]) == (
        "trainer", "trainer", f"localhost:{dispatcher_port}", [{"group": "data-1", "instance_type": "ml.c5.2xlarge",
                                                  "hosts": ["localhost"]}])
    trials = read_table(tmp_path / "merged" / "trials.parquet", TRIAL_SCHEMA).to_pandas()
    # the trainer measured its channel and the job's service (one worker per data host)
    # collected as the row builder wrote them on the host: the service trial's source_mode is `service`
    assert sorted(zip(trials["instance_type"], trials["source_mode"], trials["status"])) == [
        ("ml.c5.xlarge", "file", "ok"), ("ml.c5.xlarge", "service", "ok")]
    served = trials[trials["service_json"].notna()]
    assert len(served) == 1 and json.loads(served["service_json"].iloc[0])["workers"] == 1


def test_launch_copies_data_already_on_s3_instead_of_reading_it_as_a_local_file(tmp_path, aws, cli):
    """data.files may name s3:// objects (their bytes are not read here): launch copies them into its folder."""
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="mine")
    s3.put_object(Bucket="mine", Key="criteo/train-0.tfrecord", Body=b"first")
    s3.put_object(Bucket="mine", Key="criteo/train-1.tfrecord", Body=b"second")
    experiment = tmp_path / "remote.yaml"
    files = ["s3://mine/criteo/train-0.tfrecord", "s3://mine/criteo/train-1.tfrecord"]
    experiment.write_text(yaml.safe_dump({**TINY, "data": {"files": {"tfrecord": files}}}))
    launched = cli("sagemaker", "launch", str(experiment), "--instance-type", "ml.c5.xlarge", "--input-mode", "File",
                   "--role", ROLE, "--s3", "s3://bench/launch", "--image-uri", IMAGE)
    assert launched.returncode == 0, launched.stdout + launched.stderr
    assert [s3.get_object(Bucket="bench", Key=f"launch/data/tfrecord/train-{i}.tfrecord")["Body"].read()
            for i in (0, 1)] == [b"first", b"second"]
