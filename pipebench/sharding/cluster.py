"""`pipebench sharding RUN_DIR`: a local multi-worker cluster measuring each input placement of a run's pipeline.

N worker processes (pipebench.sharding.worker) form one MultiWorkerMirroredStrategy cluster on 127.0.0.1,
each with TF_CONFIG `{"cluster": {"worker": [...]}, "task": {"type": "worker", "index": i}}` (the layout
pipebench.sagemaker.tf_config.multi_worker_tf_config gives SageMaker hosts) on free ports, each pinned to
CPUs of its own when this machine has enough, as separate machines would be. One cluster runs every
round: each round measures every placement once, in a seeded random order (RMIT), every worker's epoch
started together. Workers die with this process (PR_SET_PDEATHSIG, even after kill -9) and are killed
on any failure or Ctrl-C; nothing of the cluster outlives the call.

The run's configuration (the fastest, or the one named) supplies the pipeline, its thread settings and
environment; the figures go to RUN_DIR/sharding.json (pipebench.sharding.record).
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from pipebench.children import kill_group, last_stderr_line
from pipebench.data_files import expand
from pipebench.errors import DataError, TrialError
from pipebench.pinning import Pinning, placed, usable_cpus
from pipebench.measure.round_order import round_order
from pipebench.sharding.placements import (
    PLACEMENTS,
    check_request,
    measured_spec,
    order_notes,
)
from pipebench.sharding.record import (
    BYTES_MEASURE,
    SHARDING_VERSION,
    Ready,
    ShardingJob,
    ShardingRecord,
    WorkerEpoch,
    WorkerError,
    reply,
    write_sharding,
)
from pipebench.sources.service_cluster import free_ports
from pipebench.typed import to_json

DEFAULT_ROUNDS = 3


def worker_cpus(workers: int, cpus: Sequence[int] | None = None) -> list[tuple[int, ...]] | None:
    """Give each worker's CPUs, an equal share of the usable ones each; None when there are fewer CPUs than workers."""
    cpus = tuple(usable_cpus() if cpus is None else cpus)
    if len(cpus) < workers:
        return None
    share = len(cpus) // workers
    return [cpus[i * share:(i + 1) * share] for i in range(workers)]


def measuring_order(placements: Sequence[str], rounds: int, seed: str) -> list[tuple[int, str]]:
    """Give (round, placement) in measuring order: every placement once per round, in the round's order
    (pipebench.measure.round_order)."""
    return [(r, p) for r in range(rounds) for p in round_order(placements, r, seed)]


