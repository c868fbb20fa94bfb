"""`PipelineSpec`: one input pipeline as plain, frozen data — source, ordered stages, tf.data options.

A spec never imports TensorFlow: it is what experiments enumerate, fingerprint and store beside
results, and what `build` and `export` turn into a `tf.data.Dataset` or a Python module.

Its dictionary form (the YAML / JSON shape; with an `enumerate:` block added it is what an experiment
embeds as `pipelines:` or `pipelines.orderings:`, see orderings.Enumeration):

    source:  {format: tfrecord, mode: file, files: [data/part-*.tfrecord], compression: none,
              num_parallel_reads: AUTOTUNE, buffer_size: null, field_size: 39, rows_per_record: 256}
    stages:                                  # in pipeline order; each kind at most once
      - interleave: {cycle_length: AUTOTUNE, block_length: 16, num_parallel_calls: AUTOTUNE}
      - shard: {num_shards: 2, index: 0}
      - shuffle: {buffer_size: 10000, seed: 7, reshuffle_each_iteration: true}
      - cache: memory                        # or a file path
      - batch: {batch_size: 1024, drop_remainder: true}
      - decode: {num_parallel_calls: AUTOTUNE}   # scalar before batch, vectorized after
      - repeat: {epochs: 10}                 # null: forever
      - prefetch: {buffer_size: AUTOTUNE}
    options: {deterministic: true, autotune: {enabled: true, cpu_budget: 2, ram_budget: 0},
              threading: {private_threadpool_size: 2, max_intra_op_parallelism: 1},
              experimental_optimization: {map_parallelization: true}}

A stage may be a bare name (`- prefetch`) or `- kind: value` filling its main parameter
(`- batch: 1024`, `- cache: /tmp/c`). Parallelism and buffer parameters are `AUTOTUNE` or an
integer; `null` where noted means TensorFlow's own default (sequential map, sequential read).
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Union

import yaml

from pipebench.converters import COMPRESSIONS
from pipebench.errors import ConfigError
from pipebench.fingerprint import fingerprint
from pipebench.values import INT64_MAX, echo, name_text
from pipebench.yamlfile import parse_yaml

AUTOTUNE = "AUTOTUNE"
FORMATS = ("libsvm", "tfrecord", "packed")
SOURCE_MODES = ("file", "fastfile", "pipe", "service")
MEMORY = "memory"

Tunable = Union[int, str, None]
Scalar = Union[bool, int, str, None]

_REQUIRED = object()


def _tunable(value: Any, where: str, allow_null: bool) -> Tunable:
    if value is None and allow_null:
        return None
    if isinstance(value, str) and value.upper() == AUTOTUNE:
        return AUTOTUNE
    if _integer(value) and value >= 1:
        return value
    also = ", or null" if allow_null else ""
    raise ConfigError(f"{where}: must be AUTOTUNE or an integer ≥ 1{also}, not {echo(value)}")


def _integer(value: Any) -> bool:
    """Give whether `value` is an int TensorFlow can take (int64), not a bool."""
    return isinstance(value, int) and not isinstance(value, bool) and -INT64_MAX - 1 <= value <= INT64_MAX


def _count(value: Any, where: str, minimum: int = 1, allow_null: bool = False) -> int | None:
    if value is None and allow_null:
        return None
    if _integer(value) and value >= minimum:
        return value
    also = " or null" if allow_null else ""
    if isinstance(value, int) and not isinstance(value, bool) and value >= minimum:
        also += " that fits in 64 bits"
    raise ConfigError(f"{where}: must be an integer ≥ {minimum}{also}, not {echo(value)}")


def _flag(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    raise ConfigError(f"{where}: must be true or false, not {echo(value)}")


def _choice(value: Any, where: str, choices: Iterable[str]) -> str:
    choices = tuple(choices)
    if value in choices:
        return value
    raise ConfigError(f"{where}: must be one of {', '.join(choices)}, not {echo(value)}")


def _text(value: Any, where: str) -> str:
    if isinstance(value, str) and value:
        return value
    raise ConfigError(f"{where}: must be a non-empty string, not {echo(value)}")


def expect_mapping(value: Any, where: str) -> Mapping:
    """Give `value` if it is a mapping; ConfigError naming `where` otherwise."""
    if isinstance(value, Mapping):
        return value
    raise ConfigError(f"{where}: must be a mapping, not {type(value).__name__}")


def reject_unknown_keys(obj: Mapping, known: Iterable[str], where: str) -> None:
    """Raise ConfigError naming the first key of `obj` not in `known`: a typo must not pass silently."""
    extra = sorted(set(obj) - set(known), key=str)
    if extra:
        raise ConfigError(f"{where}.{name_text(extra[0])}: unknown key (expected one of {', '.join(known)})")


# kind -> ((parameter, checker, default), ...); the first parameter takes a `- kind: value` shorthand.
_PARAMS: dict[str, tuple[tuple[str, Any, Any], ...]] = {
    "interleave": (("cycle_length", lambda v, w: _tunable(v, w, False), AUTOTUNE),
                   ("block_length", _count, 1),
                   ("num_parallel_calls", lambda v, w: _tunable(v, w, True), AUTOTUNE)),
    "shard": (("num_shards", _count, _REQUIRED),
              ("index", lambda v, w: _count(v, w, minimum=0), _REQUIRED)),
    "shuffle": (("buffer_size", _count, _REQUIRED),
                ("seed", lambda v, w: _count(v, w, minimum=0, allow_null=True), None),
                ("reshuffle_each_iteration", _flag, True)),
    "cache": (("location", _text, MEMORY),),
    "batch": (("batch_size", _count, _REQUIRED),
              ("drop_remainder", _flag, False)),
    "decode": (("num_parallel_calls", lambda v, w: _tunable(v, w, True), AUTOTUNE),),
    "repeat": (("epochs", lambda v, w: _count(v, w, allow_null=True), None),),
    "prefetch": (("buffer_size", lambda v, w: _tunable(v, w, False), AUTOTUNE),),
}
STAGE_KINDS = tuple(_PARAMS)
STAGE_PARAMS = {kind: tuple(name for name, _, _ in schema) for kind, schema in _PARAMS.items()}


@dataclass(frozen=True)
class StageSpec:
    """One transformation and its parameters (all of them, defaults filled in)."""

    kind: str
    params: tuple[tuple[str, Scalar], ...]

    def __getitem__(self, name: str) -> Scalar:
        return dict(self.params)[name]

    @classmethod
    def of(cls, kind: str, where: str = "stage", **params: Scalar) -> StageSpec:
        """Give a validated stage; missing parameters take their defaults."""
        _choice(kind, where, STAGE_KINDS)
        schema = _PARAMS[kind]
        reject_unknown_keys(params, [name for name, _, _ in schema], f"{where}.{kind}")
        values = []
        for name, check, default in schema:
            if name not in params:
                if default is _REQUIRED:
                    raise ConfigError(f"{where}.{kind}.{name}: required")
                values.append((name, default))
            else:
                values.append((name, check(params[name], f"{where}.{kind}.{name}")))
        stage = cls(kind, tuple(values))
        if kind == "shard" and stage["index"] >= stage["num_shards"]:
            raise ConfigError(f"{where}.shard.index: must be below num_shards ({stage['num_shards']}), "
                              f"not {stage['index']}")
        return stage

    @classmethod
    def from_obj(cls, obj: Any, where: str) -> StageSpec:
        """Parse `kind`, `{kind: value}` or `{kind: {param: value}}`."""
        if isinstance(obj, str):
            return cls.of(obj, where)
        obj = expect_mapping(obj, where)
        if len(obj) != 1:
            raise ConfigError(f"{where}: a stage is one `kind: parameters` entry, not {len(obj)} keys")
        ((kind, params),) = obj.items()
        _choice(kind, where, STAGE_KINDS)
        if params is None:
            params = {}
        elif not isinstance(params, Mapping):
            params = {_PARAMS[kind][0][0]: params}
        return cls.of(kind, where, **{str(k): v for k, v in params.items()})

    def to_obj(self) -> dict:
        return {self.kind: dict(self.params)}

    def replace(self, **params: Scalar) -> StageSpec:
        """Give this stage with some parameters changed."""
        return StageSpec.of(self.kind, **{**dict(self.params), **params})


# Options known to tf.data, by group; unknown names inside a group are accepted and probed by the
# builder (newer TensorFlow adds flags), but must still be booleans or integers.
_OPTION_GROUPS = {
    "autotune": {"enabled": _flag, "cpu_budget": lambda v, w: _count(v, w, minimum=0),
                 "ram_budget": lambda v, w: _count(v, w, minimum=0)},
    "threading": {"private_threadpool_size": lambda v, w: _count(v, w, minimum=0),
                  "max_intra_op_parallelism": _count},
    "experimental_optimization": {},
}


@dataclass(frozen=True)
class Options:
    """tf.data.Options to set, as (attribute path, value) pairs such as ("autotune.ram_budget", 2**30)."""

    settings: tuple[tuple[str, bool | int], ...] = ()

    @classmethod
    def from_dict(cls, obj: Any, where: str = "options") -> Options:
        if obj is None:
            return cls()
        obj = expect_mapping(obj, where)
        reject_unknown_keys(obj, ("deterministic", *_OPTION_GROUPS), where)
        settings: dict[str, bool | int] = {}
        if obj.get("deterministic") is not None:
            settings["deterministic"] = _flag(obj["deterministic"], f"{where}.deterministic")
        for group, known in _OPTION_GROUPS.items():
            for name, value in expect_mapping(obj.get(group) or {}, f"{where}.{group}").items():
                path = f"{where}.{group}.{name_text(name)}"
                if not isinstance(name, str) or not name.isidentifier():
                    raise ConfigError(f"{path}: not an option name")
                if value is None:
                    continue
                if name in known:
                    value = known[name](value, path)
                elif group == "experimental_optimization":
                    value = _flag(value, path)
                elif not (isinstance(value, bool) or _integer(value)):
                    raise ConfigError(f"{path}: must be true, false or a 64-bit integer, not {echo(value)}")
                settings[f"{group}.{name}"] = value
        return cls(tuple(sorted(settings.items())))

    def to_dict(self) -> dict:
        out: dict[str, Any] = {}
        for path, value in self.settings:
            group, _, name = path.rpartition(".")
            if group:
                out.setdefault(group, {})[name] = value
            else:
                out[name] = value
        return out


@dataclass(frozen=True)
class Source:
    """Where records come from and how they are framed."""

    format: str
    mode: str = "file"
    files: tuple[str, ...] = ()
    compression: str = "none"
    num_parallel_reads: Tunable = None
    buffer_size: int | None = None
    field_size: int = 39
    rows_per_record: int = 256
    channel: str = "train"

    @classmethod
    def from_dict(cls, obj: Any, where: str = "source") -> Source:
        obj = expect_mapping(obj, where)
        reject_unknown_keys(obj, [f.name for f in dataclasses.fields(cls)], where)
        if "format" not in obj:
            raise ConfigError(f"{where}.format: required (one of {', '.join(FORMATS)})")
        return cls(**{name: check_source_field(name, obj[name], f"{where}.{name}")
                      for name in _SOURCE_FIELDS if name in obj})

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["files"] = list(self.files)
        return out


def _files(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{where}: must be a list of paths or globs, not {type(value).__name__}")
    return tuple(_text(f, f"{where}[{i}]") for i, f in enumerate(value))


# Source field -> checker giving the value to store.
_SOURCE_FIELDS: dict[str, Any] = {
    "format": lambda v, w: _choice(v, w, FORMATS),
    "mode": lambda v, w: _choice(v, w, SOURCE_MODES),
    "files": _files,
    "compression": lambda v, w: _choice(v, w, COMPRESSIONS),
    "num_parallel_reads": lambda v, w: _tunable(v, w, True),
    "buffer_size": lambda v, w: _count(v, w, allow_null=True),
    "field_size": _count,
    "rows_per_record": _count,
    "channel": _text,
}


def check_source_field(name: str, value: Any, where: str) -> Any:
    """Give `value` checked as the source field `name`; ConfigError naming `where` if it cannot be one."""
    return _SOURCE_FIELDS[name](value, where)


def check_stage_param(kind: str, param: str, value: Any, where: str) -> Scalar:
    """Give `value` checked as parameter `param` (one of STAGE_PARAMS[kind]); ConfigError naming `where` if it cannot be."""
    return next(check for name, check, _ in _PARAMS[kind] if name == param)(value, where)


def order_problem(kinds: tuple[str, ...]) -> str | None:
    """Give why this order of stage kinds cannot be built, or None if it can.

    The rules every ordering obeys (the enumerator's hard constraints): each kind at most once;
    `batch` and `decode` present (the output is decoded batches); `interleave`, which opens the
    files, comes first, or second after a `shard`, which then splits the file list.
    """
    for kind in kinds:
        if kinds.count(kind) > 1:
            return f"stage {kind} appears {kinds.count(kind)} times"
    for needed in ("batch", "decode"):
        if needed not in kinds:
            return f"no {needed} stage: the pipeline must yield decoded batches"
    if "interleave" in kinds and kinds.index("interleave") > 0 and kinds[:kinds.index("interleave")] != ("shard",):
        return "interleave opens the files, so only a shard (of the file list) may precede it"
    return None


@dataclass(frozen=True)
class PipelineSpec:
    """A whole input pipeline: what `build` turns into a tf.data.Dataset."""

    source: Source
    stages: tuple[StageSpec, ...]
    options: Options = field(default_factory=Options)

    def __post_init__(self) -> None:
        problem = _spec_problem(self.source, self.kinds)
        if problem:
            raise ConfigError(f"pipeline.{problem}")

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(stage.kind for stage in self.stages)

    @property
    def ordering(self) -> str:
        """Give the stage order as text, e.g. 'cache > shuffle > batch > decode > repeat > prefetch'."""
        return " > ".join(self.kinds)

    def stage(self, kind: str) -> StageSpec | None:
        return next((s for s in self.stages if s.kind == kind), None)

    def reordered(self, kinds: Iterable[str]) -> PipelineSpec:
        """Give the same stages in another order."""
        by_kind = {s.kind: s for s in self.stages}
        return dataclasses.replace(self, stages=tuple(by_kind[k] for k in kinds))

    def with_stage(self, stage: StageSpec) -> PipelineSpec:
        """Give this spec with the stage of the same kind replaced."""
        return dataclasses.replace(self, stages=tuple(stage if s.kind == stage.kind else s for s in self.stages))

    def without_stage(self, kind: str) -> PipelineSpec:
        """Give this spec with the stage of that kind removed (unchanged if it has none)."""
        return dataclasses.replace(self, stages=tuple(s for s in self.stages if s.kind != kind))

    def with_source(self, **changes: Any) -> PipelineSpec:
        """Give this spec with source fields changed (files, format, compression, ...)."""
        return dataclasses.replace(self, source=Source.from_dict({**self.source.to_dict(), **changes}))

    def with_option(self, path: str, value: bool | int) -> PipelineSpec:
        """Give this spec with one tf.data option set, e.g. ("deterministic", True)."""
        settings = dict(self.options.settings)
        settings[path] = value
        options = Options.from_dict(Options(tuple(settings.items())).to_dict())  # validated and sorted
        return dataclasses.replace(self, options=options)

    @classmethod
    def from_dict(cls, obj: Any, where: str = "pipeline") -> PipelineSpec:
        obj = expect_mapping(obj, where)
        reject_unknown_keys(obj, ("source", "stages", "options"), where)
        for key in ("source", "stages"):
            if key not in obj:
                raise ConfigError(f"{where}.{key}: required")
        if not isinstance(obj["stages"], (list, tuple)):
            raise ConfigError(f"{where}.stages: must be a list of stages, not {type(obj['stages']).__name__}")
        source = Source.from_dict(obj["source"], f"{where}.source")
        stages = tuple(StageSpec.from_obj(s, f"{where}.stages[{i}]") for i, s in enumerate(obj["stages"]))
        problem = _spec_problem(source, tuple(s.kind for s in stages))
        if problem:
            raise ConfigError(f"{where}.{problem}")
        return cls(source, stages, Options.from_dict(obj.get("options"), f"{where}.options"))

    def to_dict(self) -> dict:
        return {"source": self.source.to_dict(), "stages": [s.to_obj() for s in self.stages],
                "options": self.options.to_dict()}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    @classmethod
    def from_text(cls, text: str, where: str = "pipeline") -> PipelineSpec:
        """Parse YAML or JSON (JSON is YAML) text of the dictionary form."""
        return cls.from_dict(parse_yaml(text, where), where)

    def fingerprint(self) -> str:
        """Give the sha256 of the canonical JSON form: equal specs, equal fingerprints, in any process."""
        return fingerprint(self.to_dict(), 64, compact=True)


def _spec_problem(source: Source, kinds: tuple[str, ...]) -> str | None:
    """Give 'key: why' for a source and stage order that cannot work together, or None."""
    problem = order_problem(kinds)
    if problem:
        return f"stages: {problem}"
    if source.mode == "pipe":
        if "interleave" in kinds:
            return "stages: Pipe mode streams one FIFO per channel; it has no files to interleave"
        for name, default in (("compression", "none"), ("num_parallel_reads", None), ("buffer_size", None)):
            if getattr(source, name) != default:
                return f"source.{name}: not available in Pipe mode (PipeModeDataset has no such setting)"
    if "interleave" in kinds and source.num_parallel_reads is not None:
        return ("source.num_parallel_reads: interleave reads the files in parallel; "
                "set interleave.num_parallel_calls instead")
    return None

