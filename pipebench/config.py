"""Experiment files: YAML → validated, frozen `Experiment`; errors name the YAML path.

The schema below is the whole format (experiments/deepfm.yaml is its documented example). Every
key is optional except `name`; unknown keys and wrong types are errors, because a misspelt knob
that silently keeps its default produces a benchmark of the wrong thing.
"""
from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pipebench.errors import ConfigError
from pipebench.model import OPTIMIZERS
from pipebench.pipeline.spec import MODES as SOURCE_MODES

MODES = ("input", "train", "synthetic")
#: What the Optuna driver can optimise: examples/sec up, peak RSS down, held-out AUC up, and the
#: instance's price per million examples down (from the checklist's catalog).
OBJECTIVES = ("examples_per_sec", "rss_peak_bytes", "auc", "cost_per_million_examples")
ENV_KNOBS = ("OMP_NUM_THREADS", "KMP_AFFINITY", "KMP_BLOCKTIME", "KMP_SETTINGS", "TF_ENABLE_ONEDNN_OPTS")


class _Any:
    """A value handed on unchecked here: its own module validates it (e.g. pipelines.orderings)."""


@dataclass(frozen=True)
class Field:
    """One key of the schema: its type, default and allowed values."""

    kind: Any  # int, float, str, bool, list[...] as ("list", kind), dict schema, or _Any
    default: Any = None
    choices: tuple | None = None
    nullable: bool = True
    minimum: float | None = None


def _list(kind: Any, default: Any = None, choices: tuple | None = None, minimum: float | None = None) -> Field:
    return Field(("list", kind), default, choices, True, minimum)


