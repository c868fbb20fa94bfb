"""Experiment files: YAML → validated, frozen `Experiment`; errors name the YAML path.

The schema below is the whole format (experiments/deepfm.yaml is its documented example). Every
key is optional except `name`; unknown keys and wrong types are errors, because a misspelt knob
that silently keeps its default produces a benchmark of the wrong thing. For the same reason a key
given twice is an error (pipebench.yamlfile reads the file), every number must be finite and in
its key's stated range (pipebench.values), and `--set` values pass the very same checks.
"""
from __future__ import annotations

import copy
import functools
import glob
import json
import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pipebench.errors import ConfigError
from pipebench.model import OPTIMIZERS
from pipebench.pipeline.orderings import Enumeration
from pipebench.pipeline.function import check_entry, data_formats, resolve_entry
from pipebench.pipeline.presets import NATIVE_FORMAT, PRESETS
from pipebench.measure.figures import TRAINERS
from pipebench.measure.trial import ENV_KNOBS, TRIAL_MODES
from pipebench.pipeline.spec import SOURCE_MODES, STAGE_KINDS
from pipebench.search.budget import exploration_problem, race_problem
from pipebench.sources import service
from pipebench.values import (ABOVE_0, ANY, AT_LEAST_0, AT_LEAST_1, PLAIN_NAME, PLAIN_NAME_RULE, PROBABILITY, Range,
                              check_number, echo, name_text, refuse_non_finite)
from pipebench.yamlfile import RefusedYAMLError, load_yaml, read_yaml

#: What the Optuna driver can optimise: examples/sec up, peak RSS down, held-out AUC up, and the
#: instance's price per million examples down (from the checklist's catalog).
OBJECTIVES = ("examples_per_sec", "rss_peak_bytes", "auc", "cost_per_million_examples")


class _Any:
    """A block checked by its own module (e.g. pipelines.orderings by pipeline.orderings), then kept as given."""


@dataclass(frozen=True)
class Field:
    """One key of the schema: its type, default, allowed values or range, and any further check.

    `check(value, where)` gives the value once it passes (a folder name, a block another module
    parses); `url` marks a value that may be a URL with a password, which is never written out.
    """

    kind: Any  # int, float, str, bool, list[...] as ("list", kind), or _Any
    default: Any = None
    choices: tuple | None = None
    nullable: bool = True
    allowed: Range = ANY  # numbers only
    check: Callable[[Any, str], Any] | None = None
    url: bool = False


def _list(kind: Any, default: Any = None, choices: tuple | None = None, allowed: Range = ANY) -> Field:
    return Field(("list", kind), default, choices, True, allowed)


def _folder_name(value: str, where: str) -> str:
    """Give `value` if it can name a folder under results/ (no path, no hidden or dot folder); ConfigError otherwise."""
    if PLAIN_NAME.fullmatch(value):
        return value
    raise ConfigError(f"{where}: must be a plain folder name ({PLAIN_NAME_RULE}), not {echo(value)}")


def _orderings(block: Any, where: str) -> Any:
    """Give the `pipelines.orderings` block as given, once it parses as an Enumeration."""
    Enumeration.from_dict(block, where)
    return block


def _functions(block: Any, where: str) -> list[dict]:
    """Give the `pipelines.functions` entries, each checked as far as it can be without reading its file."""
    if not isinstance(block, list):
        raise ConfigError(f"{where}: must be a list of {{function: PATH.py:FUNCTION, kwargs: {{...}}, name: ...}}, "
                          f"not {type(block).__name__}")
    return [check_entry(entry, f"{where}[{i}]") for i, entry in enumerate(block)]


def _space(block: Any, where: str) -> Any:
    """Give the `search.space` block as given, once it parses as a search space."""
    from pipebench.search.space import parse_space  # space.py is the search space's one parser

    parse_space(block, where)
    return block


#: A configuration id: the first 12 hex digits of a hash of everything its trials share (pipebench.search.grid).
CONFIGURATION_ID = re.compile(r"[0-9a-f]{12}")
SEED = Range(0, 2**32 - 1)  # numpy's RandomState (Optuna's samplers) takes no more

