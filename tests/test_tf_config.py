"""TF_CONFIG helpers against layouts written out by hand from the SageMaker TensorFlow toolkit and TF docs."""
from __future__ import annotations

import json

import pytest

from pipebench.errors import UsageError
from pipebench.sagemaker.tf_config import chief_rewrite, multi_worker_tf_config, parameter_server_tf_config

# sagemaker-tensorflow-training-toolkit, test/unit/test_training.py: CLUSTER_WITH_PS for hosts host1, host2.
CLUSTER_WITH_PS = {"master": ["host1:2222"], "worker": ["host2:2222"], "ps": ["host1:2223", "host2:2223"]}


@pytest.mark.parametrize("host, ps_task, task", [
    ("host1", False, {"index": 0, "type": "master"}),
    ("host1", True, {"index": 0, "type": "ps"}),
    ("host2", False, {"index": 0, "type": "worker"}),
    ("host2", True, {"index": 1, "type": "ps"}),
])
def test_parameter_server_layout_is_the_toolkits(host, ps_task, task):
    assert parameter_server_tf_config(["host1", "host2"], host, ps_task=ps_task) == {
        "cluster": CLUSTER_WITH_PS, "environment": "cloud", "task": task}


def test_one_host_has_a_master_and_no_parameter_servers():
    assert parameter_server_tf_config(["algo-1"], "algo-1") == {
        "cluster": {"master": ["algo-1:2222"]}, "environment": "cloud", "task": {"index": 0, "type": "master"}}
    with pytest.raises(UsageError, match="no ps task"):
        parameter_server_tf_config(["algo-1"], "algo-1", ps_task=True)


def test_several_parameter_servers_per_host_take_the_following_ports():
    config = parameter_server_tf_config(["algo-1", "algo-2", "algo-3"], "algo-3", ps_task=True, ps_per_host=2)
    assert config["cluster"]["ps"] == ["algo-1:2223", "algo-1:2224", "algo-2:2223", "algo-2:2224",
                                       "algo-3:2223", "algo-3:2224"]
    assert config["cluster"]["worker"] == ["algo-2:2222", "algo-3:2222"]
    assert config["task"] == {"index": 4, "type": "ps"}


def test_chief_rewrite_is_the_migration_articles_replace_master_with_chief():
    # The TF 1.15 -> 2.14 article's example TF_CONFIG on the master host, before and after.
    before = ('{"cluster": {"master": ["algo-1:2222"], "ps": ["algo-1:2223", "algo-2:2223"], '
              '"worker": ["algo-2:2222"]}, "environment": "cloud", "task": {"index": 0, "type": "master"}}')
    assert chief_rewrite(before) == {
        "cluster": {"chief": ["algo-1:2222"], "ps": ["algo-1:2223", "algo-2:2223"], "worker": ["algo-2:2222"]},
        "environment": "cloud", "task": {"index": 0, "type": "chief"}}
    worker = parameter_server_tf_config(["algo-1", "algo-2"], "algo-2")
    rewritten = chief_rewrite(worker)
    assert rewritten["task"] == {"index": 0, "type": "worker"} and "master" not in rewritten["cluster"]
    assert worker["cluster"]["master"] == ["algo-1:2222"], "the input is left as it was"
    assert chief_rewrite(rewritten) == rewritten
    with pytest.raises(UsageError, match="both a master and a chief"):
        chief_rewrite({"cluster": {"master": ["a:1"], "chief": ["b:1"]}, "task": {"type": "worker", "index": 0}})


def test_multi_worker_layout_lists_every_host_as_a_worker():
    # TF's MultiWorkerMirroredStrategy docs: {"cluster": {"worker": [...]}, "task": {"type": "worker", "index": i}}
    config = multi_worker_tf_config(["algo-1", "algo-2"], "algo-2")
    assert config == {"cluster": {"worker": ["algo-1:2222", "algo-2:2222"]}, "environment": "cloud",
                      "task": {"index": 1, "type": "worker"}}
    assert json.loads(json.dumps(config)) == config
    assert multi_worker_tf_config(["a", "b"], "a", port=12345)["cluster"]["worker"] == ["a:12345", "b:12345"]


def test_a_host_outside_the_cluster_is_a_one_line_error():
    with pytest.raises(UsageError, match="'algo-9' is not in the hosts"):
        multi_worker_tf_config(["algo-1"], "algo-9")
    with pytest.raises(UsageError, match="no hosts"):
        parameter_server_tf_config([], "algo-1")


def test_checkpoint_dir_must_be_shared_when_several_hosts_train(tmp_path):
    from pipebench.sagemaker.tf_config import checkpoint_dir_problem

    mounts = tmp_path / "mounts"
    mounts.write_text("overlay / overlay rw 0 0\n"
                      "fs-1.efs.us-east-1.amazonaws.com:/ /mnt/efs nfs4 rw,vers=4.1 0 0\n"
                      "/dev/nvme1n1 /opt/ml/checkpoints ext4 rw 0 0\n")
    hosts = ["algo-1", "algo-2"]
    assert checkpoint_dir_problem("/mnt/efs/run-1/ckpt", hosts, str(mounts)) is None
    problem = checkpoint_dir_problem("/opt/ml/checkpoints/run-1", hosts, str(mounts))
    assert problem.startswith("checkpoint folder /opt/ml/checkpoints/run-1 is on ext4 (mount /opt/ml/checkpoints)")
    assert "mount EFS or FSx for Lustre" in problem
    assert "on overlay (mount /)" in checkpoint_dir_problem("/mnt/efsx/ckpt", hosts, str(mounts))
    assert checkpoint_dir_problem("/opt/ml/checkpoints", ["algo-1"], str(mounts)) is None  # one host: no sharing needed
