"""TF_CONFIG for the distributed set-ups SageMaker runs, and the TF1 → TF2 `master` → `chief` rewrite.

`parameter_server_tf_config` gives the layout the sagemaker-tensorflow-training toolkit writes
(`_build_tf_config` in sagemaker_tensorflow_container/training.py): hosts[0] is `master`, the other
hosts are `worker`s on port 2222, and with more than one host every host also runs a `ps` on port
2223. TF 1.15's Estimator reads that as it is; TF2's ParameterServerStrategy knows no `master`
task, so `chief_rewrite` renames it before the strategy is built (the TF 1.15 → 2.14 migration).
Pure functions on plain dicts: no TensorFlow import.
"""
from __future__ import annotations

import copy
import json
import os

from pipebench.errors import UsageError

WORKER_PORT = 2222
PS_PORT = 2223


def _addresses(hosts: list[str], port: int) -> list[str]:
    return [f"{host}:{port}" for host in hosts]


def _check_host(hosts: list[str], current_host: str) -> None:
    if not hosts:
        raise UsageError("TF_CONFIG: no hosts (SM_HOSTS is empty)")
    if current_host not in hosts:
        raise UsageError(f"TF_CONFIG: current host {current_host!r} is not in the hosts {hosts}")


def parameter_server_tf_config(hosts: list[str], current_host: str, ps_task: bool = False,
                               ps_per_host: int = 1) -> dict:
    """Give the toolkit's parameter-server TF_CONFIG for `current_host` (its ps process when `ps_task`).

    `ps_per_host` > 1 adds parameter servers on the following ports (2224, ...), host-major, so task
    index `h * ps_per_host + i` is the i-th server of host h; the toolkit itself runs one per host.
    """
    _check_host(hosts, current_host)
    if ps_per_host < 1:
        raise UsageError(f"TF_CONFIG: ps_per_host must be at least 1, not {ps_per_host}")
    workers = hosts[1:]
    cluster: dict[str, list[str]] = {"master": _addresses(hosts[:1], WORKER_PORT)}
    if len(hosts) > 1:
        cluster["ps"] = [f"{host}:{PS_PORT + i}" for host in hosts for i in range(ps_per_host)]
    if workers:
        cluster["worker"] = _addresses(workers, WORKER_PORT)
    if ps_task:
        if "ps" not in cluster:
            raise UsageError("TF_CONFIG: a single host has no parameter servers, so no ps task")
        task = {"index": hosts.index(current_host) * ps_per_host, "type": "ps"}
    elif current_host == hosts[0]:
        task = {"index": 0, "type": "master"}
    else:
        task = {"index": workers.index(current_host), "type": "worker"}
    return {"cluster": cluster, "environment": "cloud", "task": task}


def chief_rewrite(tf_config: dict | str) -> dict:
    """Give TF_CONFIG with `master` renamed `chief` (cluster and task), as TF2's ParameterServerStrategy needs."""
    config = json.loads(tf_config) if isinstance(tf_config, str) else copy.deepcopy(tf_config)
    cluster = config.get("cluster", {})
    if "master" in cluster:
        if "chief" in cluster:
            raise UsageError("TF_CONFIG: has both a master and a chief job; cannot rename master to chief")
        cluster["chief"] = cluster.pop("master")
    task = config.get("task", {})
    if task.get("type") == "master":
        task["type"] = "chief"
    return config


def multi_worker_tf_config(hosts: list[str], current_host: str, port: int = WORKER_PORT) -> dict:
    """Give MultiWorkerMirroredStrategy's TF_CONFIG: every host a `worker`, this host's index as the task.

    Worker 0 acts as chief (TF's convention when no `chief` job is listed). The port defaults to the
    toolkit's worker port; pass the one your launcher opens.
    """
    _check_host(hosts, current_host)
    return {"cluster": {"worker": _addresses(hosts, port)}, "environment": "cloud",
            "task": {"index": hosts.index(current_host), "type": "worker"}}


#: File systems every host of a job can write to the same files on (EFS is NFS 4; FSx for Lustre).
SHARED_FILE_SYSTEMS = ("nfs", "nfs4", "lustre", "cifs", "smb3", "glusterfs", "ceph", "gpfs")


def checkpoint_dir_problem(path: str, hosts: list[str], mounts: str = "/proc/mounts") -> str | None:
    """Give why `path` cannot hold parameter-server checkpoints for `hosts`, or None if it can.

    TF2 parameter-server training has the chief write checkpoints the workers read back, so with
    more than one host the folder must be on a file system they share. The mount holding `path`
    is the longest mount point in `mounts` (the /proc/mounts format) that is a prefix of it.
    """
    if len(hosts) < 2:
        return None
    resolved = os.path.realpath(path)
    best, fs_type = "", None
    with open(mounts) as table:
        for line in table:
            fields = line.split()
            if len(fields) < 3:
                continue
            point = fields[1].replace("\\040", " ")
            inside = resolved == point or resolved.startswith(point.rstrip("/") + "/")
            if inside and len(point) > len(best):
                best, fs_type = point, fields[2]
    if fs_type in SHARED_FILE_SYSTEMS:
        return None
    return (f"checkpoint folder {path} is on {fs_type or 'an unknown file system'} (mount {best or '?'}), local to "
            f"each of the {len(hosts)} hosts: parameter-server training needs one folder they all share — mount "
            "EFS or FSx for Lustre and checkpoint there")
