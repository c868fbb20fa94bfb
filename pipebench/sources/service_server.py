"""One tf.data service server as its own process: `python -m pipebench.sources.service_server ROLE ...`.

ROLE is `dispatcher --port P [--worker-addresses HOST:PORT,...]` or
`worker --port P --dispatcher HOST:PORT [--worker-host HOST]`. A dispatcher given the workers' addresses
serves only them, and can then shard statically (ShardingPolicy FILE, DATA, FILE_OR_DATA need it);
`--job-gc-ms` ends a job that soon after its last client left (a trial drops its iterator between windows).
A local `service` trial and a SageMaker data-worker instance start the same servers this way, so
what is measured locally is what runs there. The server prints `ready HOST:PORT` on stdout once it
listens, then serves until killed; `--parent-pid` makes it die with its parent (PR_SET_PDEATHSIG),
so a SIGKILLed trial leaves nothing listening.
"""
from __future__ import annotations

import argparse
import sys

from pipebench.parent_death import die_with_parent


def serve(role: str, port: int, dispatcher: str | None = None, worker_host: str = "127.0.0.1",
          worker_addresses: list[str] | None = None, job_gc_ms: int | None = None) -> None:
    """Start one server of `role` on `port`, say `ready HOST:PORT`, and serve until the process ends."""
    import tensorflow as tf

    service = tf.data.experimental.service
    if role == "dispatcher":
        gc = {"job_gc_check_interval_ms": job_gc_ms, "job_gc_timeout_ms": job_gc_ms} if job_gc_ms else {}
        server = service.DispatchServer(service.DispatcherConfig(port=port, fault_tolerant_mode=False,
                                                                 worker_addresses=worker_addresses, **gc))
        address = f"{worker_host}:{port}"
    else:
        address = f"{worker_host}:{port}"
        server = service.WorkerServer(service.WorkerConfig(dispatcher_address=dispatcher, worker_address=address,
                                                           port=port))
    print(f"ready {address}", flush=True)
    server.join()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pipebench.sources.service_server")
    parser.add_argument("role", choices=["dispatcher", "worker"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--dispatcher", help="HOST:PORT of the dispatcher (workers only)")
    parser.add_argument("--worker-host", default="127.0.0.1", help="the host name others reach this worker by")
    parser.add_argument("--worker-addresses", help="HOST:PORT,... of every worker (dispatcher only; static sharding "
                                                   "needs it)")
    parser.add_argument("--job-gc-ms", type=int, help="end a job this long after its last client left "
                                                      "(dispatcher only; default TensorFlow's, minutes)")
    parser.add_argument("--parent-pid", type=int, help="die when this process goes away")
    return parser


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.role == "worker" and not args.dispatcher:
        _parser().error("a worker needs --dispatcher HOST:PORT")
    if args.role == "worker" and args.worker_addresses:
        _parser().error("--worker-addresses is the dispatcher's")
    if args.parent_pid is not None:
        die_with_parent(args.parent_pid)
    workers = args.worker_addresses.split(",") if args.worker_addresses else None
    serve(args.role, args.port, args.dispatcher, args.worker_host, workers, args.job_gc_ms)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
