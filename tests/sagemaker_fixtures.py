"""A SageMaker training container's /opt/ml tree, laid out in a temp folder as a launch would leave it.

`tiny_launch` makes a tiny data set and the experiment the launcher would upload; `opt_ml` lays out
the config files SageMaker writes and the channels (config in File mode, train in the mode asked);
`run_entry` runs `python -m pipebench.sagemaker.entry` against it, as the container's entry point.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from pipebench import testing
from pipebench.config import Experiment, parse_experiment
from pipebench.datasets import DataSet, materialise
from pipebench.sagemaker.launch import job_experiment

#: The tiny experiment as a launch uploads it: no orderings block, samples at 2 Hz.
TINY = testing.merged(testing.TINY, {"pipelines": {"orderings": None},
                                     "measurement": {"warmup_max_sec": 0.5, "sample_hz": 2}})


@dataclass(frozen=True)
class TinyLaunch:
    """What a launch uploads: the job's experiment and the data it lists."""

    experiment: Experiment
    data: DataSet

    def local_fingerprint(self) -> str:
        """Give the data fingerprint of `pipebench run` on the launched files (data.files.tfrecord)."""
        folder = Path(self.data.files["tfrecord"][0]).parent
        given = parse_experiment({"name": "local", "data": {"files": {"tfrecord": [str(folder / "part-*")]}}})
        return materialise(given, log=lambda _: None).fingerprint


def tiny_launch(cache_dir: Path) -> TinyLaunch:
    """Give the tiny experiment (narrowed to TFRecord, as launch does) and its data, made in `cache_dir`."""
    doc = testing.merged(TINY, {"data": {"cache_dir": str(cache_dir)}})
    experiment = job_experiment(parse_experiment(doc, "tiny"), "tfrecord")
    return TinyLaunch(experiment, materialise(experiment, log=lambda _: None))


def opt_ml(root: Path, launch: TinyLaunch, input_mode: str, job_name: str, instance_type: str = "ml.c5.xlarge",
           host: str = "algo-1") -> Path:
    """Lay out /opt/ml under `root` for one job whose `train` channel is in `input_mode`; give `root`."""
    config, data = root / "input" / "config", root / "input" / "data"
    for folder in (config, data / "config", root / "model", root / "output" / "data"):
        folder.mkdir(parents=True, exist_ok=True)  # a Pipe channel's stand-in may have made input/ already
    channel = {"S3DistributionType": "FullyReplicated", "RecordWrapperType": "None"}
    (config / "hyperparameters.json").write_text(json.dumps({"pipebench_job_name": job_name}))
    (config / "resourceconfig.json").write_text(json.dumps({
        "current_host": host, "current_instance_type": instance_type, "current_group_name": "homogeneousCluster",
        "hosts": [host], "instance_groups": [{"instance_group_name": "homogeneousCluster",
                                              "instance_type": instance_type, "hosts": [host]}],
        "network_interface_name": "eth0"}))
    (config / "inputdataconfig.json").write_text(json.dumps({
        "config": {**channel, "TrainingInputMode": "File"}, "train": {**channel, "TrainingInputMode": input_mode}}))
    files = launch.data.files["tfrecord"]
    (data / "config" / "experiment.yaml").write_text(launch.experiment.to_yaml())
    (data / "config" / "data.json").write_text(json.dumps({
        "format": "tfrecord",
        "files": [f"s3://bucket/prefix/data/tfrecord/{Path(f).name}" for f in files]}))
    shutil.copy(Path(files[0]).parent / "manifest.json", data / "config" / "manifest.json")
    if input_mode != "Pipe":  # File: copied in; FastFile: the mounted prefix (read-only on SageMaker)
        (data / "train").mkdir()
        for f in files:
            shutil.copy(f, data / "train")
    return root


def run_entry(root: Path) -> subprocess.CompletedProcess:
    """Run the container's entry point against the tree at `root` (SM_* variables cleared, as without the toolkit)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SM_")}
    return subprocess.run([sys.executable, "-m", "pipebench.sagemaker.entry"], capture_output=True, text=True,
                          timeout=600, env={**env, "SAGEMAKER_BASE_DIR": str(root)})


def _decoded(value: str) -> object:
    """Give a hyperparameter as the training toolkit reads it: JSON where it parses, the string otherwise."""
    try:
        return json.loads(value)
    except ValueError:
        return value


def run_like_toolkit(root: Path, code: Path, python: str = sys.executable) -> subprocess.CompletedProcess:
    """Run the shipped program in `code` as the sagemaker-training toolkit does in script mode.

    The toolkit (environment.py, entry_point.py, process.py) runs `python <sagemaker_program> --name value ...`
    for each user hyperparameter, in /opt/ml/code, with the SM_* variables it derives from
    /opt/ml/input/config (mapping.to_env_vars: strings as they are, the rest as compact sorted JSON).
    PYTHONPATH and AWS_* are cleared: the program finds pipebench beside it, as in the container.
    """
    config = root / "input" / "config"
    hyperparameters = {k: _decoded(v) for k, v in json.loads((config / "hyperparameters.json").read_text()).items()}
    resources = json.loads((config / "resourceconfig.json").read_text())
    channels = json.loads((config / "inputdataconfig.json").read_text())
    user = {k: v for k, v in hyperparameters.items() if not k.startswith("sagemaker_")}
    compact = lambda value: json.dumps(value, sort_keys=True, separators=(",", ":"))  # noqa: E731
    groups = {g["instance_group_name"]: g for g in resources.get("instance_groups", [])}
    sm = {"SM_HOSTS": compact(resources["hosts"]), "SM_CURRENT_HOST": resources["current_host"],
          "SM_CURRENT_INSTANCE_TYPE": resources["current_instance_type"],
          "SM_CURRENT_INSTANCE_GROUP": resources.get("current_group_name", "homogeneousCluster"),
          "SM_INSTANCE_GROUPS_DICT": compact(groups), "SM_CHANNELS": compact(sorted(channels)),
          "SM_HPS": compact(user), "SM_USER_ENTRY_POINT": hyperparameters["sagemaker_program"],
          "SM_MODULE_DIR": hyperparameters["sagemaker_submit_directory"], "SM_MODEL_DIR": str(root / "model"),
          "SM_OUTPUT_DATA_DIR": str(root / "output" / "data"), "SM_INPUT_CONFIG_DIR": str(config),
          "SM_NUM_CPUS": str(os.cpu_count()), "SM_NUM_GPUS": "0", "SAGEMAKER_BASE_DIR": str(root),
          **{f"SM_CHANNEL_{name.upper()}": str(root / "input" / "data" / name) for name in channels}}
    args = [item for name, value in user.items() for item in (f"--{name}", str(value))]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SM_", "AWS_")) and k != "PYTHONPATH"}
    return subprocess.run([python, hyperparameters["sagemaker_program"], *args], cwd=code, capture_output=True,
                          text=True, timeout=600, env={**env, **sm})
