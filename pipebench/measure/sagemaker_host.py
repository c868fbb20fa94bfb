"""SageMaker's facts about this host, read once: its instance type, the job's hosts, this host, its CPUs and GPUs.

Machine facts (every run's machine.json) and the training job's entry point (pipebench.sagemaker.environment)
both take them from `read_host`, so the two cannot disagree. SageMaker itself writes
`/opt/ml/input/config/resourceconfig.json`; the SM_* variables come from the sagemaker-training toolkit,
which a custom container's entry point may not run. So each fact is its SM_* variable when set and
resourceconfig.json's otherwise. The root is `/opt/ml`, or `SAGEMAKER_BASE_DIR` (the toolkit's own
variable for running outside SageMaker; tests use it). A fact that is there but malformed is a one-line
error, not an unknown: it would be wrong in the job too.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pipebench.errors import PipebenchError

DEFAULT_ROOT = Path("/opt/ml")
ROOT_ENV = "SAGEMAKER_BASE_DIR"
RESOURCE_CONFIG = "resourceconfig.json"


@dataclass(frozen=True)
class SageMakerHost:
    """What SageMaker says about this host; outside a training job every fact is unknown (None, no hosts)."""

    root: Path
    resources: Mapping[str, object]  # resourceconfig.json as SageMaker wrote it ({} when there is none)
    in_training_job: bool  # an SM_* variable is set, or resourceconfig.json exists
    instance_type: str | None
    hosts: tuple[str, ...]
    current_host: str | None
    num_cpus: int | None
    num_gpus: int | None

    @property
    def config_dir(self) -> Path:
        return self.root / "input" / "config"


def read_json_file(path: Path, required: bool) -> dict:
    """Give the JSON object in one of SageMaker's config files ({} when it is absent and not `required`)."""
    if not path.exists():
        if required:
            raise PipebenchError(f"{path}: missing; not a SageMaker training container (set {ROOT_ENV} "
                                 "to the folder that plays /opt/ml)")
        return {}
    try:
        value = json.loads(path.read_text())
    except ValueError as err:
        raise PipebenchError(f"{path}: not valid JSON: {err}") from None
    if not isinstance(value, dict):
        raise PipebenchError(f"{path}: must hold a JSON object, not {type(value).__name__}")
    return value


def json_env(env: Mapping[str, str], name: str) -> object | None:
    """Give the JSON value of the variable `name` (None when unset)."""
    if name not in env:
        return None
    try:
        return json.loads(env[name])
    except ValueError:
        raise PipebenchError(f"{name}: not valid JSON: {env[name]!r}") from None


def _count_env(env: Mapping[str, str], name: str) -> int | None:
    text = env.get(name)
    if text is None:
        return None
    if not text.strip().isdigit():
        raise PipebenchError(f"{name}: not a count: {text!r}")
    return int(text)


def _text(env: Mapping[str, str], name: str, resources: Mapping[str, object], key: str, where: Path) -> str | None:
    """Give the variable `name`, else resourceconfig.json's `key` (None when neither says)."""
    value = env.get(name) or resources.get(key)
    if value is not None and not isinstance(value, str):
        raise PipebenchError(f"{where}: {key} must be a name, not {str(value)[:80]}")
    return value


def read_host(env: Mapping[str, str], in_job: bool = False) -> SageMakerHost:
    """Give SageMaker's facts about this host: SM_* variables first, resourceconfig.json otherwise (which must
    exist when `in_job`: the entry point runs only in a training job)."""
    root = Path(env.get(ROOT_ENV) or DEFAULT_ROOT)
    resource_file = root / "input" / "config" / RESOURCE_CONFIG
    resources = read_json_file(resource_file, required=in_job)
    hosts = json_env(env, "SM_HOSTS")
    hosts = resources.get("hosts", []) if hosts is None else hosts
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        raise PipebenchError(f"{'SM_HOSTS' if 'SM_HOSTS' in env else resource_file}: hosts must be a list of names, "
                             f"not {str(hosts)[:80]}")
    return SageMakerHost(
        root=root, resources=resources,
        in_training_job=any(k.startswith("SM_") for k in env) or resource_file.exists(),
        instance_type=_text(env, "SM_CURRENT_INSTANCE_TYPE", resources, "current_instance_type", resource_file),
        hosts=tuple(hosts), current_host=_text(env, "SM_CURRENT_HOST", resources, "current_host", resource_file),
        num_cpus=_count_env(env, "SM_NUM_CPUS"), num_gpus=_count_env(env, "SM_NUM_GPUS"))