SCHEMA: dict[str, Any] = {
    "name": Field(str, None, nullable=False),
    "quick": _list(str, []),  # --set assignments that `pipebench run --quick` applies
    "data": {
        "synth": {
            "rows": Field(int, 200_000, minimum=1),
            "files": Field(int, 4, minimum=1),
            "seed": Field(int, 0),
            "field_size": Field(int, 39, minimum=2),
            "feature_size": Field(int, 117581, minimum=1),
            "positive_rate": Field(float, 0.25),
        },
        "files": {  # existing data instead of synth: globs per format
            "libsvm": _list(str),
            "tfrecord": _list(str),
            "packed": _list(str),
        },
        "formats": _list(str, ["libsvm", "tfrecord", "packed"], choices=("libsvm", "tfrecord", "packed")),
        "holdout_rows": Field(int, 20_000, minimum=0),
        "rows_per_record": Field(int, 256, minimum=1),
        "cache_dir": Field(str, "results/.data"),
    },
    "model": {
        "embedding_size": Field(int, 32, minimum=1),
        "deep_layers": _list(int, [256, 128, 64], minimum=1),
        "dropout": Field(float, 0.5),
        "l2": Field(float, 1e-4),
        "optimizer": Field(str, "adam", choices=OPTIMIZERS),
        "learning_rate": Field(float, 0.0005),
    },
    "pipelines": {
        "presets": _list(str, ["lambdaji-libsvm", "aws-sample"]),
        "formats": _list(str, None, choices=("libsvm", "tfrecord", "packed")),
        "orderings": Field(_Any),  # an Enumeration block: source, stages, options, enumerate
        # every pipeline is measured reading its data each way (pipebench/sources); pipe drops interleave
        "source_modes": _list(str, ["file"], choices=SOURCE_MODES),
    },
    "grid": {
        "batch_size": _list(int, [1024], minimum=1),
        "intra_op_threads": _list(int, [None], minimum=0),
        "inter_op_threads": _list(int, [None], minimum=0),
        "env": {knob: _list(str, [None]) for knob in ENV_KNOBS},
    },
    "modes": _list(str, list(MODES), choices=MODES),
    "search": {
        "driver": Field(str, "grid", choices=("grid", "optuna")),
        "n_trials": Field(int, 30, minimum=1),  # trials in the study, the enqueued reference ones included
        "mode": Field(str, "input", choices=MODES),
        "seed": Field(int, None),
        "sampler": Field(str, "tpe", choices=("tpe", "random")),
        "pruner": Field(str, "median", choices=("none", "median", "hyperband")),
        "storage": Field(str, None),  # Optuna storage URL or journal file; default: study.journal in the run
        "study_name": Field(str, None),  # default: the experiment's name
        "objectives": _list(str, ["examples_per_sec"], choices=OBJECTIVES),
        "space": Field(_Any),  # knob → list of choices or {low, high, log}; pipebench.search.space checks it
        "pin_inert": Field(bool, True),  # pin knobs this machine cannot honour (KMP_* without OpenMP, ...)
        "enqueue_reference": Field(bool, True),  # the deck's settings and TF defaults run first
        "catalog": Field(str, None),  # instance catalog for the cost objective; default: the shipped one
        "heartbeat_sec": Field(float, 30.0, minimum=0.5),  # a trial silent for 4 heartbeats is run again
    },
    "measurement": {
        "warmup_max_sec": Field(float, 10.0, minimum=0),
        "window_sec": Field(float, 1.0, minimum=0.05),
        "windows": Field(int, 5, minimum=1),
        "repeats": Field(int, 1, minimum=1),
        "steady_cv_pct": Field(float, 5.0, minimum=0),
        "sample_hz": Field(float, 4.0, minimum=0.5),
        "cold_cache": Field(bool, False),  # train trials also time a pass after evicting the page cache
        "page_cache": Field(bool, False),  # the sampler also reads page-cache residency of the data files
    },
    "quality": {
        "enabled": Field(bool, False),
        "train_examples": Field(int, 100_000, minimum=1),
        "eval_examples": Field(int, 20_000, minimum=1),
    },
    "budget": {
        "max_trials": Field(int, None, minimum=1),
        "max_minutes": Field(float, None, minimum=0),
        "max_failure_rate": Field(float, 0.5, minimum=0),
        "trial_timeout_sec": Field(float, 300.0, minimum=1),
        "memory_cap_mb": Field(int, 8192, minimum=64),
    },
    "sources": {  # how each source mode reads; see pipebench/sources and README "Source modes"
        "file": {"cold": Field(bool, False, nullable=False)},  # evict each file from the page cache as it opens
        "fastfile": {  # emulate: false reads the files as they are (on SageMaker, /opt/ml/input/data/<channel>)
            "emulate": Field(bool, True, nullable=False),
            "first_read_latency_ms": Field(float, 20.0, nullable=False, minimum=0),
            "bandwidth_mb_per_sec": Field(float, 200.0, minimum=0.001),  # MB = 10^6 bytes; null: no cap
        },
        "pipe": {  # emulate: false reads SageMaker's own FIFOs; the dirs default to PipeModeDataset's
            "emulate": Field(bool, True, nullable=False),
            # op: SageMaker's PipeModeDataset (TF 2.14 env only); python: pipebench's labelled pure-Python fallback
            "reader": Field(str, "op", choices=("op", "python"), nullable=False),
            "pipe_dir": Field(str, None),
            "config_dir": Field(str, None),
            "state_dir": Field(str, None),
            "shuffle_seed": Field(int, None),  # emulated ShuffleConfig: the file order changes every epoch
            "bandwidth_mb_per_sec": Field(float, None, minimum=0.001),  # emulated channel cap; null: none
        },
    },
    "results": Field(str, "results"),
}


