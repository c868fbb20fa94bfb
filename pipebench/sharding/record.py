"""RUN_DIR/sharding.json: what each worker of a local cluster read, saw and how fast, per placement and round.

The record is `ShardingRecord` (pipebench.typed; docs/reference/results-format.md lists its keys), and the
messages between the parent and its workers are typed too: the job (`ShardingJob`, each worker's first
stdin line) and each worker's replies (`Ready`, then one `WorkerEpoch` per epoch, or `WorkerError`).
Figures are derived when read (`figures`): a worker's examples/s is its examples over its epoch's seconds;
a placement's per-round value is the mean over its workers, and its interval is over rounds (geometric
for throughput, arithmetic for the share of the data's bytes each worker read); two placements compare
by paired ratio over the rounds both ran in (pipebench.measure.intervals).

Bytes read are /proc/<pid>/io `rchar` taken by each worker just before and after its epoch: the bytes its
read()/pread() calls returned, from the page cache or the disk alike. `read_bytes` (kept beside it) counts
only what the storage device delivered, which is 0 once the files sit in the page cache: it tells what the
disk did, not what the pipeline read.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipebench.atomic import atomic_write_json
from pipebench.errors import DataError
from pipebench.measure.intervals import (
    Interval,
    geometric_interval,
    mean_interval,
    ratio_interval,
)
from pipebench.measure.trial import Threads
from pipebench.sharding.placements import PLACEMENTS
from pipebench.typed import from_json, parse_json, to_json
from pipebench.versioned import VERSION_KEY, WAS, read_versioned

SHARDING_FILE = "sharding.json"
SHARDING_VERSION = 1
BYTES_MEASURE = "rchar"


@dataclass(frozen=True)
class ShardingJob:
    """What every worker of a cluster is told on its first stdin line."""

    parent_pid: int  # the worker ends when this process does
    workers: int
    pipeline: dict[str, Any]  # the measured PipelineSpec.to_dict()
    sources: dict[str, Any]  # the experiment's `sources:` settings
    threads: Threads
    order: tuple[tuple[int, str], ...]  # (round, placement) in measuring order


@dataclass(frozen=True)
class Ready:
    """A worker's reply when its iterator for `ready` is made: it waits for `go`."""

    ready: str  # the placement


@dataclass(frozen=True)
class WorkerError:
    """A worker's reply when it failed: the parent says it on one line and ends the cluster."""

    error: str


@dataclass(frozen=True)
class WorkerEpoch:
    """One worker's epoch under one placement in one round: a worker's reply, and a row of sharding.json."""

    placement: str
    round: int
    worker: int
    examples: int
    batches: int
    seconds: float
    rchar_bytes: int  # /proc/self/io rchar after the epoch less before it
    read_bytes: int  # /proc/self/io read_bytes likewise: what the storage device delivered


@dataclass(frozen=True)
class ShardingRecord:
    """What RUN_DIR/sharding.json holds."""

    schema_version: int  # the layout version (pipebench.versioned)
    configuration_id: str
    pipeline: dict[str, Any]  # the measured PipelineSpec.to_dict()
    batch_size: int
    workers: int
    rounds: int
    changes: tuple[str, ...]  # what measuring changed in the configuration's pipeline
    notes: tuple[str, ...]  # what a placement means for this pipeline (e.g. DATA over an unseeded shuffle)
    files: tuple[str, ...]
    data_bytes: int
    cpus: tuple[tuple[int, ...], ...] | None  # each worker's CPUs; None when they shared the machine's
    bytes_measure: str  # "rchar"
    measurements: tuple[WorkerEpoch, ...]

    def to_json(self) -> dict:
        return to_json(self)


def reply(line: bytes, where: str) -> Ready | WorkerEpoch | WorkerError:
    """Give a worker's reply line as its message; DataError naming `where` when it is none of them."""
    found = parse_json(line, where)
    kind = WorkerError if isinstance(found, dict) and "error" in found else Ready \
        if isinstance(found, dict) and "ready" in found else WorkerEpoch
    return from_json(kind, found, where)


