"""SageMaker heterogeneous clusters: a trainer group fed by tf.data service data-worker groups.

`launch --data-workers TYPE:COUNT` (repeatable) adds instance groups `data-1`, `data-2`, ... beside the
`trainer` group (at most 5 groups in all, SageMaker's limit). In the job, every host reads which group
it is in (`SM_CURRENT_INSTANCE_GROUP` / resourceconfig.json's `current_group_name`) and takes its role
the way the AWS sample training/heterogeneous-clusters/tf.data.service.sagemaker does:
  - the first host of the first data group runs the tf.data service dispatcher and a worker;
  - every other data host runs a worker registered with that dispatcher;
  - trainer hosts run the experiment, and then tell each data host to stop (a connection to its
    shutdown port, as the sample's launcher.py does), so the job ends.
Servers are started as a local `service` trial starts them (pipebench.sources.service_cluster.start_server),
each dying with this process, their stderr going to the job's log. Ports are the sample's (dispatcher 6000,
workers 6001, shutdown 16000) unless the launch's hyperparameters say otherwise. No TensorFlow here: the
servers import it in their own processes.
"""
from __future__ import annotations

import re
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass

from pipebench.errors import PipebenchError, UsageError
from pipebench.sources.service_cluster import JOB_GC_MS, Server, start_server, stop_servers, wait_ready

TRAINER_GROUP = "trainer"
MAX_GROUPS = 5  # ResourceConfig.InstanceGroups holds at most 5
DISPATCHER_PORT = 6000
WORKER_PORT = 6001
SHUTDOWN_PORT = 16000
#: A worker says `ready` only once the dispatcher, on a host that may start minutes after this one, registered it.
READY_TIMEOUT_SEC = 900.0

# Hyperparameters the launch passes and the entry reads (values are strings, as SageMaker passes them).
HP_TRAINER_GROUP = "pipebench_trainer_group"
HP_DATA_GROUPS = "pipebench_data_groups"  # comma-separated group names
HP_DISPATCHER_PORT = "pipebench_dispatcher_port"
HP_WORKER_PORT = "pipebench_worker_port"
HP_SHUTDOWN_PORT = "pipebench_shutdown_port"


@dataclass(frozen=True)
class DataWorkers:
    """One `--data-workers TYPE:COUNT`: an instance group of tf.data service workers."""

    instance_type: str
    count: int


def parse_data_workers(text: str) -> DataWorkers:
    """Give the group `TYPE:COUNT` asks for; UsageError naming the option otherwise."""
    match = re.fullmatch(r"(ml\.[A-Za-z0-9.-]+):([0-9]+)", text.strip())
    if not match or int(match[2]) < 1:
        raise UsageError(f"--data-workers {text[:60]!r}: expected TYPE:COUNT, e.g. ml.c5.18xlarge:2 (count >= 1)")
    return DataWorkers(match[1], int(match[2]))


def data_group_names(count: int) -> list[str]:
    """Give the names of `count` data-worker groups: data-1, data-2, ..."""
    if count + 1 > MAX_GROUPS:
        raise UsageError(f"--data-workers given {count} times: SageMaker allows {MAX_GROUPS} instance groups, "
                         f"the trainer's included, so at most {MAX_GROUPS - 1}")
    return [f"data-{i}" for i in range(1, count + 1)]


@dataclass(frozen=True)
class Role:
    """What this host does in the job, and the service it belongs to."""

    kind: str  # "trainer" | "dispatcher" (dispatcher and a worker) | "worker"
    group: str | None  # None in a job without instance groups
    host: str
    dispatcher: str | None  # HOST:PORT of the job's dispatcher; None without data workers
    data_groups: Mapping[str, Mapping]  # name → {"instance_type", "hosts"} of each data group
    worker_port: int
    shutdown_port: int

    def data_hosts(self) -> list[str]:
        """Give every data host, in group order: each runs one tf.data service worker."""
        return [host for g in self.data_groups.values() for host in g["hosts"]]

    def fed_by(self) -> list[dict]:
        """Give the data groups feeding the trainer, as job.json records them."""
        return [{"group": name, "instance_type": g["instance_type"], "hosts": list(g["hosts"])}
                for name, g in self.data_groups.items()]


def _port(hyperparameters: Mapping[str, str], name: str, default: int) -> int:
    text = hyperparameters.get(name, str(default))
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise PipebenchError(f"hyperparameters.json: {name}: not a port: {text[:40]!r}")
    return int(text)