def _check(value: Any, field: Field, where: str) -> Any:
    if value is None:
        if field.nullable:
            return None
        raise ConfigError(f"{where}: required")
    kind = field.kind
    if kind is _Any:
        return copy.deepcopy(value)
    if isinstance(kind, tuple):
        if not isinstance(value, list):
            value = [value]  # a scalar is a one-value list: `batch_size: 1024`
        item = Field(kind[1], None, field.choices, True, field.minimum)
        return [_check(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if kind is str and isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)  # env values such as OMP_NUM_THREADS: 2
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ConfigError(f"{where}: must be {kind.__name__}, not {type(value).__name__} {value!r}")
    if field.choices is not None and value not in field.choices:
        raise ConfigError(f"{where}: must be one of {', '.join(field.choices)}, not {value!r}")
    if field.minimum is not None and value < field.minimum:
        raise ConfigError(f"{where}: must be at least {field.minimum}, not {value!r}")
    return value


def _resolve(obj: Any, schema: dict, where: str) -> dict:
    if obj is None:
        obj = {}
    if not isinstance(obj, Mapping):
        raise ConfigError(f"{where or 'experiment'}: must be a mapping, not {type(obj).__name__}")
    unknown = sorted(set(map(str, obj)) - set(schema))
    if unknown:
        prefix = f"{where}." if where else ""
        raise ConfigError(f"{prefix}{unknown[0]}: unknown key (expected one of {', '.join(schema)})")
    out = {}
    for key, sub in schema.items():
        path = f"{where}.{key}" if where else key
        if isinstance(sub, dict):
            out[key] = _resolve(obj.get(key), sub, path)
        else:
            out[key] = _check(obj[key] if key in obj else copy.deepcopy(sub.default), sub, path)
    return out


def resolve_block(name: str, obj: Any) -> dict:
    """Give the validated top-level block `name` of `obj` with defaults filled in (e.g. a trial's `sources`)."""
    return _resolve(obj, SCHEMA[name], name)


def _apply_override(raw: dict, assignment: str) -> None:
    """Apply `a.b.c=value` (value parsed as YAML) to the raw document."""
    key, sep, text = assignment.partition("=")
    if not sep or not key:
        raise ConfigError(f"--set {assignment}: expected KEY=VALUE, e.g. grid.batch_size=[512,1024]")
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        value = text
    node = raw
    parts = key.split(".")
    for part in parts[:-1]:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise ConfigError(f"--set {key}: {part} is not a mapping")
        node = child
    node[parts[-1]] = value


@dataclass(frozen=True)
class Experiment:
    """A validated experiment: `resolved` is the full document, defaults filled in."""

    resolved: dict
    source: Path | None = None

    def __getitem__(self, key: str) -> Any:
        return self.resolved[key]

    @property
    def name(self) -> str:
        return self.resolved["name"]

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.resolved, sort_keys=False)

    def fingerprint(self) -> str:
        """Give a hash of the resolved document (what a resumed run must match)."""
        import hashlib

        return hashlib.sha256(json.dumps(self.resolved, sort_keys=True).encode()).hexdigest()[:16]


def parse_experiment(raw: Any, where: str = "", source: Path | None = None,
                     overrides: tuple[str, ...] = (), quick: bool = False) -> Experiment:
    """Validate a raw document (after its `quick:` list when asked, then `--set`) into an Experiment."""
    raw = copy.deepcopy(raw) if raw is not None else {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: the experiment must be a mapping, not {type(raw).__name__}")
    if quick:
        quick_list = raw.get("quick") or []
        if not isinstance(quick_list, list):
            raise ConfigError(f"{where}: quick: must be a list of KEY=VALUE overrides")
        overrides = (*map(str, quick_list), *overrides)
    for assignment in overrides:
        _apply_override(raw, assignment)
    try:
        resolved = _resolve(raw, SCHEMA, "")
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}" if where else str(err)) from None
    if not resolved["data"]["formats"]:
        raise ConfigError(f"{where}: data.formats: at least one format")
    if not resolved["pipelines"]["source_modes"]:
        raise ConfigError(f"{where}: pipelines.source_modes: at least one of {', '.join(SOURCE_MODES)}")
    return Experiment(resolved, source)


def load_experiment(path: Path, overrides: tuple[str, ...] = (), quick: bool = False) -> Experiment:
    """Read and validate an experiment file; errors read `FILE: yaml.path: reason`."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise ConfigError(f"{path}: {err.strerror}") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise ConfigError(f"{where}: not valid YAML: {getattr(err, 'problem', err)}") from None
    return parse_experiment(raw, str(path), path, overrides, quick)
