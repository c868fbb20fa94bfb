"""A local tf.data service for as long as a trial runs: a dispatcher and N workers, each its own process.

The trial's worker process starts them (as it starts the Pipe emulator's writers), so they are in its
process tree: the manager's sampler counts their CPU, its timeout and memory cap cover them, and its
process-group kill ends them with the trial. Each server is `python -m pipebench.sources.service_server`,
started by `start_server` and awaited by `wait_ready` (the one way pipebench starts servers: a SageMaker
data host uses them too), with `--parent-pid`: a SIGKILLed trial kills them too (PR_SET_PDEATHSIG). On
leaving the block — success, an exception, Ctrl-C — they are killed and reaped, so nothing listens after
a trial.
"""
from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from pipebench.children import last_stderr_line
from pipebench.errors import TrialError
from pipebench.pinning import Pinning, placed

HOST = "127.0.0.1"
#: How long a server may take to import TensorFlow and listen (several share 2 vCPUs in tests).
READY_TIMEOUT_SEC = 180.0
#: A trial drops its iterator between windows (pipebench.measure.windows): its job must stop feeding then,
#: not after TensorFlow's default of minutes.
JOB_GC_MS = 1000


def free_ports(count: int) -> list[int]:
    """Give `count` distinct TCP ports free on 127.0.0.1 now (held open together, so never the same one twice)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in sockets:
            s.bind((HOST, 0))
        return [s.getsockname()[1] for s in sockets]


@dataclass
class Server:
    """One service_server process this process started, and where its stderr goes (None: this process's)."""

    role: str
    address: str
    process: subprocess.Popen
    stderr_path: Path | None
    cpus: tuple[int, ...] | None = None


def start_server(role: str, port: int, worker_host: str, extra: list[str], stderr_path: Path | None = None,
                 cpus: tuple[int, ...] | None = None, env: dict[str, str] | None = None) -> Server:
    """Start one `python -m pipebench.sources.service_server` (dying with this process); give it without waiting.

    It serves at worker_host:port; `extra` are further service_server options; `cpus` pins it; `env` None
    inherits this process's.
    """
    command = [sys.executable, "-m", "pipebench.sources.service_server", role, "--port", str(port),
               "--worker-host", worker_host, "--parent-pid", str(os.getpid()), *extra]
    with contextlib.ExitStack() as stack:
        stderr = None if stderr_path is None else stack.enter_context(open(stderr_path, "wb"))
        preexec_fn = stack.enter_context(placed(Pinning(cpus) if cpus else None))
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
                                   env=env, preexec_fn=preexec_fn)
    return Server(role, f"{worker_host}:{port}", process, stderr_path, cpus)


def wait_ready(servers: list[Server], timeout_sec: float = READY_TIMEOUT_SEC) -> None:
    """Return once every server has said `ready`; TrialError naming the first that exits or stays silent."""
    waiting = {s.process.stdout.fileno(): s for s in servers}
    deadline = time.monotonic() + timeout_sec
    while waiting:
        ready, _, _ = select.select(list(waiting), [], [], max(deadline - time.monotonic(), 0))
        if not ready:
            server = next(iter(waiting.values()))
            raise TrialError(f"tf.data service {server.role} at {server.address}: not listening after "
                             f"{timeout_sec:.0f} s: {_last_words(server)}")
        for fd in ready:
            server = waiting.pop(fd)
            line = server.process.stdout.readline().decode("utf-8", "replace").strip()
            if line != f"ready {server.address}":
                code = server.process.wait()
                raise TrialError(f"tf.data service {server.role} at {server.address} exited with code {code} "
                                 f"before listening: {_last_words(server)}")


def _last_words(server: Server) -> str:
    return "its stderr is above" if server.stderr_path is None else last_stderr_line(server.stderr_path)


def stop_servers(servers: list[Server]) -> None:
    """Kill and reap every server (they hold nothing worth flushing), and empty the list; safe to call twice."""
    for server in servers:
        with contextlib.suppress(ProcessLookupError):
            server.process.send_signal(signal.SIGKILL)
    for server in servers:
        server.process.wait()
        server.process.stdout.close()
    servers.clear()


@dataclass
class ServiceCluster:
    """Context manager: a dispatcher and `workers` workers on 127.0.0.1 with free ports.

    `fixed_worker_list` gives the dispatcher the workers' addresses (static sharding needs it);
    `worker_cpus` pins worker i to CPU worker_cpus[i % len] (None: not pinned); the servers' stderr
    goes to `log_dir` (a temp folder when None, removed on exit).
    """

    workers: int
    fixed_worker_list: bool = True
    worker_cpus: tuple[int, ...] | None = None
    log_dir: Path | None = None
    servers: list[Server] = field(default_factory=list)
    _own_log_dir: bool = False

    @property
    def dispatcher(self) -> str:
        return self.servers[0].address

    @property
    def worker_addresses(self) -> list[str]:
        return [s.address for s in self.servers[1:]]

    def pids(self) -> list[int]:
        return [s.process.pid for s in self.servers]

    def describe(self) -> str:
        """Give one line naming every server's pid, address and CPUs (the trial's stderr keeps it)."""
        return "; ".join(f"{s.role} pid {s.process.pid} at {s.address}"
                         + (f" on CPUs {','.join(map(str, s.cpus))}" if s.cpus else "") for s in self.servers)

    def __enter__(self) -> ServiceCluster:
        if self.log_dir is None:
            self.log_dir, self._own_log_dir = Path(tempfile.mkdtemp(prefix="pipebench-service-")), True
        else:
            self.log_dir.mkdir(parents=True, exist_ok=True)
        try:
            ports = free_ports(1 + self.workers)
            dispatcher = f"{HOST}:{ports[0]}"
            workers = [f"{HOST}:{port}" for port in ports[1:]]
            extra = ["--job-gc-ms", str(JOB_GC_MS)]
            extra += ["--worker-addresses", ",".join(workers)] if self.fixed_worker_list else []
            env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2")}
            self.servers.append(start_server("dispatcher", ports[0], HOST, extra,
                                             self.log_dir / f"dispatcher-{ports[0]}.stderr", env=env))
            for i, port in enumerate(ports[1:]):
                cpus = (self.worker_cpus[i % len(self.worker_cpus)],) if self.worker_cpus else None
                self.servers.append(start_server("worker", port, HOST, ["--dispatcher", dispatcher],
                                                 self.log_dir / f"worker-{port}.stderr", cpus, env))
            wait_ready(self.servers)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()

    def close(self) -> None:
        """Kill and reap every server, remove a temp log folder; safe to call twice."""
        stop_servers(self.servers)
        if self._own_log_dir and self.log_dir is not None:
            shutil.rmtree(self.log_dir, ignore_errors=True)
