"""The per-stage cost profile of one pipeline: the record the measurement writes and the model reads (capacity.json,
a file of the run folder: results/ loads it with the run, below capacity/ and report/, which both read it).

It crosses a process and a module boundary (capacity.json in a run folder; the whatif command and
the checklist read it), so it is a typed record (pipebench.typed): a missing key is an error, never
a default standing in for a measured figure.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipebench.measure.intervals import Interval
from pipebench.typed import load_json, to_json

PROFILE_VERSION = 2  # 2: busy_rounds
PROFILE_FILE = "capacity.json"


@dataclass(frozen=True)
class StageCost:
    """What one stage adds: measured as the difference between the prefix that ends with it and the one before."""

    stage: str  # the stage's kind as the spec names it ("source", "decode", "shuffle", "batch", ...)
    sequential: bool  # runs on one core at most (one TFRecord reader, a map without parallel calls, shuffle)
    why_sequential: str | None  # the spec's reason, None when parallel
    prefix_examples_per_sec: Interval  # the prefix ending with this stage, measured alone (input mode)
    prefix_cpu_sec_per_example: Interval  # the worker's process-tree CPU seconds (utime + stime) per example
    cpu_sec_per_example: float  # its own cost: what its prefix adds to the most any shorter prefix cost (≥ 0)
    rate_per_core: float | None  # examples per CPU-second of this stage alone; None when its cost is 0


@dataclass(frozen=True)
class CapacityProfile:
    """A pipeline's stage costs, measured in fresh workers pinned to `cores` CPUs."""

    configuration_id: str  # the configuration profiled (pipebench.results.configurations)
    pipeline: str  # its label ("aws-sample / tfrecord, file mode")
    batch_size: int
    cores: int  # CPUs the measuring workers were pinned to (sched_setaffinity before TensorFlow started)
    cpus: tuple[int, ...]  # which ones
    host_fingerprint: str  # MachineFacts.host_fingerprint of the machine measured
    stages: tuple[StageCost, ...]  # in pipeline order; the last prefix is the whole pipeline
    io_examples_per_sec: float | None  # a read ceiling when one is known (cold cache, FastFile, Pipe), else None
    busy_rounds: int  # prefix measurements whose windows shared the machine with busy processes, even measured again

    @property
    def whole(self) -> Interval:
        """Give the whole pipeline's measured input throughput at `cores`."""
        return self.stages[-1].prefix_examples_per_sec


@dataclass(frozen=True)
class CapacityProfiles:
    """What capacity.json in a run folder holds: every profile measured for that run."""

    schema_version: int  # the layout version (pipebench.versioned)
    profiles: tuple[CapacityProfile, ...]

    def to_json(self) -> dict:
        return to_json(self)

    @classmethod
    def load(cls, path: Path) -> CapacityProfiles:
        return load_json(cls, path)
