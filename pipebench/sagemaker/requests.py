"""CreateTrainingJob requests as plain data, checked against botocore's SageMaker service model.

botocore's own parameter validator checks required members and types but not enums, lengths,
value ranges or patterns, so `validate` walks the operation's input shape and checks those too:
a request that passes here is one the service's documented constraints accept. Only botocore is
imported (for its bundled model), and only when validating.
"""
from __future__ import annotations

import datetime as dt
import json
import re
from functools import lru_cache
from typing import Any

from pipebench.errors import UsageError
from pipebench.sagemaker.cluster import HP_DATA_GROUPS, HP_TRAINER_GROUP, TRAINER_GROUP, DataWorkers, data_group_names

#: A custom image runs pipebench's entry point (pipebench installed); an official image runs the toolkit's.
ENTRYPOINT = ["python3", "-m", "pipebench.sagemaker.entry"]
DATA_CHANNEL = "train"
CONFIG_CHANNEL = "config"


def job_name(experiment: str, instance_type: str, input_mode: str, when: dt.datetime) -> str:
    """Give a job name that fits SageMaker's pattern and 63 characters: experiment, instance, mode, time."""
    kind = instance_type.removeprefix("ml.").replace(".", "-")
    tail = f"-{kind}-{input_mode.lower()}-{when:%Y%m%d-%H%M%S}"
    stem = re.sub(r"[^A-Za-z0-9]+", "-", experiment).strip("-") or "pipebench"
    return f"{stem[: 63 - len(tail)].rstrip('-')}{tail}"


def _channel(name: str, s3_uri: str, input_mode: str, distribution: str, groups: list[str]) -> dict:
    source = {"S3DataType": "S3Prefix", "S3Uri": s3_uri, "S3DataDistributionType": distribution}
    if groups:
        source["InstanceGroupNames"] = list(groups)
    return {"ChannelName": name, "InputMode": input_mode, "DataSource": {"S3DataSource": source}}


def script_mode_hyperparameters(submit_dir: str, region: str, program: str) -> dict[str, str]:
    """Give the hyperparameters by which the training toolkit finds and runs the shipped source.

    JSON-encoded, as the SageMaker Python SDK passes them (the toolkit decodes each value it can).
    """
    return {"sagemaker_program": json.dumps(program), "sagemaker_submit_directory": json.dumps(submit_dir),
            "sagemaker_region": json.dumps(region), "sagemaker_container_log_level": "20"}


def training_job_request(*, name: str, role_arn: str, image_uri: str, instance_type: str, input_mode: str,
                         prefix: str, data_format: str, sharded: bool = False, instance_count: int = 1,
                         volume_gb: int = 30, max_runtime_sec: int = 86_400, script_mode: dict | None = None,
                         data_workers: tuple[DataWorkers, ...] = ()) -> dict:
    """Give one CreateTrainingJob request: config channel (File), data channel `train` in `input_mode`.

    `prefix` is the launch's S3 folder (no trailing slash): `config/` holds the resolved experiment
    and the data list, `data/<format>/` the data files, and outputs go to `output/<job>/output/`.
    `script_mode` (script_mode_hyperparameters) runs the image's own entry point, the training
    toolkit, on the shipped source; without it the image must have pipebench installed. With
    `data_workers` the job is a heterogeneous cluster: a `trainer` group of `instance_count`
    `instance_type` hosts and one group per DataWorkers, every channel routed to every group.
    """
    distribution = "ShardedByS3Key" if sharded else "FullyReplicated"
    algorithm = {"TrainingImage": image_uri, "TrainingInputMode": input_mode}
    if script_mode is None:
        algorithm["ContainerEntrypoint"] = list(ENTRYPOINT)
    # SageMaker tells a custom entry point its job name only through what the request passes on.
    hyperparameters = {"pipebench_job_name": name, **(script_mode or {})}
    resources: dict = {"VolumeSizeInGB": volume_gb}
    groups: list[str] = []
    if data_workers:
        names = data_group_names(len(data_workers))
        groups = [TRAINER_GROUP, *names]
        # InstanceGroups replaces InstanceType / InstanceCount: SageMaker takes one or the other.
        resources["InstanceGroups"] = [
            {"InstanceType": instance_type, "InstanceCount": instance_count, "InstanceGroupName": TRAINER_GROUP},
            *({"InstanceType": w.instance_type, "InstanceCount": w.count, "InstanceGroupName": group}
              for w, group in zip(data_workers, names))]
        hyperparameters.update({HP_TRAINER_GROUP: TRAINER_GROUP, HP_DATA_GROUPS: ",".join(names)})
    else:
        resources.update({"InstanceType": instance_type, "InstanceCount": instance_count})
    return {
        "TrainingJobName": name,
        "RoleArn": role_arn,
        "AlgorithmSpecification": algorithm,
        "HyperParameters": hyperparameters,
        "InputDataConfig": [
            # The experiment is a file the job reads: the resolved YAML outgrows a hyperparameter (2500 chars).
            _channel(CONFIG_CHANNEL, f"{prefix}/config/", "File", "FullyReplicated", groups),
            # Every group gets the data: the trainer reads it itself until its trials read through the service.
            _channel(DATA_CHANNEL, f"{prefix}/data/{data_format}/", input_mode, distribution, groups),
        ],
        "OutputDataConfig": {"S3OutputPath": f"{prefix}/output"},
        "ResourceConfig": resources,
        "StoppingCondition": {"MaxRuntimeInSeconds": max_runtime_sec},
    }


