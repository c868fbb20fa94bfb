"""Where a multi-worker job splits its input: the placements measured, and the pipeline each worker builds.

- `file`: tf.distribute's AutoShardPolicy.FILE: each worker reads only its files (worker i gets files
  i, i+N, ...); needs at least as many files as workers.
- `data`: AutoShardPolicy.DATA: each worker reads and decodes every file, then keeps every N-th
  (per-replica) batch.
- `off`: AutoShardPolicy.OFF: no sharding; each worker reads and sees every example, so the cluster
  sees each one N times per epoch (right only when the files were split already, e.g. ShardedByS3Key).
- `shard-after-read`: the reference scripts' `shard(num_hosts, rank)` right after the reader, with
  the policy OFF: each worker reads every record and keeps every N-th ("reads everything and discards").

No TensorFlow here: the worker (pipebench.sharding.worker) maps a placement to its policy.
"""
from __future__ import annotations

from dataclasses import dataclass

from pipebench.data_files import REMOTE_PREFIX
from pipebench.errors import UsageError
from pipebench.pipeline.spec import PipelineSpec, StageSpec


@dataclass(frozen=True)
class Placement:
    """One way to shard: its name, the tf.distribute policy it sets, what each worker reads and sees."""

    name: str
    policy: str  # AutoShardPolicy member name
    reads: str
    sees: str


PLACEMENTS = {p.name: p for p in (
    Placement("file", "FILE", "its own files (1/N of the bytes when files are even)",
              "the examples of its files: each example once per epoch across the cluster"),
    Placement("data", "DATA", "every file, and decodes every example",
              "every N-th batch: each example once per epoch across the cluster"),
    Placement("off", "OFF", "every file", "every example: each example N times per epoch across the cluster"),
    Placement("shard-after-read", "OFF", "every file (shard(N, rank) after the reader discards the rest)",
              "every N-th record: each example once per epoch across the cluster"),
)}


def measured_spec(spec: PipelineSpec) -> tuple[PipelineSpec, list[str]]:
    """Give (the pipeline measured for one epoch, what was changed for it).

    Read in file mode (the files are local; Pipe mode has no files to shard), without repeat (one epoch is
    what examples per epoch count), cache (one epoch only fills it, and a cache file would be shared by
    the workers) or its own shard (each placement places its own).
    """
    changes = []
    if spec.source.mode != "file":
        changes.append(f"{spec.source.mode} mode read as file mode")
        spec = spec.with_source(mode="file")
    for kind in ("repeat", "cache", "shard"):
        if spec.stage(kind) is not None:
            changes.append(f"{kind} dropped")
            spec = spec.without_stage(kind)
    return spec, changes


def placement_spec(spec: PipelineSpec, placement: str, workers: int, index: int) -> PipelineSpec:
    """Give worker `index`'s pipeline for `placement` (of `measured_spec`'s output): shard-after-read adds
    shard(workers, index) right after the reader (after an interleave, which reads), as the reference scripts do."""
    if placement != "shard-after-read":
        return spec
    at = 1 if spec.kinds[:1] == ("interleave",) else 0
    stages = list(spec.stages)
    stages.insert(at, StageSpec.of("shard", num_shards=workers, index=index))
    return PipelineSpec(spec.source, tuple(stages), spec.options)


def order_notes(spec: PipelineSpec, placements: list[str]) -> list[str]:
    """Give what the measured counts cannot show about which examples each worker gets: DATA keeps every N-th
    batch of each worker's own pass, so an unseeded shuffle (a different order on every worker) makes the
    workers' parts overlap and miss examples, though each still sees 1/N of them."""
    shuffle = spec.stage("shuffle")
    if "data" in placements and shuffle is not None and shuffle["seed"] is None:
        return ["DATA with an unseeded shuffle: each worker shuffles in its own order, so the parts they keep overlap "
                "and some examples reach no worker (DATA needs the same order on every worker: seed the shuffle)"]
    return []


def check_request(where: str, files: list[str], workers: int, placements: list[str]) -> None:
    """Raise UsageError (one line, naming `where`) for a request that cannot be measured as asked."""
    if workers < 2:
        raise UsageError(f"{where}: sharding needs at least 2 workers, not {workers}")
    unknown = [p for p in placements if p not in PLACEMENTS]
    if unknown:
        raise UsageError(f"{where}: unknown placement {unknown[0]!r} (known: {', '.join(PLACEMENTS)})")
    if not files:
        raise UsageError(f"{where}: the pipeline's files match nothing on this machine")
    remote = [f for f in files if f.startswith(REMOTE_PREFIX)]
    if remote:
        raise UsageError(f"{where}: {remote[0]} is on S3; sharding measures files on this machine")
    if "file" in placements and len(files) < workers:
        raise UsageError(f"{where}: FILE sharding needs at least as many files as workers ({len(files)} file(s) for "
                         f"{workers} workers): split the data (pipebench convert --shards {workers}) or leave it out "
                         f"(--placements {' '.join(p for p in PLACEMENTS if p != 'file')})")
