"""The Optuna search space: knobs and their ranges, as `search.space` gives them (config checks it at load;
pipebench.search.plan pins the knobs a machine cannot honour).

A knob is `pipeline` (a candidate's label), `batch_size`, `intra_op_threads`, `inter_op_threads`
(0 = TensorFlow's default), `env.<VAR>` for the variables in `config.choices.ENV_KNOBS` (null = unset), or
`stage.<kind>.<param>` (e.g. `stage.prefetch.buffer_size`; `stage.cache.enabled: [true, false]`
switches cache or prefetch off), `source.<field>` (e.g. `source.num_parallel_reads`) or
`option.<group>.<name>` (a tf.data option, e.g. `option.threading.private_threadpool_size`), set on
every candidate that can take it.
A dimension is a list of choices or `{low, high, log}` integers. A list of numbers (batch sizes,
thread counts, parallelism, buffer sizes) is *ordinal*: the sampler sees the index of each value in
ascending order, so TPE learns that 2048 lies beyond 512 (a categorical knob's values are unordered
to it). A list holding anything else (pipelines, env strings, AUTOTUNE, null, flags) is categorical.
No Optuna import here: plan.suggest turns dimensions into `suggest_*` calls.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipebench.config.choices import ENV_KNOBS
from pipebench.errors import ConfigError
from pipebench.pipeline.spec import STAGE_PARAMS, check_source_field, check_stage_param
from pipebench.values import AT_LEAST_0, AT_LEAST_1, Range, check_number, echo, name_text, refuse_non_finite

_FIXED_KNOBS = ("pipeline", "batch_size", "intra_op_threads", "inter_op_threads")
#: Stages a search may switch off: without them the pipeline is slower or faster, never different.
DROPPABLE_STAGES = ("cache", "prefetch")
_SOURCE_KNOBS = ("num_parallel_reads", "buffer_size", "compression")
KMP_AFFINITY_CHOICES = ("disabled", "granularity=fine,compact,1,0", "granularity=fine,scatter,1,0", None)


@dataclass(frozen=True)
class Dimension:
    """One searched knob: categorical `choices`, or integers from `low` to `high` (log-spaced if `log`)."""

    name: str
    choices: tuple | None = None
    low: int | None = None
    high: int | None = None
    log: bool = False

    @property
    def pinned(self) -> bool:
        return self.choices is not None and len(self.choices) == 1

    def contains(self, value: Any) -> bool:
        if self.choices is not None:
            return value in self.choices
        return isinstance(value, int) and self.low <= value <= self.high

    def pin(self, value: Any) -> Dimension:
        return Dimension(self.name, (value,))

    @property
    def ordinal(self) -> bool:
        """Whether the sampler sees this knob's choices as ordered numbers (by index), not as categories."""
        return (self.choices is not None and len(self.choices) > 1
                and all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in self.choices))

    @property
    def ordered(self) -> tuple:
        """Give an ordinal knob's choices in ascending order (the index the sampler suggests)."""
        return tuple(sorted(self.choices))


def _knob_problem(name: str) -> str | None:
    """Give why `name` is not a knob, or None."""
    if name in _FIXED_KNOBS or (name.startswith("env.") and name[4:] in ENV_KNOBS):
        return None
    parts = name.split(".")
    if parts[0] == "stage" and len(parts) == 3:
        kind, param = parts[1], parts[2]
        if kind not in STAGE_PARAMS:
            return f"no stage kind {name_text(kind)} (one of {', '.join(STAGE_PARAMS)})"
        if param == "enabled" and kind not in DROPPABLE_STAGES:
            return f"only {' and '.join(DROPPABLE_STAGES)} can be switched off without changing the examples"
        if param != "enabled" and param not in STAGE_PARAMS[kind]:
            return f"a {kind} stage has no parameter {name_text(param)} (it has {', '.join(STAGE_PARAMS[kind])})"
        return None
    if parts[0] == "source" and len(parts) == 2 and parts[1] in _SOURCE_KNOBS:
        return None
    if parts[0] == "option" and len(parts) in (2, 3):
        return None
    return (f"unknown knob (pipeline, batch_size, intra_op_threads, inter_op_threads, env.<{'|'.join(ENV_KNOBS)}>, "
            f"stage.<kind>.<param>, source.<{'|'.join(_SOURCE_KNOBS)}>, option.<group>.<name>)")


