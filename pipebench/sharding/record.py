"""RUN_DIR/sharding.json: what each worker of a local cluster read, saw and how fast, per placement and round.

Shape (`schema_version` 1; spelt `sharding_version` before 2026-11-26, read as it is):
  {"schema_version": 1, "configuration_id", "pipeline", "batch_size", "workers", "rounds", "changes": [...], "notes": [...],
   "files": [...], "data_bytes", "cpus": [[...] per worker] | null, "bytes_measure": "rchar",
   "measurements": [{"placement", "round", "worker", "examples", "batches", "seconds", "rchar_bytes",
                     "read_bytes"}]}
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

from pipebench.atomic import atomic_write_json
from pipebench.errors import DataError
from pipebench.measure.intervals import Interval, geometric_interval, mean_interval, ratio_interval
from pipebench.sharding.placements import PLACEMENTS
from pipebench.versioned import VERSION_KEY, WAS, read_versioned

SHARDING_FILE = "sharding.json"
SHARDING_VERSION = 1
BYTES_MEASURE = "rchar"
_MEASUREMENT_KEYS = ("placement", "round", "worker", "examples", "batches", "seconds", "rchar_bytes", "read_bytes")


@dataclass(frozen=True)
class PlacementFigures:
    """One placement's figures over its rounds."""

    placement: str
    examples_per_sec: Interval  # per worker: the mean over workers, interval over rounds
    bytes_share: Interval  # the share of the data's bytes a worker read (mean over workers), over rounds
    examples_per_worker: tuple[int, ...]  # per epoch, worker by worker (round 0's; `examples_vary` if rounds differ)
    examples_vary: bool
    per_round: tuple[float, ...]  # the per-round values behind examples_per_sec, for paired ratios


def write_sharding(run_dir: Path, found: dict) -> Path:
    """Write RUN_DIR/sharding.json whole or not at all (replacing an earlier one); give its path."""
    path = Path(run_dir) / SHARDING_FILE
    atomic_write_json(path, found, allow_nan=False)
    return path


def read_sharding(run_dir: Path) -> dict | None:
    """Give RUN_DIR/sharding.json, None when the run has none; DataError / ResultsVersionError naming the file."""
    path = Path(run_dir) / SHARDING_FILE
    if not path.exists():
        return None
    found = read_versioned(path, VERSION_KEY, SHARDING_VERSION, "a sharding record",
                           f"run `pipebench sharding {run_dir}` again", WAS[SHARDING_FILE])
    for index, item in enumerate(found.get("measurements") or ()):
        if not isinstance(item, dict) or any(key not in item for key in _MEASUREMENT_KEYS) \
                or item["placement"] not in PLACEMENTS:
            raise DataError(f"{path}: measurements[{index}]: not a measurement (needs {', '.join(_MEASUREMENT_KEYS)} "
                            "and a known placement)")
    return found


def figures(found: dict) -> list[PlacementFigures]:
    """Give each measured placement's figures, in PLACEMENTS' order."""
    out = []
    for name in PLACEMENTS:
        mine = [m for m in found["measurements"] if m["placement"] == name]
        if not mine:
            continue
        rounds = sorted({m["round"] for m in mine})
        rates, shares = [], []
        for r in rounds:
            here = [m for m in mine if m["round"] == r]
            rates.append(sum(m["examples"] / m["seconds"] for m in here) / len(here))
            shares.append(sum(m["rchar_bytes"] for m in here) / len(here) / found["data_bytes"])
        first = sorted((m for m in mine if m["round"] == rounds[0]), key=lambda m: m["worker"])
        per_worker = tuple(m["examples"] for m in first)
        vary = any(tuple(m["examples"] for m in sorted((x for x in mine if x["round"] == r), key=lambda x: x["worker"]))
                   != per_worker for r in rounds)
        out.append(PlacementFigures(name, geometric_interval(rates), mean_interval(shares), per_worker, vary,
                                    tuple(rates)))
    return out


def paired(a: PlacementFigures, b: PlacementFigures) -> Interval:
    """Give a's per-worker throughput over b's, paired by round."""
    return ratio_interval(a.per_round, b.per_round)


def lines(found: dict) -> list[str]:
    """Give the figures as the lines `pipebench sharding` prints."""
    out = [f"{found['workers']} workers, {len(found['files'])} file(s), {found['data_bytes']:,} bytes, "
           f"{found['rounds']} round(s); bytes read per worker = /proc/<pid>/io {found['bytes_measure']}"]
    for f in figures(found):
        placement = PLACEMENTS[f.placement]
        out.append(f"  {f.placement:<16} ({placement.policy}): {f.examples_per_sec.text(',.0f')} examples/s per "
                   f"worker; read {f.bytes_share.text('.0f', 100.0, '%')} of the bytes per worker; examples per "
                   f"epoch by worker {', '.join(map(str, f.examples_per_worker))}"
                   + (" (varied between rounds)" if f.examples_vary else ""))
    out += [f"  {name}: each worker reads {PLACEMENTS[name].reads}; sees {PLACEMENTS[name].sees}"
            for name in PLACEMENTS if any(f.placement == name for f in figures(found))]
    out += [f"  note: {note}" for note in found.get("notes", ())]
    return out
