"""Hand-made capacity profiles for model, whatif and report tests: no TensorFlow, no timing.

A profile is built from per-round measurements of each prefix, the way the measurement derives it:
intervals by pipebench.measure.intervals, a stage's own cost as the difference of consecutive prefixes
(≥ 0), so a fixture cannot claim a cost its rounds do not show.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pipebench.measure.intervals import geometric_interval, mean_interval
from pipebench.results.stage_costs import PROFILE_FILE, PROFILE_VERSION, CapacityProfile, CapacityProfiles, StageCost


def stage_rounds(cost: float, spread: float = 0.0, rounds: int = 5) -> list[float]:
    """Give `rounds` per-round CPU-sec/example values spread up to ±`spread` (a fraction) around `cost`, in
    pairs about it, so their mean is `cost` for an odd count."""
    return [cost * (1 + spread * (-1) ** i * ((i + 1) // 2) / max(1, rounds // 2)) for i in range(rounds)]


def profile(stages: Sequence[tuple[str, float, bool]], *, spread: float = 0.0, rounds: int = 5, cores: int = 2,
            io: float | None = None, configuration_id: str = "cfg-a", pipeline: str = "test / tfrecord, file mode",
            host: str = "hosttest", batch_size: int = 1024, busy_rounds: int = 0) -> CapacityProfile:
    """Give a profile whose stages cost (name, CPU-sec/example, sequential?); prefixes measured over `rounds`."""
    made, before, cumulative = [], None, 0.0
    for name, cost, sequential in stages:
        cumulative += cost
        cpu_rounds = stage_rounds(cumulative, spread, rounds)
        cpu = mean_interval(cpu_rounds)
        own = max(0.0, cpu.mean - (before.mean if before else 0.0))
        made.append(StageCost(stage=name, sequential=sequential,
                              why_sequential="one core at most" if sequential else None,
                              prefix_examples_per_sec=geometric_interval([cores / c for c in cpu_rounds]),
                              prefix_cpu_sec_per_example=cpu, cpu_sec_per_example=own,
                              rate_per_core=1.0 / own if own > 0 else None))
        before = cpu
    return CapacityProfile(configuration_id=configuration_id, pipeline=pipeline, batch_size=batch_size, cores=cores,
                           cpus=tuple(range(cores)), host_fingerprint=host, stages=tuple(made),
                           io_examples_per_sec=io, busy_rounds=busy_rounds)


def profiles(*found: CapacityProfile) -> CapacityProfiles:
    """Give capacity.json's record holding `found`."""
    return CapacityProfiles(schema_version=PROFILE_VERSION, profiles=tuple(found))


def write_capacity(run_dir: Path, *found: CapacityProfile) -> Path:
    """Write capacity.json holding `found` into a run folder, as `pipebench capacity` would; give the folder."""
    (Path(run_dir) / PROFILE_FILE).write_text(json.dumps(profiles(*found).to_json()))
    return Path(run_dir)
