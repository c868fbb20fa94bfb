"""An experiment: its YAML read, `--set` overrides applied, every block resolved against the schema
(pipebench.config.schema), the checks that span blocks made, and the result frozen as an `Experiment`; errors name
the YAML path.
"""
from __future__ import annotations

import copy
import functools
import glob
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pipebench.config.budget import exploration_problem, race_problem
from pipebench.config.schema import CONFIGURATION_ID, SCHEMA, _Invalid, _resolve
from pipebench.config.service import settings_problem
from pipebench.errors import ConfigError
from pipebench.fingerprint import fingerprint
from pipebench.pipeline.function import data_formats, resolve_entry
from pipebench.pipeline.presets import NATIVE_FORMAT, PRESETS
from pipebench.pipeline.spec import SOURCE_MODES
from pipebench.values import echo, name_text
from pipebench.yamlfile import RefusedYAMLError, load_yaml, read_yaml


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
    for index, name in enumerate(resolved["pipelines"]["presets"]):
        if name not in PRESETS:  # refused here, not after the data is made
            raise _Invalid("pipelines.presets", f"pipelines.presets[{index}]: unknown preset {echo(name)} (known: "
                                                f"{', '.join(PRESETS)})")
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
        problem = settings_problem(resolved["sources"])
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
        return fingerprint(self.public())


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