@dataclass(frozen=True)
class PlacementFigures:
    """One placement's figures over its rounds."""

    placement: str
    examples_per_sec: Interval  # per worker: the mean over workers, interval over rounds
    bytes_share: Interval  # the share of the data's bytes a worker read (mean over workers), over rounds
    examples_per_worker: tuple[int, ...]  # per epoch, worker by worker (round 0's; `examples_vary` if rounds differ)
    examples_vary: bool
    per_round: tuple[float, ...]  # the per-round values behind examples_per_sec, for paired ratios


def write_sharding(run_dir: Path, found: ShardingRecord) -> Path:
    """Write RUN_DIR/sharding.json whole or not at all (replacing an earlier one); give its path."""
    path = Path(run_dir) / SHARDING_FILE
    atomic_write_json(path, found.to_json(), allow_nan=False)
    return path


def read_sharding(run_dir: Path) -> ShardingRecord | None:
    """Give RUN_DIR/sharding.json, None when the run has none; DataError / ResultsVersionError naming the file."""
    path = Path(run_dir) / SHARDING_FILE
    if not path.exists():
        return None
    found = read_versioned(path, VERSION_KEY, SHARDING_VERSION, "a sharding record",
                           f"run `pipebench sharding {run_dir}` again", WAS[SHARDING_FILE])
    # the first records (2026-11-23, before DATA over an unseeded shuffle was noted) have no notes
    record = from_json(ShardingRecord, {**found, "notes": found.get("notes", [])}, str(path))
    for index, item in enumerate(record.measurements):
        if item.placement not in PLACEMENTS:
            raise DataError(f"{path}: measurements[{index}].placement: unknown placement {item.placement!r} (known: "
                            f"{', '.join(PLACEMENTS)})"[:280])
    return record


def figures(found: ShardingRecord) -> list[PlacementFigures]:
    """Give each measured placement's figures, in PLACEMENTS' order."""
    out = []
    for name in PLACEMENTS:
        mine = [m for m in found.measurements if m.placement == name]
        if not mine:
            continue
        rounds = sorted({m.round for m in mine})
        rates, shares = [], []
        for r in rounds:
            here = [m for m in mine if m.round == r]
            rates.append(sum(m.examples / m.seconds for m in here) / len(here))
            shares.append(sum(m.rchar_bytes for m in here) / len(here) / found.data_bytes)
        first = sorted((m for m in mine if m.round == rounds[0]), key=lambda m: m.worker)
        per_worker = tuple(m.examples for m in first)
        vary = any(tuple(m.examples for m in sorted((x for x in mine if x.round == r), key=lambda x: x.worker))
                   != per_worker for r in rounds)
        out.append(PlacementFigures(name, geometric_interval(rates), mean_interval(shares), per_worker, vary,
                                    tuple(rates)))
    return out


def paired(a: PlacementFigures, b: PlacementFigures) -> Interval:
    """Give a's per-worker throughput over b's, paired by round."""
    return ratio_interval(a.per_round, b.per_round)


def lines(found: ShardingRecord) -> list[str]:
    """Give the figures as the lines `pipebench sharding` prints."""
    out = [f"{found.workers} workers, {len(found.files)} file(s), {found.data_bytes:,} bytes, "
           f"{found.rounds} round(s); bytes read per worker = /proc/<pid>/io {found.bytes_measure}"]
    for f in figures(found):
        placement = PLACEMENTS[f.placement]
        out.append(f"  {f.placement:<16} ({placement.policy}): {f.examples_per_sec.text(',.0f')} examples/s per "
                   f"worker; read {f.bytes_share.text('.0f', 100.0, '%')} of the bytes per worker; examples per "
                   f"epoch by worker {', '.join(map(str, f.examples_per_worker))}"
                   + (" (varied between rounds)" if f.examples_vary else ""))
    out += [f"  {name}: each worker reads {PLACEMENTS[name].reads}; sees {PLACEMENTS[name].sees}"
            for name in PLACEMENTS if any(f.placement == name for f in figures(found))]
    out += [f"  note: {note}" for note in found.notes]
    return out
