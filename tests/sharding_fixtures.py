"""Hand-made sharding.json records for checklist and record tests: no TensorFlow, no timing.

A record holds per-worker measurements the way `pipebench sharding` writes them; rates vary a little from
round to round (±2%, FILE and DATA out of step) so paired ratios have intervals, as on a real machine.
"""
from __future__ import annotations

from pathlib import Path

from pipebench.sharding.placements import PLACEMENTS
from pipebench.sharding.record import SHARDING_VERSION, ShardingRecord, write_sharding
from pipebench.typed import from_json

EXAMPLES = 50_000


def sharding_record(files: list[str], data_bytes: int, rates: dict[str, float], workers: int = 2,
                    rounds: int = 3) -> dict:
    """Give a record where each placement in `rates` ran at that many examples/s per worker, FILE reading its
    1/workers of the bytes, the others all of them, OFF seeing every example on every worker."""
    measurements = []
    for name, rate in rates.items():
        offset = list(PLACEMENTS).index(name) % 3  # file and data vary out of step: their ratio has an interval
        for r in range(rounds):
            for w in range(workers):
                examples = EXAMPLES * workers if name == "off" else EXAMPLES
                speed = rate * (1.02, 1.0, 0.98)[(r + offset) % 3]
                read = data_bytes // workers if name == "file" else data_bytes
                measurements.append({"placement": name, "round": r, "worker": w, "examples": examples,
                                     "batches": examples // 64, "seconds": examples / speed, "rchar_bytes": read,
                                     "read_bytes": 0})
    return {"schema_version": SHARDING_VERSION, "configuration_id": "t-train-tfr", "pipeline": {},
            "batch_size": 1024, "workers": workers, "rounds": rounds, "changes": [], "notes": [], "files": files,
            "data_bytes": data_bytes, "cpus": [[0], [1]], "bytes_measure": "rchar", "measurements": measurements}


def typed(record: dict) -> ShardingRecord:
    """Give a hand-made record as pipebench reads it."""
    return from_json(ShardingRecord, record, "a hand-made sharding record")


def write_record(run_dir: Path, record: dict) -> Path:
    """Write `record` as the run's sharding.json; give the run folder."""
    write_sharding(run_dir, typed(record))
    return Path(run_dir)