def trainer_instance_type(request: dict) -> str:
    """Give the instance type that runs the experiment: the job's, or its trainer group's."""
    resources = request["ResourceConfig"]
    groups = {g["InstanceGroupName"]: g["InstanceType"] for g in resources.get("InstanceGroups", [])}
    return groups[TRAINER_GROUP] if groups else resources["InstanceType"]


def check_instance_groups(request: dict) -> None:
    """Check what the model cannot say: group names unique, and each channel's InstanceGroupNames a group."""
    groups = [g["InstanceGroupName"] for g in request.get("ResourceConfig", {}).get("InstanceGroups", [])]
    if len(set(groups)) != len(groups):
        _fail("CreateTrainingJob.ResourceConfig.InstanceGroups", f"group names repeat: {', '.join(groups)}")
    for i, channel in enumerate(request.get("InputDataConfig", [])):
        for name in channel["DataSource"]["S3DataSource"].get("InstanceGroupNames", []):
            if name not in groups:
                _fail(f"CreateTrainingJob.InputDataConfig[{i}].DataSource.S3DataSource.InstanceGroupNames",
                      f"{name!r} is not an instance group of the job ({', '.join(groups) or 'none'})")


@lru_cache(maxsize=1)
def _service_model():
    """Give botocore's SageMaker model from its data files: no session, so no AWS profile is read."""
    import botocore.loaders
    import botocore.model

    return botocore.model.ServiceModel(botocore.loaders.create_loader().load_service_model("sagemaker", "service-2"),
                                       "sagemaker")


def _fail(where: str, reason: str) -> None:
    raise UsageError(f"{where}: {reason}")


def _check_size(size: int, meta: dict, where: str, unit: str) -> None:
    if "min" in meta and size < meta["min"]:
        _fail(where, f"{size} {unit}, at least {meta['min']} needed")
    if "max" in meta and size > meta["max"]:
        _fail(where, f"{size} {unit}, at most {meta['max']} allowed")


def _check(value: Any, shape, where: str) -> None:
    meta, kind = shape.metadata, shape.type_name
    if kind == "structure":
        if not isinstance(value, dict):
            _fail(where, f"must be an object, not {type(value).__name__}")
        for name in shape.required_members:
            if name not in value:
                _fail(f"{where}.{name}", "required")
        for name, item in value.items():
            if name not in shape.members:
                _fail(f"{where}.{name}", f"unknown member (expected one of {', '.join(shape.members)})")
            _check(item, shape.members[name], f"{where}.{name}")
    elif kind == "list":
        if not isinstance(value, list):
            _fail(where, f"must be a list, not {type(value).__name__}")
        _check_size(len(value), meta, where, "items")
        for i, item in enumerate(value):
            _check(item, shape.member, f"{where}[{i}]")
    elif kind == "map":
        if not isinstance(value, dict):
            _fail(where, f"must be an object, not {type(value).__name__}")
        _check_size(len(value), meta, where, "entries")
        for key, item in value.items():
            _check(key, shape.key, f"{where} key {key!r}")
            _check(item, shape.value, f"{where}.{key}")
    elif kind == "string":
        if not isinstance(value, str):
            _fail(where, f"must be a string, not {type(value).__name__} {value!r}")
        if shape.enum and value not in shape.enum:
            allowed = ", ".join(shape.enum) if len(shape.enum) <= 10 else f"one of {len(shape.enum)} values"
            _fail(where, f"{value!r} is not allowed ({allowed})")
        _check_size(len(value), meta, where, "characters")
        pattern = _compiled(meta.get("pattern"))
        if pattern is not None and not pattern.fullmatch(value):
            _fail(where, f"{value!r} does not match {meta['pattern']}")
    elif kind in ("integer", "long"):
        if not isinstance(value, int) or isinstance(value, bool):
            _fail(where, f"must be an integer, not {type(value).__name__} {value!r}")
        if "min" in meta and value < meta["min"]:
            _fail(where, f"{value} is below the minimum {meta['min']}")
        if "max" in meta and value > meta["max"]:
            _fail(where, f"{value} is above the maximum {meta['max']}")
    elif kind == "boolean" and not isinstance(value, bool):
        _fail(where, f"must be true or false, not {value!r}")
    elif kind in ("float", "double") and (not isinstance(value, (int, float)) or isinstance(value, bool)):
        _fail(where, f"must be a number, not {value!r}")


@lru_cache(maxsize=None)
def _compiled(pattern: str | None) -> re.Pattern | None:
    """Give the model's pattern compiled, or None when Python's re cannot read it (Java's \\p{...} classes)."""
    if pattern is None:
        return None
    try:
        return re.compile(pattern, re.DOTALL)
    except re.error:
        return None


def validate(request: dict, operation: str = "CreateTrainingJob") -> None:
    """Check `request` against the operation's input shape; UsageError naming the member and the rule broken."""
    _check(request, _service_model().operation_model(operation).input_shape, operation)
    if operation == "CreateTrainingJob":
        check_instance_groups(request)