class Cluster:
    """The worker processes of one local cluster, talked to line by line."""

    def __init__(self, job: ShardingJob, env: dict[str, str], cpus: list[tuple[int, ...]] | None,
                 timeout_sec: float) -> None:
        self.timeout_sec = timeout_sec
        addresses = [f"127.0.0.1:{port}" for port in free_ports(job.workers)]
        self.procs: list[subprocess.Popen] = []
        # Unlinked files: nothing of them is left on disk however this process ends (kill -9 included).
        self.stderr_files = [tempfile.TemporaryFile() for _ in range(job.workers)]
        self.buffers = [b""] * job.workers
        try:
            for index in range(job.workers):
                tf_config = {"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index}}
                with placed(None if cpus is None else Pinning(cpus[index])) as preexec_fn:
                    self.procs.append(subprocess.Popen(
                        [sys.executable, "-m", "pipebench.sharding.worker", str(index)],
                        env={**env, "TF_CONFIG": json.dumps(tf_config)}, stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE, stderr=self.stderr_files[index], start_new_session=True,
                        preexec_fn=preexec_fn))
            self.send(json.dumps(to_json(job)), "its job")  # the job is each worker's first line
        except BaseException:
            self.close(grace_sec=0.0)  # the workers started before one could not be
            raise

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def replies(self, what: str) -> list[Ready | WorkerEpoch]:
        """Give one reply from every worker; TrialError (one line) when one exits, fails, says what the protocol
        does not, or the timeout passes."""
        found: list[Ready | WorkerEpoch | None] = [None] * len(self.procs)
        deadline = time.monotonic() + self.timeout_sec
        with selectors.DefaultSelector() as selector:
            for index, proc in enumerate(self.procs):
                selector.register(proc.stdout, selectors.EVENT_READ, index)
            while any(f is None for f in found):
                left = deadline - time.monotonic()
                if left <= 0:
                    waiting = [i for i, f in enumerate(found) if f is None]
                    raise TrialError(f"sharding cluster: worker(s) {waiting} gave no {what} within "
                                     f"{self.timeout_sec:.0f} s (killed)")
                for key, _ in selector.select(timeout=left):
                    index = key.data
                    chunk = os.read(key.fileobj.fileno(), 65536)
                    if not chunk:
                        raise self._exited(index, f"its {what}")
                    self.buffers[index] += chunk
                    if b"\n" in self.buffers[index]:
                        line, self.buffers[index] = self.buffers[index].split(b"\n", 1)
                        try:
                            found[index] = reply(line, f"sharding cluster: worker {index}'s {what}")
                        except DataError as err:
                            raise TrialError(str(err)[:280]) from None
                        selector.unregister(key.fileobj)
                        if isinstance(found[index], WorkerError):
                            raise TrialError(f"sharding cluster: worker {index}: {found[index].error}"[:280])
        return found  # type: ignore[return-value]

    def send(self, line: str, what: str) -> None:
        """Write `line` to every worker; TrialError (one line) naming a worker that exited before it got `what`."""
        for index, proc in enumerate(self.procs):
            try:
                proc.stdin.write(f"{line}\n".encode())
                proc.stdin.flush()
            except BrokenPipeError:
                raise self._exited(index, f"it received {what}") from None

    def _exited(self, index: int, before: str) -> TrialError:
        """Give the error for worker `index`, whose pipes closed before `before`: its exit code and last stderr line."""
        code = self.procs[index].wait()
        return TrialError(f"sharding cluster: worker {index} exited (code {code}) before {before}: "
                          f"{last_stderr_line(self.stderr_files[index])}"[:280])

    def close(self, grace_sec: float = 10.0) -> None:
        """End every worker: EOF on stdin, a grace period, then SIGKILL to its process group."""
        for proc in self.procs:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        deadline = time.monotonic() + grace_sec
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            kill_group(proc)  # anything the worker started goes too
            proc.stdout.close()
        for f in self.stderr_files:
            f.close()


@contextlib.contextmanager
def cluster(job: ShardingJob, env: dict[str, str], cpus: list[tuple[int, ...]] | None,
            timeout_sec: float) -> Iterator[Cluster]:
    """Yield a started Cluster; every worker is gone when the block ends, however it ends."""
    started = Cluster(job, env, cpus, timeout_sec)
    try:
        yield started
    except BaseException:
        started.close(grace_sec=0.0)  # a failed or interrupted cluster has nothing left to finish
        raise
    started.close()


def measure_placements(job: ShardingJob, env: dict[str, str], cpus: list[tuple[int, ...]] | None, timeout_sec: float,
                       log: Callable[[str], None] = print, on_start: Callable[[list[int]], None] | None = None
                       ) -> list[WorkerEpoch]:
    """Give every worker's measurement of every (round, placement) in `job.order`, measured on one cluster.

    `on_start(pids)` hears the workers' process ids once they are started (tests check they are gone after).
    """
    measurements = []
    with cluster(job, env, cpus, timeout_sec) as running:
        if on_start is not None:
            on_start(running.pids)
        for round_index, placement in job.order:
            _expect(running.replies(f"readiness for {placement}"), Ready, f"readiness for {placement}")
            running.send("go", "go")
            found = _expect(running.replies(f"{placement} epoch"), WorkerEpoch, f"{placement} epoch")
            measurements += found
            rates = ", ".join(f"{m.examples / m.seconds:,.0f}" for m in found)
            reads = ", ".join(f"{m.rchar_bytes:,}" for m in found)
            log(f"round {round_index + 1}: {placement}: examples/s by worker {rates}; bytes read {reads}")
    return measurements


def _expect(found: list, kind: type, what: str) -> list:
    """Give the replies if each is a `kind`; TrialError naming the worker that said something else."""
    for index, item in enumerate(found):
        if not isinstance(item, kind):
            raise TrialError(f"sharding cluster: worker {index} sent {type(item).__name__}, not its {what}")
    return found


def shard_run(run_dir: Path, workers: int = 2, rounds: int = DEFAULT_ROUNDS, placements: Sequence[str] = tuple(PLACEMENTS),
              configuration_id: str | None = None, log: Callable[[str], None] = print,
              on_start: Callable[[list[int]], None] | None = None) -> tuple[Path, ShardingRecord]:
    """Measure `placements` of a run's configuration on a local cluster of `workers`; give sharding.json's path
    and its record. Everything that can be refused is refused before a worker starts."""
    from pipebench.capacity.profile import chosen_configuration, configuration_trial
    from pipebench.measure.manager import Limits, trial_environment
    from pipebench.pipeline.spec import PipelineSpec
    from pipebench.results import load

    run_dir = Path(run_dir)
    run = load(run_dir)
    config = chosen_configuration(run, configuration_id)
    trial = configuration_trial(run, config)
    spec, changes = measured_spec(PipelineSpec.from_dict(trial.pipeline_spec))
    where = f"{run_dir}: configuration {config.configuration_id}"
    files = expand(spec.source.files, f"{where}: source.files")
    placements = list(dict.fromkeys(placements))
    check_request(where, files, workers, placements)
    cpus = worker_cpus(workers)
    notes = order_notes(spec, placements)
    sources = dataclasses.replace(trial.sources, file=dataclasses.replace(trial.sources.file, cold=False))
    job = ShardingJob(os.getpid(), workers, spec.to_dict(), to_json(sources),
                      trial.threads,
                      tuple(measuring_order(placements, rounds, f"{config.configuration_id}/{workers}")))
    log(f"sharding configuration {config.configuration_id} ({spec.ordering}; {len(files)} file(s)) over {workers} "
        f"workers on 127.0.0.1, {rounds} round(s) of {', '.join(placements)}; "
        + (f"workers pinned to CPUs {', '.join(','.join(map(str, c)) for c in cpus)}" if cpus
           else f"workers share this machine's {len(usable_cpus())} CPU(s)")
        + (f"; {', '.join(changes)}" if changes else ""))
    for note in notes:
        log(f"note: {note}")
    timeout_sec = Limits.of_budget(run.config["budget"]).timeout_sec  # what a run's trial may take
    measurements = measure_placements(job, trial_environment(trial), cpus, timeout_sec, log, on_start)
    found = ShardingRecord(SHARDING_VERSION, config.configuration_id, spec.to_dict(), trial.batch_size, workers,
                           rounds, tuple(changes), tuple(notes), tuple(files), sum(os.path.getsize(f) for f in files),
                           None if cpus is None else tuple(tuple(c) for c in cpus), BYTES_MEASURE,
                           tuple(measurements))
    return write_sharding(run_dir, found), found
