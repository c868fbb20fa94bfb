"""Heterogeneous clusters in the job: each host's role from its instance group, and the data role's servers.

The resourceconfig.json files in tests/golden/sagemaker/ are in the layout SageMaker writes for a job
with instance groups (`current_group_name`, `instance_groups` of name, type and hosts; the layout the
sagemaker-training toolkit reads), for a p3.2xlarge trainer fed by two c5.18xlarge data workers.
They are written by hand in that layout, not captured from a live job.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from ports import listening

from pipebench.errors import PipebenchError
from pipebench.sagemaker.cluster import role_of
from pipebench.sagemaker.environment import read_environment
from pipebench.sources.service_cluster import free_ports

GOLDEN = Path(__file__).parent / "golden" / "sagemaker"
LAUNCHED = {"pipebench_job_name": "job", "pipebench_trainer_group": "trainer", "pipebench_data_groups": "data-1"}


def _opt_ml(root: Path, resourceconfig: dict | Path, hyperparameters: dict) -> Path:
    """Lay out /opt/ml/input/config under `root` with this host's resource config; give `root`."""
    config = root / "input" / "config"
    config.mkdir(parents=True)
    if isinstance(resourceconfig, Path):
        shutil.copy(resourceconfig, config / "resourceconfig.json")
    else:
        (config / "resourceconfig.json").write_text(json.dumps(resourceconfig))
    (config / "hyperparameters.json").write_text(json.dumps(hyperparameters))
    channel = {"S3DistributionType": "FullyReplicated", "RecordWrapperType": "None", "TrainingInputMode": "File"}
    (config / "inputdataconfig.json").write_text(json.dumps({"config": channel, "train": channel}))
    return root


def _role(root: Path, env: dict | None = None):
    sm = read_environment({"SAGEMAKER_BASE_DIR": str(root), **(env or {})})
    return role_of(sm.current_host, sm.current_group, sm.instance_groups, sm.hyperparameters)


@pytest.mark.parametrize("recorded, kind, host", [
    ("trainer", "trainer", "algo-1"), ("dispatcher", "dispatcher", "algo-3"), ("worker", "worker", "algo-2")])
def test_each_host_takes_its_role_from_its_group(tmp_path, recorded, kind, host):
    role = _role(_opt_ml(tmp_path, GOLDEN / f"resourceconfig-{recorded}.json", LAUNCHED))
    assert (role.kind, role.host, role.dispatcher) == (kind, host, "algo-3:6000")
    assert role.group == ("trainer" if kind == "trainer" else "data-1")
    assert role.fed_by() == [{"group": "data-1", "instance_type": "ml.c5.18xlarge", "hosts": ["algo-3", "algo-2"]}]
    assert (role.worker_port, role.shutdown_port) == (6001, 16000)


def test_a_job_without_data_workers_is_all_trainer(tmp_path):
    role = _role(_opt_ml(tmp_path, GOLDEN / "resourceconfig-homogeneous.json", {"pipebench_job_name": "job"}))
    assert (role.kind, role.group, role.dispatcher, role.fed_by()) == ("trainer", "homogeneousCluster", None, [])


def test_the_toolkits_variables_win_over_the_file(tmp_path):
    root = _opt_ml(tmp_path, GOLDEN / "resourceconfig-trainer.json", LAUNCHED)
    # As the toolkit writes them (mapping.to_env_vars: JSON, sorted keys): this host is now a data worker.
    groups = json.loads((GOLDEN / "resourceconfig-trainer.json").read_text())["instance_groups"]
    env = {"SM_CURRENT_HOST": "algo-2", "SM_CURRENT_INSTANCE_GROUP": "data-1",
           "SM_INSTANCE_GROUPS_DICT": json.dumps({g["instance_group_name"]: g for g in groups}, sort_keys=True)}
    role = _role(root, env)
    assert (role.kind, role.group, role.host) == ("worker", "data-1", "algo-2")
    sm = read_environment({"SAGEMAKER_BASE_DIR": str(root), **env})
    assert read_environment({"SAGEMAKER_BASE_DIR": str(root), **sm.toolkit_variables()}) == sm


def test_groups_the_launch_named_must_be_in_the_job(tmp_path):
    root = _opt_ml(tmp_path / "a", GOLDEN / "resourceconfig-trainer.json",
                   {**LAUNCHED, "pipebench_data_groups": "data-1,data-2"})
    with pytest.raises(PipebenchError, match=r"instance group 'data-2' \(a data-worker group of the launch\) is not in "
                                             r"this job \(groups: trainer, data-1\)"):
        _role(root)
    stranger = json.loads((GOLDEN / "resourceconfig-worker.json").read_text())
    stranger["instance_groups"].append({"instance_group_name": "other", "instance_type": "ml.m5.large",
                                        "hosts": ["algo-4"]})
    stranger.update(current_group_name="other", current_host="algo-4", hosts=[*stranger["hosts"], "algo-4"])
    with pytest.raises(PipebenchError, match="this host's instance group 'other' is neither the trainer group"):
        _role(_opt_ml(tmp_path / "b", stranger, LAUNCHED))
    bad_port = _opt_ml(tmp_path / "c", GOLDEN / "resourceconfig-worker.json",
                       {**LAUNCHED, "pipebench_worker_port": "x"})
    with pytest.raises(PipebenchError, match="pipebench_worker_port: not a port: 'x'"):
        _role(bad_port)