SCHEMA: dict[str, Any] = {
    "name": Field(str, None, nullable=False, check=_folder_name),  # the run folder is results/<name>/<run-id>
    "quick": _list(str, []),  # --set assignments that `pipebench run --quick` applies
    "data": {
        "synth": {
            "rows": Field(int, 200_000, allowed=AT_LEAST_1),
            "files": Field(int, 4, allowed=AT_LEAST_1),
            "seed": Field(int, 0, allowed=AT_LEAST_0),  # numpy's SeedSequence takes no negative seed
            "field_size": Field(int, 39, allowed=Range(2)),
            "feature_size": Field(int, 117581, allowed=Range(1, 2**31)),  # packed stores ids as int32
            "positive_rate": Field(float, 0.25, allowed=Range(0, 1, low_open=True, high_open=True)),
        },
        # existing data instead of synth: globs per format, or a plain list (each file's format told from its
        # bytes); formats the pipelines read that are not given are converted from a given one (data_files.py)
        "files": {
            "libsvm": _list(str),
            "tfrecord": _list(str),
            "packed": _list(str),
        },
        "holdout_files": _list(str),  # held-out rows of data.files for the quality guard (TFRecord or libsvm)
        "formats": _list(str, ["libsvm", "tfrecord", "packed"], choices=("libsvm", "tfrecord", "packed")),
        "holdout_rows": Field(int, 20_000, allowed=AT_LEAST_0),
        "rows_per_record": Field(int, 256, allowed=AT_LEAST_1),
        "cache_dir": Field(str, "results/.data"),
    },
    "model": {
        "embedding_size": Field(int, 32, allowed=AT_LEAST_1),
        "deep_layers": _list(int, [256, 128, 64], allowed=AT_LEAST_1),
        "dropout": Field(float, 0.5, allowed=Range(0, 1, high_open=True)),  # a rate of 1 drops every unit
        "l2": Field(float, 1e-4, allowed=AT_LEAST_0),
        "optimizer": Field(str, "adam", choices=OPTIMIZERS),
        "learning_rate": Field(float, 0.0005, allowed=ABOVE_0),
    },
    "pipelines": {
        "presets": _list(str, ["lambdaji-libsvm", "aws-sample"]),
        # your own tf.data functions, measured beside the presets: [{function: PATH.py:FUNCTION, kwargs: {...},
        # name: ...}] (pipebench/pipeline/function.py; PATH relative to the experiment file; a kwargs value
        # ${data.tfrecord} is the run's TFRecord files); config.yaml records each file's sha256
        "functions": Field(_Any, [], check=_functions),
        "formats": _list(str, None, choices=("libsvm", "tfrecord", "packed")),
        # an Enumeration block: source, stages, options, enumerate
        "orderings": Field(_Any, check=_orderings),
        # every pipeline is measured reading its data each way (pipebench/sources); pipe drops interleave
        "source_modes": _list(str, ["file"], choices=SOURCE_MODES),
        # what the run's closing sentence measures the fastest configuration's gain against: a pipeline of this
        # experiment (a name in presets or functions, or `enumerated` for the orderings' reference) or a
        # configuration id (trials.parquet's configuration_id); null: the first function (your own pipeline), else
        # the first preset. `run --baseline NAME` sets it
        "baseline": Field(str, None),
    },
    "grid": {
        "batch_size": _list(int, [1024], allowed=AT_LEAST_1),
        "intra_op_threads": _list(int, [None], allowed=AT_LEAST_0),
        "inter_op_threads": _list(int, [None], allowed=AT_LEAST_0),
        "env": {knob: _list(str, [None]) for knob in ENV_KNOBS},
    },
    "modes": _list(str, list(TRIAL_MODES), choices=TRIAL_MODES),
    "search": {
        "driver": Field(str, "grid", choices=("grid", "optuna")),
        "n_trials": Field(int, 30, allowed=AT_LEAST_1),  # trials in the study: the exploration and confirmation phase
        "mode": Field(str, "input", choices=TRIAL_MODES),
        "seed": Field(int, None, allowed=SEED),
        "sampler": Field(str, "tpe", choices=("tpe", "random")),
        # margin: stop a trial below prune_margin × the median of earlier trials at a window (search/pruning.py);
        # median: Optuna's MedianPruner (stops everything below the median: under noise, near-best trials too)
        "pruner": Field(str, "margin", choices=("none", "margin", "median", "hyperband")),
        "prune_margin": Field(float, 0.5, allowed=Range(0, 1, low_open=True, high_open=True)),
        # Optuna storage URL or journal file; default: study.journal in the run. A URL's password is
        # never written (config.yaml keeps postgresql://user@host/db): on resume libpq reads it from
        # PGPASSWORD or ~/.pgpass.
        "storage": Field(str, None, url=True),
        "study_name": Field(str, None),  # default: the experiment's name
        "objectives": _list(str, ["examples_per_sec"], choices=OBJECTIVES),
        # knob → list of choices or {low, high, log}
        "space": Field(_Any, check=_space),
        "pin_inert": Field(bool, True),  # pin knobs this machine cannot honour (KMP_* without OpenMP, ...)
        # the references (the deck's settings, TF defaults, AUTOTUNE everywhere): the first trials start from
        # them, and the confirmation phase races them against the best candidates
        "enqueue_reference": Field(bool, True),
        # after exploring, the `confirm_top` best configurations (by mean) and the references are measured again
        # in `confirm_rounds` interleaved rounds, out of n_trials, to pick the winner by a paired test (0: no phase)
        "confirm_top": Field(int, 2, allowed=Range(0, 10)),
        "confirm_rounds": Field(int, 3, allowed=Range(2, 100)),
        "catalog": Field(str, None),  # instance catalog for the cost objective; default: the shipped one
        "heartbeat_sec": Field(float, 30.0, allowed=Range(0.5)),  # a trial silent for 4 heartbeats is run again
    },
    "measurement": {
        "warmup_max_sec": Field(float, 10.0, allowed=AT_LEAST_0),
        "window_sec": Field(float, 1.0, allowed=Range(0.05)),
        "windows": Field(int, 5, allowed=AT_LEAST_1),  # rounds each trial measures at least
        # train trials go on measuring rounds while the waiting share's interval straddles a threshold
        "max_windows": Field(int, 15, allowed=AT_LEAST_1),
        # fresh processes per configuration, one per round of the run: three give every two configurations a
        # paired ratio with an interval (t with 2 degrees of freedom); one gives none, and nothing compared
        "repeats": Field(int, 3, allowed=AT_LEAST_1),
        "steady_cv_pct": Field(float, 5.0, allowed=AT_LEAST_0),
        "sample_hz": Field(float, 4.0, allowed=Range(0.5, 100)),  # the sampler reads /proc this often
        "cold_cache": Field(bool, False),  # train trials also time a pass after evicting the page cache
        "page_cache": Field(bool, False),  # the sampler also reads page-cache residency of the data files
        # other processes' CPU during a trial's windows (100 = one vCPU) past which it is flagged busy
        "busy_other_cpu_pct": Field(float, 25.0, allowed=Range(0, 10_000)),
        "remeasure_busy": Field(bool, True),  # measure a trial flagged busy once more at the end of the run
        # where the model the input-bound verdict speaks for trains: cpu (on the pipeline's own CPUs: the verdict
        # reads the slowdown), accelerator (fed by the host: it reads the waiting share), or auto (where the
        # train step ran here); `run --trainer` / `worker --trainer` set it
        "trainer": Field(str, "auto", choices=TRAINERS, nullable=False),
    },
    "quality": {
        "enabled": Field(bool, False),
        "train_examples": Field(int, 100_000, allowed=AT_LEAST_1),
        "eval_examples": Field(int, 20_000, allowed=AT_LEAST_1),
    },
    "budget": {
        "max_trials": Field(int, None, allowed=AT_LEAST_1),
        "max_minutes": Field(float, None, allowed=ABOVE_0),
        "max_failure_rate": Field(float, 0.5, allowed=PROBABILITY),
        "trial_timeout_sec": Field(float, 300.0, allowed=AT_LEAST_1),
        "memory_cap_mb": Field(int, 8192, allowed=Range(64)),
    },
    "sources": {  # how each source mode reads; see pipebench/sources and README "Source modes"
        "file": {"cold": Field(bool, False, nullable=False)},  # evict each file from the page cache as it opens
        "fastfile": {  # emulate: false reads the files as they are (on SageMaker, /opt/ml/input/data/<channel>)
            "emulate": Field(bool, True, nullable=False),
            "first_read_latency_ms": Field(float, 20.0, nullable=False, allowed=AT_LEAST_0),
            "bandwidth_mb_per_sec": Field(float, 200.0, allowed=Range(0.001)),  # MB = 10^6 bytes; null: no cap
        },
        "pipe": {  # emulate: false reads SageMaker's own FIFOs; the dirs default to PipeModeDataset's
            "emulate": Field(bool, True, nullable=False),
            # op: SageMaker's PipeModeDataset (TF 2.14 env only); python: pipebench's labelled pure-Python fallback
            "reader": Field(str, "op", choices=("op", "python"), nullable=False),
            "pipe_dir": Field(str, None),
            "config_dir": Field(str, None),
            "state_dir": Field(str, None),
            "shuffle_seed": Field(int, None, allowed=AT_LEAST_0),  # emulated ShuffleConfig: new file order each epoch
            "bandwidth_mb_per_sec": Field(float, None, allowed=Range(0.001)),  # emulated channel cap; null: none
        },
        "service": {  # the pipeline before split_before runs on tf.data service workers (pipebench/sources/service.py)
            "workers": Field(int, 1, nullable=False, allowed=Range(1, 64)),
            "sharding_policy": Field(str, "DYNAMIC", choices=service.SHARDING_POLICIES, nullable=False),
            "split_before": Field(str, "prefetch", choices=STAGE_KINDS, nullable=False),
            "read": Field(str, "file", choices=service.READS, nullable=False),  # how workers read; that mode's keys apply
            "compression": Field(str, "AUTO", choices=service.COMPRESSIONS, nullable=False),
            "max_outstanding_requests": Field(int, None, allowed=AT_LEAST_1),  # null: TF's default
            "worker_cpus": _list(int, None, allowed=AT_LEAST_0),  # worker i on CPU worker_cpus[i % len]; null: unpinned
            "fixed_worker_list": Field(bool, True, nullable=False),  # the dispatcher knows the workers (static sharding)
            "dispatcher": Field(str, None),  # HOST:PORT of a running service: no servers started; null: the trial's own
        },
    },
    "results": Field(str, "results"),
}


