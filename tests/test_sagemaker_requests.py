"""CreateTrainingJob requests: the dry run's JSON, and validation against botocore's SageMaker model."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import botocore.session
import botocore.validate
import pytest

from pipebench.errors import UsageError
from pipebench.sagemaker.requests import training_job_request, validate

ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"
IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/pipebench:latest"


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipebench", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def _input_shape():
    model = botocore.session.get_session().get_service_model("sagemaker")
    return model.operation_model("CreateTrainingJob").input_shape


def _request(**changes) -> dict:
    base = dict(name="deepfm-c5-9xlarge-pipe-20260101-000000", role_arn=ROLE, image_uri=IMAGE,
                instance_type="ml.c5.9xlarge", input_mode="Pipe", prefix="s3://bucket/prefix", data_format="tfrecord")
    return training_job_request(**{**base, **changes})


def test_dry_run_prints_one_request_per_instance_type_and_input_mode_and_each_validates():
    result = _cli("sagemaker", "launch", "experiments/deepfm.yaml", "--instance-type", "ml.c5.9xlarge",
                  "--instance-type", "ml.c5.18xlarge", "--input-mode", "Pipe", "--input-mode", "FastFile",
                  "--role", ROLE, "--s3", "s3://bucket/prefix", "--image-uri", IMAGE, "--sharded", "--dry-run")
    assert result.returncode == 0, result.stderr
    requests = json.loads(result.stdout)
    assert [(r["ResourceConfig"]["InstanceType"], r["InputDataConfig"][1]["InputMode"]) for r in requests] == [
        ("ml.c5.9xlarge", "Pipe"), ("ml.c5.9xlarge", "FastFile"), ("ml.c5.18xlarge", "Pipe"),
        ("ml.c5.18xlarge", "FastFile")]
    assert len({r["TrainingJobName"] for r in requests}) == 4
    shape = _input_shape()
    for request in requests:
        validate(request)
        botocore.validate.validate_parameters(request, shape)  # botocore's own check agrees
        train = request["InputDataConfig"][1]
        assert train["ChannelName"] == "train"
        assert train["DataSource"]["S3DataSource"]["S3DataDistributionType"] == "ShardedByS3Key"
        assert request["InputDataConfig"][0] == {
            "ChannelName": "config", "InputMode": "File",
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://bucket/prefix/config/",
                                            "S3DataDistributionType": "FullyReplicated"}}}
        entrypoint = request["AlgorithmSpecification"]["ContainerEntrypoint"]
        assert entrypoint == ["python3", "-m", "pipebench.sagemaker.entry"]


def test_a_bad_enum_is_caught_where_botocore_is_silent():
    request = _request(instance_type="ml.c5.huge")
    shape = _input_shape()
    botocore.validate.validate_parameters(request, shape)  # passes: botocore checks no enums
    with pytest.raises(UsageError) as err:
        validate(request)
    assert str(err.value).startswith("CreateTrainingJob.ResourceConfig.InstanceType: 'ml.c5.huge' is not allowed")


def test_a_too_long_job_name_is_caught():
    with pytest.raises(UsageError) as err:
        validate(_request(name="j" * 64))
    assert str(err.value) == "CreateTrainingJob.TrainingJobName: 64 characters, at most 63 allowed"
    with pytest.raises(UsageError, match="TrainingJobName: 'bad_name' does not match"):
        validate(_request(name="bad_name"))


def test_a_missing_required_field_is_caught():
    request = _request()
    del request["RoleArn"]
    with pytest.raises(UsageError) as err:
        validate(request)
    assert str(err.value) == "CreateTrainingJob.RoleArn: required"
    nested = copy.deepcopy(_request())
    del nested["InputDataConfig"][1]["DataSource"]["S3DataSource"]["S3Uri"]
    where = r"^CreateTrainingJob\.InputDataConfig\[1\]\.DataSource\.S3DataSource\.S3Uri: required$"
    with pytest.raises(UsageError, match=where):
        validate(nested)


def test_types_ranges_and_unknown_members_are_caught():
    with pytest.raises(UsageError, match="InstanceCount: must be an integer, not str '1'"):
        validate({**_request(), "ResourceConfig": {"InstanceType": "ml.c5.9xlarge", "InstanceCount": "1"}})
    with pytest.raises(UsageError, match="MaxRuntimeInSeconds: 0 is below the minimum 1"):
        validate(_request(max_runtime_sec=0))
    with pytest.raises(UsageError, match="HyperParamters: unknown member"):
        validate({**_request(), "HyperParamters": {}})
    with pytest.raises(UsageError, match="HyperParameters.x: 2501 characters, at most 2500 allowed"):
        validate({**_request(), "HyperParameters": {"x": "v" * 2501}})


def test_launch_errors_are_one_line():
    common = ["sagemaker", "launch", "experiments/deepfm.yaml", "--instance-type", "ml.c5.9xlarge",
              "--input-mode", "File", "--dry-run"]
    bad_uri = _cli(*common, "--role", ROLE, "--s3", "bucket/prefix", "--image-uri", IMAGE)
    assert bad_uri.returncode == 2
    assert bad_uri.stderr == "pipebench: error: bucket/prefix: not an S3 URI (expected s3://bucket/prefix)\n"
    no_image = _cli(*common, "--role", ROLE, "--s3", "s3://bucket/p", env={"PIPEBENCH_IMAGE_URI": ""})
    assert no_image.returncode == 2 and "give --image-uri" in no_image.stderr and "Traceback" not in no_image.stderr
    bad_role = _cli(*common, "--role", "not-an-arn", "--s3", "s3://b/p", "--image-uri", IMAGE)
    assert bad_role.returncode == 2 and bad_role.stderr.startswith("pipebench: error: CreateTrainingJob.RoleArn: ")
    bad_format = _cli(*common, "--role", ROLE, "--s3", "s3://b/p", "--image-uri", IMAGE, "--format", "packed", "--set",
                      "data.formats=[libsvm]")
    assert bad_format.returncode == 2 and "--format packed: not in the experiment's data.formats" in bad_format.stderr


def test_help_does_not_import_boto3_or_tensorflow():
    code = ("import sys\nfrom pipebench.cli import main\n"
            "for argv in (['--help'], ['sagemaker', '--help'], ['sagemaker', 'launch', '--help']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "print('HEAVY', sorted(m for m in ('boto3', 'botocore', 'tensorflow', 'numpy') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "HEAVY []"