def _check_value(name: str, value: Any, where: str) -> None:
    """Raise ConfigError if `value` is no value knob `name` can take (as the grid or the spec would check it)."""
    refuse_non_finite(value, where)
    parts = name.split(".")
    if name == "pipeline":
        if not isinstance(value, str):
            raise ConfigError(f"{where}: must be a pipeline name or label, not {echo(value)}")
    elif name == "batch_size":
        check_number(value, where, int, AT_LEAST_1)
    elif name in ("intra_op_threads", "inter_op_threads"):
        if value is not None:  # null or 0: TensorFlow's default
            check_number(value, where, int, AT_LEAST_0)
    elif parts[0] == "env":
        if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int, float))):
            raise ConfigError(f"{where}: must be a string, a number or null (unset), not {echo(value)}")
    elif parts[0] == "stage" and parts[2] == "enabled":
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: must be true or false, not {echo(value)}")
    elif parts[0] == "stage":
        check_stage_param(parts[1], parts[2], value, where)
    elif parts[0] == "source":
        check_source_field(parts[1], value, where)
    elif not isinstance(value, bool):  # a tf.data option: a flag or a count
        check_number(value, where, int)


def parse_space(raw: Any, where: str = "search.space") -> dict[str, Dimension]:
    """Give the dimensions of a `search.space` mapping; errors name the YAML path.

    Every choice (and both ends of a range) must be a value its knob can take, so a bad one is
    refused now, not discovered trial by trial.
    """
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: must be a mapping of knob → choices or {{low, high, log}}")
    space = {}
    for name, value in raw.items():
        path = f"{where}.{name_text(name)}"
        problem = _knob_problem(str(name))
        if problem:
            raise ConfigError(f"{path}: {problem}")
        if isinstance(value, list):
            if not value:
                raise ConfigError(f"{path}: at least one choice")
            for i, choice in enumerate(value):
                _check_value(name, choice, f"{path}[{i}]")
            if name.startswith("env."):
                value = [None if v is None else str(v) for v in value]
            space[name] = Dimension(name, tuple(value))
        elif isinstance(value, Mapping) and set(value) <= {"low", "high", "log"} and {"low", "high"} <= set(value):
            low, high, log = value["low"], value["high"], value.get("log", False)
            for end in ("low", "high"):
                check_number(value[end], f"{path}.{end}", int)
                _check_value(name, value[end], f"{path}.{end}")
            if low > high:
                raise ConfigError(f"{path}: low ({low}) must not exceed high ({high})")
            if not isinstance(log, bool):
                raise ConfigError(f"{path}.log: must be true or false, not {echo(log)}")
            if log:
                check_number(low, f"{path}.low", int, Range(1))  # a log scale starts above 0
            space[name] = Dimension(name, None, low, high, log)
        else:
            raise ConfigError(f"{path}: must be a list of choices or {{low: INT, high: INT, log: BOOL}}")
    return space


def thread_choices(vcpus: int) -> tuple[int, ...]:
    """Give 0 (TF's default), powers of two below the vCPU count, and the vCPU count."""
    powers = [1 << i for i in range(vcpus.bit_length()) if 1 << i < vcpus]
    return (0, *powers, vcpus)


def default_space(pipeline_labels: list[str], batch_sizes: list[int], vcpus: int) -> dict[str, Dimension]:
    """Give the space searched when `search.space` is not set: the issue's knobs at common values."""
    threads = thread_choices(vcpus)
    return {
        "pipeline": Dimension("pipeline", tuple(pipeline_labels)),
        "batch_size": Dimension("batch_size", tuple(batch_sizes)),
        "intra_op_threads": Dimension("intra_op_threads", threads),
        "inter_op_threads": Dimension("inter_op_threads", threads),
        "env.OMP_NUM_THREADS": Dimension("env.OMP_NUM_THREADS", (None, *(str(t) for t in threads[1:]))),
        "env.KMP_AFFINITY": Dimension("env.KMP_AFFINITY", KMP_AFFINITY_CHOICES),
        "env.KMP_BLOCKTIME": Dimension("env.KMP_BLOCKTIME", (None, "0", "1", "200")),
        "env.TF_ENABLE_ONEDNN_OPTS": Dimension("env.TF_ENABLE_ONEDNN_OPTS", (None, "0", "1")),
    }