CLIENT = """
import sys
import tensorflow as tf
dataset = tf.data.Dataset.range(20).apply(tf.data.experimental.service.distribute(
    processing_mode="parallel_epochs", service=sys.argv[1]))
print(sorted(int(x) for x in dataset.as_numpy_iterator()))
"""


@pytest.mark.tf
def test_the_data_role_serves_through_the_entry_and_is_gone_after(tmp_path):
    """The entry on the first data host starts dispatcher + worker (service_server processes), which a tf.data
    client reads through; a connection to the shutdown port ends it, and nothing is left running or listening."""
    dispatcher_port, worker_port, shutdown_port = free_ports(3)
    resources = {"current_host": "localhost", "current_instance_type": "ml.c5.18xlarge", "current_group_name": "data-1",
                 "hosts": ["trainer-host", "localhost"], "network_interface_name": "eth0",
                 "instance_groups": [
                     {"instance_group_name": "trainer", "instance_type": "ml.p3.2xlarge", "hosts": ["trainer-host"]},
                     {"instance_group_name": "data-1", "instance_type": "ml.c5.18xlarge", "hosts": ["localhost"]}]}
    hyperparameters = {**LAUNCHED, "pipebench_dispatcher_port": str(dispatcher_port),
                       "pipebench_worker_port": str(worker_port), "pipebench_shutdown_port": str(shutdown_port)}
    root = _opt_ml(tmp_path / "opt-ml", resources, hyperparameters)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SM_")}
    entry = subprocess.Popen([sys.executable, "-m", "pipebench.sagemaker.entry"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, env={**env, "SAGEMAKER_BASE_DIR": str(root)})
    lines, pids = [], []
    try:
        for line in entry.stdout:  # until it says it serves (each server printed `ready` first)
            lines.append(line)
            if "(pid " in line:
                pids.append(int(line.rsplit("(pid ", 1)[1].rstrip(")\n")))
            if line.startswith("serving until"):
                break
        assert len(pids) == 2, "".join(lines)
        assert f"tf.data service dispatcher ready at localhost:{dispatcher_port}" in "".join(lines)
        assert f"tf.data service worker ready at localhost:{worker_port}" in "".join(lines)
        commands = [Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") for pid in pids]
        dispatcher = next(c for c in commands if b"dispatcher" in c)  # knows its workers (static sharding), ends jobs
        assert dispatcher[dispatcher.index(b"--worker-addresses") + 1] == f"localhost:{worker_port}".encode()
        assert b"--job-gc-ms" in dispatcher  # a job whose client left stops instead of feeding on for minutes
        client = subprocess.run([sys.executable, "-c", CLIENT, f"grpc://localhost:{dispatcher_port}"],
                                capture_output=True, text=True, timeout=300)
        assert client.returncode == 0, client.stderr[-2000:]
        assert client.stdout.strip().splitlines()[-1] == str(list(range(20)))
        socket.create_connection(("127.0.0.1", shutdown_port), timeout=10).close()
        rest, _ = entry.communicate(timeout=60)
    finally:
        if entry.poll() is None:
            entry.kill()
            entry.wait()
    assert entry.returncode == 0, "".join(lines) + rest
    assert "shutdown asked by 127.0.0.1" in rest
    for pid in pids:  # the servers were waited for: no process, not even a zombie, has their ids
        assert not Path(f"/proc/{pid}").exists()
    assert not any(listening(f"127.0.0.1:{p}") for p in (dispatcher_port, worker_port, shutdown_port))


@pytest.mark.tf
def test_a_server_that_cannot_start_fails_the_data_role_on_one_line(tmp_path):
    """The dispatcher's port is taken: the entry says so on one line, writes SageMaker's failure file, and the
    worker is never started (nothing listens on its port)."""
    dispatcher_port, worker_port, shutdown_port = free_ports(3)
    resources = {"current_host": "localhost", "current_instance_type": "ml.c5.18xlarge", "current_group_name": "data-1",
                 "hosts": ["localhost"], "instance_groups": [
                     {"instance_group_name": "data-1", "instance_type": "ml.c5.18xlarge", "hosts": ["localhost"]}]}
    hyperparameters = {**LAUNCHED, "pipebench_dispatcher_port": str(dispatcher_port),
                       "pipebench_worker_port": str(worker_port), "pipebench_shutdown_port": str(shutdown_port)}
    root = _opt_ml(tmp_path / "opt-ml", resources, hyperparameters)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SM_")}
    with socket.create_server(("", dispatcher_port)):  # someone else's server
        result = subprocess.run([sys.executable, "-m", "pipebench.sagemaker.entry"], capture_output=True, text=True,
                                timeout=300, env={**env, "SAGEMAKER_BASE_DIR": str(root), "TF_CPP_MIN_LOG_LEVEL": "3"})
    error = [line for line in result.stderr.splitlines() if line.startswith("pipebench: error:")]
    assert result.returncode == 1 and "Traceback (most recent call last)" not in result.stdout
    assert error == [f"pipebench: error: tf.data service dispatcher at localhost:{dispatcher_port} exited with code 1 "
                     "before listening: its stderr is above"], result.stderr
    assert (root / "output" / "failure").read_text() == error[0].removeprefix("pipebench: error: ") + "\n"
    assert not any(listening(f"127.0.0.1:{p}") for p in (dispatcher_port, worker_port, shutdown_port))
