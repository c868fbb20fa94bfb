"""One worker of a local sharding cluster: `python -m pipebench.sharding.worker INDEX`, its job the first stdin line.

TF_CONFIG (set by pipebench.sharding.cluster) names every worker on 127.0.0.1 and this one's index, so
`tf.distribute.MultiWorkerMirroredStrategy()` joins the cluster as a real multi-worker job would. For
each (round, placement) of the job, in the job's order, the worker builds the measured pipeline, sets
`tf.data.Options().experimental_distribute.auto_shard_policy` to the placement's policy, hands it to
`strategy.experimental_distribute_dataset` (which shards it, and splits each global batch into
per-replica batches), makes the iterator, prints `ready` and waits for `go` on stdin: the parent
starts every worker's epoch together. It then reads one epoch, counting the examples of its own
batches, and prints one JSON line: examples, batches, seconds, and /proc/self/io's rchar and read_bytes
taken just before and after the epoch (pipebench.sharding.record says why rchar).

For a finite dataset, a multi-worker iterator all-reduces each step whether any worker still has data (TF's
partial-batch handling, `strategy.extended.experimental_enable_get_next_as_optional`); TF turns it off for
an infinite (repeat()-ed) dataset, as training reads. The worker turns it off too: each reads its epoch at
its own pace, and the figures are the input's, not that all-reduce's (which on a 2-vCPU machine set every
placement's pace alike).

Protocol lines go to the stdout this process started with; anything else printing to stdout is sent
to stderr, so a library's print cannot break the protocol.
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback
from collections.abc import Callable

from pipebench.parent_death import die_with_parent
from pipebench.pipeline.spec import PipelineSpec
from pipebench.sharding.placements import PLACEMENTS, placement_spec
from pipebench.sharding.record import Ready, ShardingJob, WorkerEpoch, WorkerError
from pipebench.typed import from_json, parse_json, to_json


def _io() -> dict[str, int]:
    """Give this process's /proc/self/io counters (all its threads)."""
    with open("/proc/self/io") as f:
        return {key: int(value) for key, value in (line.split(": ") for line in f.read().splitlines())}


def main(argv: list[str]) -> int:
    index = int(argv[0])
    job = from_json(ShardingJob, parse_json(sys.stdin.buffer.readline(), "the sharding job"), "the sharding job")
    die_with_parent(job.parent_pid)
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)

    def say(message: Ready | WorkerEpoch | WorkerError) -> None:
        protocol.write(json.dumps(to_json(message)) + "\n")

    try:
        measure(job, index, say)
        code = 0
    except Exception as err:  # the parent reports it on one line and ends the cluster
        from pipebench.errors import failure_reason

        traceback.print_exc()
        say(WorkerError(failure_reason(err)))
        code = 1
    protocol.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: with peers gone, the strategy's collective executors can hang at exit.
    os._exit(code)


def measure(job: ShardingJob, index: int, say: Callable[[Ready | WorkerEpoch], None]) -> None:
    """Join the cluster and measure the job's (round, placement) epochs, saying `ready` and each result."""
    import tensorflow as tf

    from pipebench.measure.build import build

    if job.threads.intra:
        tf.config.threading.set_intra_op_parallelism_threads(job.threads.intra)
    if job.threads.inter:
        tf.config.threading.set_inter_op_parallelism_threads(job.threads.inter)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    # Read as a repeat()-ed dataset is in training: TF checks across workers each step whether any still has
    # data only for a finite dataset, and that all-reduce (not the input) set the pace of every placement.
    strategy.extended.experimental_enable_get_next_as_optional = False
    base = PipelineSpec.from_dict(job.pipeline)

    def distributed(placement: str, take: int | None = None):
        spec = placement_spec(base, placement, job.workers, index)
        dataset = build(spec, job.sources).dataset
        if take is not None:
            dataset = dataset.take(take)
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = getattr(tf.data.experimental.AutoShardPolicy,
                                                                    PLACEMENTS[placement].policy)
        return strategy.experimental_distribute_dataset(dataset.with_options(options))

    def epoch(iterator) -> tuple[int, int]:
        examples = batches = 0
        for element in iterator:
            for labels in strategy.experimental_local_results(element[1]):
                examples += int(labels.shape[0])
                batches += 1
        return examples, batches

    # One short untimed pass first: the first iteration imports and reads modules, which rchar would count.
    epoch(iter(distributed(job.order[0][1], take=2)))
    for round_index, placement in job.order:
        iterator = iter(distributed(placement))
        say(Ready(placement))
        if sys.stdin.readline().strip() != "go":
            return
        before, started = _io(), time.perf_counter()
        examples, batches = epoch(iterator)
        seconds, after = time.perf_counter() - started, _io()
        say(WorkerEpoch(placement, round_index, index, examples, batches, seconds, after["rchar"] - before["rchar"],
                        after["read_bytes"] - before["read_bytes"]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
