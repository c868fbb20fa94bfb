"""The SageMaker training container's environment, read once into a frozen `SageMakerEnvironment`.

SageMaker itself writes `/opt/ml/input/config/{hyperparameters,resourceconfig,inputdataconfig}.json`;
the SM_* variables (`SM_CHANNELS`, `SM_CHANNEL_<NAME>`, `SM_HOSTS`, ...) come from the
sagemaker-training toolkit, which a custom container entry point may not run. So each fact is taken
from its SM_* variable when set and from the JSON files otherwise. The root is `/opt/ml`, or
`SAGEMAKER_BASE_DIR` (the toolkit's own variable for running outside SageMaker; tests use it). The
host's facts (instance type, hosts, this host, CPUs, GPUs) are pipebench.measure.sagemaker_host's,
the one reader machine facts use too.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pipebench.errors import PipebenchError
from pipebench.measure.sagemaker_host import RESOURCE_CONFIG, json_env, read_host, read_json_file

INPUT_MODES = ("File", "FastFile", "Pipe")


@dataclass(frozen=True)
class Channel:
    """One input channel: where it is mounted and how SageMaker delivers it."""

    name: str
    path: Path  # the folder (File, FastFile) or the FIFO prefix (Pipe: <path>_<epoch>)
    input_mode: str  # File | FastFile | Pipe
    distribution: str | None  # FullyReplicated | ShardedByS3Key


@dataclass(frozen=True)
class SageMakerEnvironment:
    """What a training job's container is told: hyperparameters, channels, hosts, output folders."""

    root: Path
    hyperparameters: Mapping[str, str]
    channels: Mapping[str, Channel]
    hosts: tuple[str, ...]
    current_host: str
    instance_type: str | None
    num_cpus: int
    num_gpus: int
    model_dir: Path
    output_data_dir: Path
    # Instance groups (every job has them; one `homogeneousCluster` unless launched with groups).
    current_group: str | None = None
    instance_groups: Mapping[str, Mapping] = field(default_factory=dict)  # name → {"instance_type", "hosts"}

    @property
    def input_config_dir(self) -> Path:
        return self.root / "input" / "config"

    @property
    def input_data_dir(self) -> Path:
        return self.root / "input" / "data"

    def toolkit_variables(self) -> dict[str, str]:
        """Give the SM_* variables the sagemaker-training toolkit would set, for code reading them (machine facts)."""
        out = {"SM_HOSTS": json.dumps(list(self.hosts)), "SM_CURRENT_HOST": self.current_host,
               "SM_NUM_CPUS": str(self.num_cpus), "SM_NUM_GPUS": str(self.num_gpus),
               "SM_CHANNELS": json.dumps(sorted(self.channels)), "SM_MODEL_DIR": str(self.model_dir),
               "SM_OUTPUT_DATA_DIR": str(self.output_data_dir),
               **{f"SM_CHANNEL_{name.upper()}": str(c.path) for name, c in self.channels.items()}}
        if self.instance_type:
            out["SM_CURRENT_INSTANCE_TYPE"] = self.instance_type
        if self.current_group:
            out["SM_CURRENT_INSTANCE_GROUP"] = self.current_group
        if self.instance_groups:
            out["SM_INSTANCE_GROUPS_DICT"] = json.dumps(
                {name: {"instance_group_name": name, **group} for name, group in self.instance_groups.items()})
        return out

    def channel(self, name: str) -> Channel:
        """Give the named channel; PipebenchError naming the ones there are if it is missing."""
        if name not in self.channels:
            raise PipebenchError(f"SageMaker channel {name!r}: not in this job (channels: "
                                 f"{', '.join(sorted(self.channels)) or 'none'})")
        return self.channels[name]


def _instance_groups(env: Mapping[str, str], resources: dict, where: Path) -> tuple[str | None, dict[str, dict]]:
    """Give (this host's group, name → {"instance_type", "hosts"}): SM_* variables first, resourceconfig.json else.

    SageMaker writes `current_group_name` and an `instance_groups` list; the toolkit turns them into
    SM_CURRENT_INSTANCE_GROUP and SM_INSTANCE_GROUPS_DICT (name → the list's entry).
    """
    current = env.get("SM_CURRENT_INSTANCE_GROUP") or resources.get("current_group_name")
    listed = json_env(env, "SM_INSTANCE_GROUPS_DICT")
    listed = list(listed.values()) if isinstance(listed, dict) else resources.get("instance_groups", [])
    groups = {}
    for entry in listed if isinstance(listed, list) else [None]:
        if not (isinstance(entry, dict) and isinstance(entry.get("instance_group_name"), str)
                and isinstance(entry.get("hosts"), list) and entry["hosts"]):
            raise PipebenchError(f"{where}: instance_groups: each needs an instance_group_name and a non-empty "
                                 f"hosts list, not {str(entry)[:80]}")
        groups[entry["instance_group_name"]] = {"instance_type": entry.get("instance_type"),
                                                "hosts": list(entry["hosts"])}
    if groups and current not in groups:
        raise PipebenchError(f"{where}: current group {current!r} is not one of the instance groups "
                             f"{', '.join(groups)}")
    return current, groups


def read_environment(env: Mapping[str, str] | None = None) -> SageMakerEnvironment:
    """Give the container's environment: SM_* variables first, the /opt/ml config files otherwise."""
    env = os.environ if env is None else env
    host = read_host(env, in_job=True)
    root, config_dir, resources = host.root, host.config_dir, dict(host.resources)
    data_config = read_json_file(config_dir / "inputdataconfig.json", required=True)
    # SageMaker passes every hyperparameter value as a string.
    hyperparameters = {str(k): str(v) for k, v in read_json_file(config_dir / "hyperparameters.json", False).items()}

    hosts, current_host = list(host.hosts), host.current_host
    if not hosts:
        raise PipebenchError(f"{config_dir / RESOURCE_CONFIG}: hosts must be a non-empty list of names")
    if current_host not in hosts:
        raise PipebenchError(f"current host {current_host!r} is not one of the hosts {hosts}")

    current_group, groups = _instance_groups(env, resources, config_dir / RESOURCE_CONFIG)

    names = json_env(env, "SM_CHANNELS") or sorted(data_config)
    channels = {}
    for name in names:
        described = data_config.get(name, {})
        mode = described.get("TrainingInputMode", "File")
        if mode not in INPUT_MODES:
            raise PipebenchError(f"inputdataconfig.json: channel {name}: TrainingInputMode {mode!r} is not one of "
                                 f"{', '.join(INPUT_MODES)}")
        path = Path(env.get(f"SM_CHANNEL_{name.upper()}") or root / "input" / "data" / name)
        channels[name] = Channel(name, path, mode, described.get("S3DistributionType"))

    return SageMakerEnvironment(
        root=root, hyperparameters=hyperparameters, channels=channels, hosts=tuple(hosts),
        current_host=current_host,
        instance_type=host.instance_type,
        num_cpus=host.num_cpus if host.num_cpus is not None else os.cpu_count() or 1,
        num_gpus=host.num_gpus if host.num_gpus is not None else 0,
        model_dir=Path(env.get("SM_MODEL_DIR") or root / "model"),
        output_data_dir=Path(env.get("SM_OUTPUT_DATA_DIR") or root / "output" / "data"),
        current_group=current_group, instance_groups=groups,
    )