class _Invalid(ConfigError):
    """A schema failure: `path` is the YAML path it failed at (to tell a file's fault from a `--set`'s)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


def _check(value: Any, field: Field, where: str) -> Any:
    """Give `value` checked against `field` (an int widened to float, a number to str where asked); ConfigError."""
    if value is None:
        if field.nullable:
            return None
        raise ConfigError(f"{where}: required")
    kind = field.kind
    if kind is _Any:
        return field.check(copy.deepcopy(value), where)
    if isinstance(kind, tuple):
        if not isinstance(value, list):
            value = [value]  # a scalar is a one-value list: `batch_size: 1024`
        item = Field(kind[1], None, field.choices, True, field.allowed)
        return [_check(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    if kind in (int, float):
        return check_number(value, where, kind, field.allowed)
    if kind is str and isinstance(value, (int, float)) and not isinstance(value, bool):
        refuse_non_finite(value, where)
        value = str(value)  # env values such as OMP_NUM_THREADS: 2
    if not isinstance(value, kind):
        raise ConfigError(f"{where}: must be {kind.__name__}, not {type(value).__name__} {echo(value)}")
    if field.choices is not None and value not in field.choices:
        raise ConfigError(f"{where}: must be one of {', '.join(field.choices)}, not {echo(value)}")
    return field.check(value, where) if field.check else value


def _resolve(obj: Any, schema: dict, where: str) -> dict:
    if obj is None:
        obj = {}
    if not isinstance(obj, Mapping):
        raise _Invalid(where, f"{where or 'experiment'}: must be a mapping, not {type(obj).__name__}")
    unknown = sorted(set(map(str, obj)) - set(schema))
    if unknown:
        path = f"{where}.{name_text(unknown[0])}" if where else name_text(unknown[0])
        raise _Invalid(path, f"{path}: unknown key (expected one of {', '.join(schema)})")
    out = {}
    for key, sub in schema.items():
        path = f"{where}.{key}" if where else key
        if isinstance(sub, dict):
            out[key] = _resolve(obj.get(key), sub, path)
            continue
        try:
            out[key] = _check(obj[key] if key in obj else copy.deepcopy(sub.default), sub, path)
        except ConfigError as err:  # a nested block's message starts with the deeper path it failed at
            message = str(err)
            raise _Invalid(message.partition(": ")[0] if message.startswith(path) else path, message) from None
    return out


def resolve_block(name: str, obj: Any) -> dict:
    """Give the validated top-level block `name` of `obj` with defaults filled in (e.g. a trial's `sources`)."""
    return _resolve(obj, SCHEMA[name], name)


def _apply_override(raw: dict, assignment: str, label: str) -> str:
    """Apply `a.b.c=value` (value parsed as YAML, else kept as text) to the raw document; give the key."""
    key, sep, text = assignment.partition("=")
    if not sep or not key:
        raise ConfigError(f"{label} {echo(assignment)}: expected KEY=VALUE, e.g. grid.batch_size=[512,1024]")
    parts = key.split(".")
    if not all(parts):
        raise ConfigError(f"{label} {echo(key)}: an empty name in the key")
    try:
        value = load_yaml(text)
    except RefusedYAMLError as err:
        raise ConfigError(f"{label} {name_text(key)}: {err.problem}") from None
    except yaml.YAMLError:
        value = text
    node = raw
    for depth, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise ConfigError(f"{label} {name_text(key)}: {name_text('.'.join(parts[:depth + 1]))} is a "
                              f"{type(child).__name__}, not a mapping")
        node = child
    node[parts[-1]] = value
    return key


def _blame(err: _Invalid, where: str, applied: list[tuple[str, str]]) -> str:
    """Give the error message naming what gave the bad value: the last override touching its path, else the file."""
    path = re.sub(r"\[\d+\]", "", err.path)
    message = str(err)
    for label, key in reversed(applied):
        if path == key or path.startswith(f"{key}.") or key.startswith(f"{path}."):
            reason = message[len(key) + 2:] if message.startswith(f"{key}: ") else message
            return f"{label} {name_text(key)}: {reason}"
    return f"{where}: {message}" if where else message


def _plain_file_list(raw: dict) -> None:
    """Turn a plain `data.files` list (or one glob) into the format mapping, each file's format told from its bytes.

    Any other non-mapping value is refused naming both shapes `data.files` takes.
    """
    data = raw.get("data")
    files = data.get("files") if isinstance(data, dict) else None
    if files is None or isinstance(files, Mapping):
        return
    if isinstance(files, str):
        files = [files]
    shapes = f"a list of files or globs, or a mapping of format to them (keys {', '.join(SCHEMA['data']['files'])})"
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise _Invalid("data.files", f"data.files: must be {shapes}, not {type(files).__name__} {echo(files)}")
    if not files:
        raise _Invalid("data.files", f"data.files: an empty list; give {shapes}, or drop the key for synthetic data")
    from pipebench.data_files import by_format

    try:
        grouped = by_format(files, "data.files")
    except ConfigError as err:
        raise _Invalid("data.files", str(err)) from None
    data["files"] = {fmt: [glob.escape(name) for name in names] for fmt, names in grouped.items()}  # names, not globs


def baseline_problem(pipelines: Mapping) -> str | None:
    """Give why `pipelines.baseline` names nothing this experiment measures (None when it does, or is unset)."""
    baseline = pipelines["baseline"]
    names = [*pipelines["presets"], *(f["name"] for f in pipelines["functions"] or ()),
             *(["enumerated"] if pipelines["orderings"] is not None else [])]
    if baseline is None or baseline in names or CONFIGURATION_ID.fullmatch(baseline):
        return None
    return (f"{echo(baseline)} names no pipeline of this experiment ({', '.join(names) or 'none'}) and is not a "
            "configuration id (12 hex digits: trials.parquet's configuration_id)")


def _whole(resolved: dict) -> None:
    """Raise _Invalid for what no single key can say (lists that must not be empty, keys that need each other)."""
    if not resolved["data"]["formats"]:
        raise _Invalid("data.formats", "data.formats: at least one format")
    data = resolved["data"]
    given = any(data["files"].values())
    if data["holdout_files"] and not given:
        raise _Invalid("data.holdout_files", "data.holdout_files: held-out rows of data.files; synthetic data "
                                             "makes its own (data.holdout_rows)")
    if resolved["quality"]["enabled"]:
        if given and not data["holdout_files"]:
            raise _Invalid("quality.enabled", "quality.enabled: the quality guard needs held-out rows: with "
                                              "data.files, list files of rows not trained on in data.holdout_files")
        if not given and not data["holdout_rows"]:
            raise _Invalid("data.holdout_rows", "data.holdout_rows: 0 leaves quality.enabled without held-out rows; "
                                                "set it above 0 or disable quality")
    functions = resolved["pipelines"]["functions"]
    names = [entry["name"] for entry in functions]
    for i, (name, entry) in enumerate(zip(names, functions)):
        if name in names[:i] or name in (*PRESETS, "enumerated", "synthetic"):
            raise _Invalid(f"pipelines.functions[{i}].name", f"pipelines.functions[{i}].name: {name} names another "
                                                             "pipeline too; give this function its own name")
        missing = [fmt for fmt in data_formats(entry["kwargs"]) if fmt not in data["formats"]]
        if missing and not given:  # synthetic data is made in data.formats only
            raise _Invalid(f"pipelines.functions[{i}].kwargs", f"pipelines.functions[{i}].kwargs: ${{data.{missing[0]}}} "
                                                               f"reads {missing[0]} files, and data.formats makes none")
    problem = baseline_problem(resolved["pipelines"])
    if problem:
        raise _Invalid("pipelines.baseline", f"pipelines.baseline: {problem}")
    if not resolved["pipelines"]["source_modes"]:
        raise _Invalid("pipelines.source_modes", f"pipelines.source_modes: at least one of {', '.join(SOURCE_MODES)}")
    if "service" in resolved["pipelines"]["source_modes"]:
        problem = service.settings_problem(resolved["sources"])
        if problem:
            raise _Invalid(*problem)
    search = resolved["search"]
    if search["driver"] == "optuna":
        problem = exploration_problem(search)
        if problem:
            raise _Invalid("search.n_trials", f"search.n_trials: {problem}")
        problem = race_problem(search)
        if problem:
            raise _Invalid("search.confirm_top", f"search.confirm_top: {problem}")


def redact_url(value: str) -> str:
    """Give a URL without its password (`user:secret@host` → `user@host`, no `password=` parameter)."""
    if "://" not in value:
        return value  # a journal file path
    parts = urllib.parse.urlsplit(value)
    netloc, query = parts.netloc, parts.query
    userinfo, at, host = netloc.rpartition("@")
    if at and ":" in userinfo:
        user = userinfo.partition(":")[0]
        netloc = f"{user}@{host}" if user else host
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
    if any(name.lower() == "password" for name, _ in pairs):
        query = urllib.parse.urlencode([(n, v) for n, v in pairs if n.lower() != "password"])
    if (netloc, query) == (parts.netloc, parts.query):
        return value
    # Built by hand: urlunsplit drops an empty host, turning sqlite:////abs into sqlite://abs.
    return (f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")
            + (f"#{parts.fragment}" if parts.fragment else ""))


def _url_paths(schema: dict, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Give the paths of the schema's URL fields (whose passwords are never written)."""
    found = []
    for key, sub in schema.items():
        if isinstance(sub, dict):
            found += _url_paths(sub, (*prefix, key))
        elif sub.url:
            found.append((*prefix, key))
    return found


_URL_PATHS = _url_paths(SCHEMA)


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

    def public(self) -> dict:
        """Give what may be written or uploaded: the resolved document with passwords dropped from URLs,
        and without the synthetic-data settings a run over `data.files` never uses (cache_dir and
        rows_per_record stay when formats are made from the given files)."""
        doc = copy.deepcopy(self.resolved)
        for *parents, key in _URL_PATHS:
            block = functools.reduce(lambda node, name: node[name], parents, doc)
            if block[key] is not None:
                block[key] = redact_url(block[key])
        data = doc["data"]
        given = [fmt for fmt, globs in data["files"].items() if globs]
        if given:
            made = self.read_formats() - set(given)  # converted from a given format into cache_dir
            unused = ["synth", "holdout_rows"] + ([] if made or data["holdout_files"] else ["cache_dir"])
            for key in unused + ([] if "packed" in {*given, *made} else ["rows_per_record"]):
                del data[key]
            data["formats"] = given
        return doc

    def read_formats(self) -> set[str]:
        """Give the formats the pipelines read: each preset's formats, the orderings' source format, and those the
        functions' ${data.FORMAT} placeholders read."""
        pipelines = self.resolved["pipelines"]
        formats = set(pipelines["formats"] or [NATIVE_FORMAT.get(name, "tfrecord") for name in pipelines["presets"]])
        formats.update(fmt for entry in pipelines["functions"] for fmt in data_formats(entry["kwargs"]))
        if pipelines["orderings"] is not None:
            formats.add((pipelines["orderings"].get("source") or {}).get("format", "tfrecord"))
        return formats

    def to_yaml(self) -> str:
        """Give the YAML that run folders store (and SageMaker jobs read): the resolved document, no passwords."""
        return yaml.safe_dump(self.public(), sort_keys=False)

    def fingerprint(self) -> str:
        """Give a hash of the stored document (what a resumed run must match; a password never counts)."""
        import hashlib

        return hashlib.sha256(json.dumps(self.public(), sort_keys=True).encode()).hexdigest()[:16]


def _resolve_functions(resolved: dict, base: Path | None) -> None:
    """Resolve each `pipelines.functions` entry against its file (pipebench.pipeline.function.resolve_entry)."""
    functions = resolved["pipelines"]["functions"]
    for i, entry in enumerate(functions):
        where = f"pipelines.functions[{i}]"
        try:
            functions[i] = resolve_entry(entry, where, base)
        except ConfigError as err:
            message = str(err)
            raise _Invalid(message.partition(": ")[0] if message.startswith(where) else where, message) from None


def parse_experiment(raw: Any, where: str = "", source: Path | None = None,
                     overrides: tuple[str, ...] = (), quick: bool = False,
                     options: tuple[tuple[str, str], ...] = (), user_code: bool = True) -> Experiment:
    """Validate a raw document (after its `quick:` list when asked, then `--set`, then `options`: a command's
    own flags as (flag, KEY=VALUE)) into an Experiment.

    With `user_code`, each of `pipelines.functions` is resolved against its file (read from the experiment file's
    folder), whose sha256 the Experiment then holds; without (reading a run folder's config.yaml for its results),
    no user file is read. An error names what gave the bad value: `--set KEY`, `--flag KEY`, `FILE: quick[i]: KEY`,
    or `FILE: yaml.path`.
    """
    raw = copy.deepcopy(raw) if raw is not None else {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where or 'experiment'}: the experiment must be a mapping, not {type(raw).__name__}")
    assignments: list[tuple[str, str]] = []
    if quick:
        quick_list = raw.get("quick")
        if not quick_list:
            raise ConfigError(f"{where or 'experiment'}: --quick: the experiment has no `quick:` list of KEY=VALUE "
                              "overrides, so it would run in full; drop --quick or add one")
        if not isinstance(quick_list, list):
            raise ConfigError(f"{where}: quick: must be a list of KEY=VALUE overrides")
        for i, item in enumerate(quick_list):
            if not isinstance(item, str):
                raise ConfigError(f"{where}: quick[{i}]: must be a KEY=VALUE string, not {echo(item)}")
            assignments.append((f"{where}: quick[{i}]:", item))
    assignments += [("--set", text) for text in overrides] + list(options)
    applied = [(label, _apply_override(raw, text, label)) for label, text in assignments]
    try:
        _plain_file_list(raw)
        resolved = _resolve(raw, SCHEMA, "")
        resolved["pipelines"]["functions"] = resolved["pipelines"]["functions"] or []
        _whole(resolved)
        if user_code:
            _resolve_functions(resolved, source.parent if source is not None else None)
    except _Invalid as err:
        raise ConfigError(_blame(err, where, applied)) from None
    return Experiment(resolved, source)


def load_experiment(path: Path, overrides: tuple[str, ...] = (), quick: bool = False,
                    options: tuple[tuple[str, str], ...] = (), user_code: bool = True) -> Experiment:
    """Read and validate an experiment file (`user_code` as parse_experiment's); errors read `FILE:LINE: reason` or
    `FILE: yaml.path: reason`."""
    path = Path(path)
    raw = read_yaml(path)
    if raw is None:
        raise ConfigError(f"{path}: empty: an experiment needs at least `name: ...`")
    return parse_experiment(raw, str(path), path, overrides, quick, options, user_code)
