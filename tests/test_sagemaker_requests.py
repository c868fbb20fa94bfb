"""CreateTrainingJob requests: the dry run's JSON, validation against botocore's SageMaker model, S3 bucket names."""
from __future__ import annotations

import copy
import json
import os

import botocore.loaders
import botocore.regions
import botocore.session
import botocore.validate
import pytest

from pipebench.errors import UsageError
from pipebench.sagemaker import images
from pipebench.sagemaker.cluster import DataWorkers
from pipebench.sagemaker.requests import training_job_request, validate
from pipebench.sagemaker.s3uri import bucket_problem, launch_folder

ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"
IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/pipebench:latest"


#: No region from the environment or a profile: each test says the region it means.
NO_REGION = {"AWS_DEFAULT_REGION": "", "AWS_REGION": "", "AWS_CONFIG_FILE": os.devnull}


@pytest.fixture
def launch(cli, monkeypatch):
    """Give run(*args, env=None): `pipebench ARGS` in-process, with no AWS profile, no region (NO_REGION) and `env`."""
    monkeypatch.delenv("AWS_PROFILE", raising=False)

    def run(*args: str, env: dict | None = None):
        with monkeypatch.context() as patch:
            for name, value in {**NO_REGION, **(env or {})}.items():
                patch.setenv(name, value)
            return cli(*args)

    return run


def _input_shape():
    model = botocore.session.get_session().get_service_model("sagemaker")
    return model.operation_model("CreateTrainingJob").input_shape


def _request(**changes) -> dict:
    base = dict(name="deepfm-c5-9xlarge-pipe-20260101-000000", role_arn=ROLE, image_uri=IMAGE,
                instance_type="ml.c5.9xlarge", input_mode="Pipe", prefix="s3://bucket/prefix", data_format="tfrecord")
    return training_job_request(**{**base, **changes})


def test_dry_run_prints_one_request_per_instance_type_and_input_mode_and_each_validates(launch):
    result = launch("sagemaker", "launch", "experiments/deepfm.yaml", "--instance-type", "ml.c5.9xlarge",
                  "--instance-type", "ml.c5.18xlarge", "--input-mode", "Pipe", "--input-mode", "FastFile",
                  "--role", ROLE, "--s3", "s3://bucket/prefix", "--image-uri", IMAGE, "--sharded", "--dry-run")
    assert result.returncode == 0, result.stderr
    requests = json.loads(result.stdout)["requests"]
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


def test_launch_errors_are_one_line(launch):
    common = ["sagemaker", "launch", "experiments/deepfm.yaml", "--instance-type", "ml.c5.9xlarge",
              "--input-mode", "File", "--dry-run"]
    bad_uri = launch(*common, "--role", ROLE, "--s3", "bucket/prefix", "--image-uri", IMAGE)
    assert bad_uri.returncode == 2
    assert bad_uri.stderr == "pipebench: error: bucket/prefix: not an S3 URI (expected s3://bucket/prefix)\n"
    no_region = launch(*common, "--role", ROLE, "--s3", "s3://bucket/p", env={"PIPEBENCH_IMAGE_URI": ""})
    assert no_region.returncode == 2 and no_region.stderr == (
        "pipebench: error: sagemaker launch: no AWS region for the official image; give --region or set "
        "AWS_DEFAULT_REGION\n")
    bad_role = launch(*common, "--role", "not-an-arn", "--s3", "s3://bench/p", "--image-uri", IMAGE)
    assert bad_role.returncode == 2 and bad_role.stderr.startswith("pipebench: error: CreateTrainingJob.RoleArn: ")
    bad_format = launch(*common, "--role", ROLE, "--s3", "s3://bench/p", "--image-uri", IMAGE, "--format", "packed", "--set",
                      "data.formats=[libsvm]")
    assert bad_format.returncode == 2 and "--format packed: not in the experiment's data.formats" in bad_format.stderr