def role_of(current_host: str, current_group: str | None, instance_groups: Mapping[str, Mapping],
            hyperparameters: Mapping[str, str]) -> Role:
    """Give this host's role from its group, the job's groups and the launch's hyperparameters."""
    data_names = [n for n in hyperparameters.get(HP_DATA_GROUPS, "").split(",") if n]
    worker_port = _port(hyperparameters, HP_WORKER_PORT, WORKER_PORT)
    shutdown_port = _port(hyperparameters, HP_SHUTDOWN_PORT, SHUTDOWN_PORT)
    if not data_names:
        return Role("trainer", current_group, current_host, None, {}, worker_port, shutdown_port)
    missing = [n for n in data_names if n not in instance_groups]
    if missing:
        raise PipebenchError(f"resourceconfig.json: instance group {missing[0]!r} (a data-worker group of the launch) "
                             f"is not in this job (groups: {', '.join(instance_groups) or 'none'})")
    data_groups = {n: instance_groups[n] for n in data_names}
    first_data_host = data_groups[data_names[0]]["hosts"][0]
    dispatcher = f"{first_data_host}:{_port(hyperparameters, HP_DISPATCHER_PORT, DISPATCHER_PORT)}"
    trainer = hyperparameters.get(HP_TRAINER_GROUP, TRAINER_GROUP)
    if current_group == trainer:
        kind = "trainer"
    elif current_group in data_groups:
        kind = "dispatcher" if current_host == first_data_host else "worker"
    else:
        raise PipebenchError(f"resourceconfig.json: this host's instance group {current_group!r} is neither the "
                             f"trainer group {trainer!r} nor a data-worker group ({', '.join(data_names)})")
    return Role(kind, current_group, current_host, dispatcher, data_groups, worker_port, shutdown_port)


def _wait_for_shutdown(port: int, servers: list[Server], log) -> None:
    """Return once a connection arrives on `port`; PipebenchError if a server exits first."""
    with socket.create_server(("", port)) as listener:
        listener.settimeout(1.0)
        log(f"serving until the trainer connects to port {port}")
        while True:
            dead = next((s for s in servers if s.process.poll() is not None), None)
            if dead is not None:
                raise PipebenchError(f"tf.data service {dead.role} at {dead.address} (pid {dead.process.pid}) "
                                     f"exited with code {dead.process.returncode} while serving")
            try:
                conn, peer = listener.accept()
            except socket.timeout:
                continue
            conn.close()
            log(f"shutdown asked by {peer[0]}")
            return


def serve_data_role(role: Role, log=print) -> None:
    """Run this data host's servers (the dispatcher too on the first data host) until the trainer says stop."""
    servers: list[Server] = []

    def started(server: Server) -> None:  # one at a time: a worker is not started beside a dispatcher that failed
        servers.append(server)
        wait_ready([server], READY_TIMEOUT_SEC)
        log(f"tf.data service {server.role} ready at {server.address} (pid {server.process.pid})")

    try:
        if role.kind == "dispatcher":
            port = int(role.dispatcher.rsplit(":", 1)[1])
            # the workers' addresses (static sharding needs them) and the local cluster's job GC: a trial drops
            # its iterator between windows, and a job left without one would go on feeding for minutes
            workers = ",".join(f"{host}:{role.worker_port}" for host in role.data_hosts())
            started(start_server("dispatcher", port, role.host,
                                 ["--worker-addresses", workers, "--job-gc-ms", str(JOB_GC_MS)]))
        started(start_server("worker", role.worker_port, role.host, ["--dispatcher", role.dispatcher]))
        _wait_for_shutdown(role.shutdown_port, servers, log)
    finally:
        stop_servers(servers)


def shutdown_data_hosts(role: Role, log=print, attempts: int = 60, pause_sec: float = 5.0) -> list[str]:
    """Tell every data host to stop serving; give the hosts that could not be reached (logged, not raised).

    A data host still importing TensorFlow does not listen yet, so each is tried for about five minutes;
    one never reached keeps serving until the job's MaxRuntimeInSeconds.
    """
    unreached = []
    for group in role.data_groups.values():
        for host in group["hosts"]:
            for attempt in range(attempts):
                try:
                    socket.create_connection((host, role.shutdown_port), timeout=5).close()
                    break
                except OSError as err:
                    if attempt == attempts - 1:
                        log(f"could not tell data host {host} to stop: {err}")
                        unreached.append(host)
                    else:
                        time.sleep(pause_sec)  # it may still be starting its servers
    return unreached