def test_the_region_is_looked_up_only_for_the_official_image(cli, monkeypatch):
    # no region in the environment and a profile that does not exist: any lookup of the region fails
    for name in ("AWS_DEFAULT_REGION", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {"AWS_PROFILE": "no-such-profile", "AWS_CONFIG_FILE": os.devnull, "PIPEBENCH_IMAGE_URI": ""}.items():
        monkeypatch.setenv(name, value)
    common = ["sagemaker", "launch", "experiments/deepfm.yaml", "--instance-type", "ml.c5.9xlarge", "--input-mode",
              "File", "--role", ROLE, "--s3", "s3://bucket/p", "--dry-run"]
    custom = cli(*common, "--image-uri", IMAGE)
    assert custom.returncode == 0, custom.stderr
    official = cli(*common)
    assert official.returncode == 2 and official.stderr == ("pipebench: error: AWS configuration: The config profile "
                                                            "(no-such-profile) could not be found\n")


@pytest.mark.parametrize("region, account, host", [
    ("us-east-1", "763104351884", "ecr.us-east-1.amazonaws.com"),
    ("eu-west-1", "763104351884", "ecr.eu-west-1.amazonaws.com"),
    ("cn-north-1", "727897471807", "ecr.cn-north-1.amazonaws.com.cn")])
def test_dry_run_without_an_image_runs_the_official_tensorflow_image_in_script_mode(region, account, host, launch):
    result = launch("sagemaker", "launch", "experiments/deepfm.yaml", "--instance-type", "ml.c5.9xlarge",
                  "--instance-type", "ml.g5.xlarge", "--input-mode", "Pipe", "--input-mode", "File", "--role", ROLE,
                  "--s3", "s3://bucket/prefix", "--region", region, "--dry-run", env={"PIPEBENCH_IMAGE_URI": ""})
    assert result.returncode == 0, result.stderr
    dry = json.loads(result.stdout)
    shape = _input_shape()
    images_of = {}
    for request in dry["requests"]:
        validate(request)
        botocore.validate.validate_parameters(request, shape)
        algorithm = request["AlgorithmSpecification"]
        assert "ContainerEntrypoint" not in algorithm  # the image's own entry point: the training toolkit
        images_of[request["ResourceConfig"]["InstanceType"]] = algorithm["TrainingImage"]
        assert {k: v for k, v in request["HyperParameters"].items() if k.startswith("sagemaker_")} == {
            "sagemaker_program": '"pipebench_entry.py"',
            "sagemaker_submit_directory": '"s3://bucket/prefix/source/sourcedir.tar.gz"',
            "sagemaker_region": f'"{region}"', "sagemaker_container_log_level": "20"}
    assert images_of == {"ml.c5.9xlarge": f"{account}.dkr.{host}/tensorflow-training:2.14.1-cpu-py310",
                         "ml.g5.xlarge": f"{account}.dkr.{host}/tensorflow-training:2.14.1-gpu-py310"}
    uploads = {u["s3"]: u["local"] for u in dry["uploads"]}
    assert "pipebench_entry.py and requirements.txt, packed as sourcedir.tar.gz" in uploads[
        "s3://bucket/prefix/source/sourcedir.tar.gz"]
    assert {"s3://bucket/prefix/config/experiment.yaml", "s3://bucket/prefix/config/data.json",
            "s3://bucket/prefix/data/tfrecord/"} <= set(uploads)


def test_the_image_table_follows_the_sdks_rules():
    assert images.training_image_uri("us-west-2", "2.19", "ml.p4d.24xlarge") == (
        "763104351884.dkr.ecr.us-west-2.amazonaws.com/tensorflow-training:2.19.0-gpu-py312")
    assert images.training_image_uri("ap-south-2", "2.16.2", "ml.m5.large") == (
        "772153158452.dkr.ecr.ap-south-2.amazonaws.com/tensorflow-training:2.16.2-cpu-py310")
    assert images.has_pipe_mode_dataset("2.14") and not images.has_pipe_mode_dataset("2.18")
    with pytest.raises(UsageError, match=r"ml.trn1.2xlarge: no TensorFlow training image for trn1 \(Inferentia / "):
        images.training_image_uri("us-east-1", "2.14", "ml.trn1.2xlarge")
    with pytest.raises(UsageError, match=r"--instance-type c5.xlarge: not a SageMaker instance type \(ml.FAMILY.SIZE\)"):
        images.processor("c5.xlarge")
    resolver = botocore.regions.EndpointResolver(botocore.loaders.create_loader().load_data("endpoints"))
    for region in images.REGISTRIES:  # the table's ECR hosts are botocore's, as the SDK resolves them
        assert images.ecr_host(region) == resolver.construct_endpoint("ecr", region)["hostname"], region


def test_unknown_versions_regions_and_pipe_without_its_dataset_are_one_line_errors(launch):
    common = ["sagemaker", "launch", "experiments/deepfm.yaml", "--instance-type", "ml.c5.9xlarge", "--role", ROLE,
              "--s3", "s3://bucket/p", "--dry-run"]
    cases = [
        (["--input-mode", "File", "--region", "us-east-1", "--tf-version", "2.15"],
         "--tf-version 2.15: no SageMaker TensorFlow training image (versions: 2.14, 2.16, 2.18, 2.19); give "
         "--image-uri for another"),
        (["--input-mode", "File", "--region", "mars-north-1"],
         "--region mars-north-1: no SageMaker TensorFlow 2.14.1 training image there (SDK table of 2026-08-21); "
         "give --image-uri"),
        (["--input-mode", "File", "--region", "us-iso-east-1", "--tf-version", "2.19"],
         "--region us-iso-east-1: no SageMaker TensorFlow 2.19.0 training image there (SDK table of 2026-08-21); "
         "give --image-uri"),
        (["--input-mode", "Pipe", "--region", "us-east-1", "--tf-version", "2.18"],
         "--input-mode Pipe: the TensorFlow 2.18.0 training image has no sagemaker-tensorflow (PipeModeDataset; "
         "only 2.14.1 has it): use --tf-version 2.14 or an --image-uri with it")]
    for args, says in cases:
        result = launch(*common, *args, env={"PIPEBENCH_IMAGE_URI": ""})
        assert (result.returncode, result.stderr) == (2, f"pipebench: error: {says}\n"), args


def test_data_workers_make_a_heterogeneous_cluster_whose_channels_reach_every_group(launch):
    result = launch("sagemaker", "launch", "experiments/deepfm.yaml", "--instance-type", "ml.p3.2xlarge",
                  "--input-mode", "FastFile", "--role", ROLE, "--s3", "s3://bucket/prefix", "--region", "us-east-1",
                  "--data-workers", "ml.c5.18xlarge:2", "--data-workers", "ml.c5.9xlarge:1", "--dry-run")
    assert result.returncode == 0, result.stderr
    (request,) = json.loads(result.stdout)["requests"]
    validate(request)
    botocore.validate.validate_parameters(request, _input_shape())
    assert request["ResourceConfig"] == {"VolumeSizeInGB": 30, "InstanceGroups": [
        {"InstanceType": "ml.p3.2xlarge", "InstanceCount": 1, "InstanceGroupName": "trainer"},
        {"InstanceType": "ml.c5.18xlarge", "InstanceCount": 2, "InstanceGroupName": "data-1"},
        {"InstanceType": "ml.c5.9xlarge", "InstanceCount": 1, "InstanceGroupName": "data-2"}]}
    for channel in request["InputDataConfig"]:
        assert channel["DataSource"]["S3DataSource"]["InstanceGroupNames"] == ["trainer", "data-1", "data-2"]
    assert (request["HyperParameters"]["pipebench_trainer_group"], request["HyperParameters"]["pipebench_data_groups"]
            ) == ("trainer", "data-1,data-2")
    # One image for the job: the GPU one, since the trainer has GPUs (it runs on the CPU data workers too).
    assert request["AlgorithmSpecification"]["TrainingImage"].endswith("tensorflow-training:2.14.1-gpu-py310")


def test_cluster_limits_and_routing_are_checked(launch):
    with pytest.raises(UsageError, match="SageMaker allows 5 instance groups, the trainer's included, so at most 4"):
        _request(input_mode="File", data_workers=(DataWorkers("ml.c5.xlarge", 1),) * 5)
    request = _request(input_mode="File", data_workers=(DataWorkers("ml.c5.xlarge", 1),))
    validate(request)
    request["InputDataConfig"][1]["DataSource"]["S3DataSource"]["InstanceGroupNames"] = ["trainer", "data-9"]
    with pytest.raises(UsageError) as err:
        validate(request)
    assert str(err.value) == ("CreateTrainingJob.InputDataConfig[1].DataSource.S3DataSource.InstanceGroupNames: "
                              "'data-9' is not an instance group of the job (trainer, data-1)")
    common = ["sagemaker", "launch", "experiments/deepfm.yaml", "--instance-type", "ml.p3.2xlarge", "--role", ROLE,
              "--s3", "s3://bucket/p", "--region", "us-east-1", "--dry-run"]
    bad = launch(*common, "--input-mode", "File", "--data-workers", "ml.c5.xlarge")
    assert bad.returncode == 2 and bad.stderr == ("pipebench: error: --data-workers 'ml.c5.xlarge': expected "
                                                  "TYPE:COUNT, e.g. ml.c5.18xlarge:2 (count >= 1)\n")
    pipe = launch(*common, "--input-mode", "Pipe", "--data-workers", "ml.c5.xlarge:1")
    assert pipe.returncode == 2 and "a tf.data service worker cannot run it" in pipe.stderr
    unknown = launch(*common, "--input-mode", "File", "--data-workers", "ml.c5.huge:1")
    assert unknown.returncode == 2 and unknown.stderr.startswith("pipebench: error: CreateTrainingJob.ResourceConfig."
                                                                 "InstanceGroups[1].InstanceType: 'ml.c5.huge' is not allowed")


def test_the_dry_run_lists_given_data_files_and_their_manifest_where_submit_puts_them(tmp_path, launch):
    for name in ("part-0.tfrecord", "part-1.tfrecord", "manifest.json"):
        (tmp_path / name).write_bytes(b"x")
    result = launch("sagemaker", "launch", "experiments/deepfm.yaml", "--instance-type", "ml.c5.xlarge",
                  "--input-mode", "File", "--role", ROLE, "--s3", "s3://bucket/p", "--image-uri", IMAGE,
                  "--set", f'data.files={{"tfrecord": ["{tmp_path}/part-*"]}}', "--dry-run")
    assert result.returncode == 0, result.stderr
    uploads = json.loads(result.stdout)["uploads"]
    assert uploads == [  # a custom image: no source tarball
        {"local": "the resolved experiment 'deepfm'", "s3": "s3://bucket/p/config/experiment.yaml"},
        {"local": "the data files' S3 URIs", "s3": "s3://bucket/p/config/data.json"},
        {"local": f"{tmp_path}/part-0.tfrecord", "s3": "s3://bucket/p/data/tfrecord/part-0.tfrecord"},
        {"local": f"{tmp_path}/part-1.tfrecord", "s3": "s3://bucket/p/data/tfrecord/part-1.tfrecord"},
        {"local": f"{tmp_path}/manifest.json", "s3": "s3://bucket/p/config/manifest.json"}]


@pytest.mark.parametrize("name", ["bench", "abc", "my.bucket-1", "a" * 63, "1.2.3", "xn-bucket", "bucket-s3alia",
                                  "sthree", "9bucket9"])
def test_bucket_names_s3_accepts_pass_its_rules(name):
    assert bucket_problem(name) is None
    assert launch_folder(f"s3://{name}/launch/") == (name, "launch")
