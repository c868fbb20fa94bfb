"""A user's own tf.data function as a pipeline: `PATH.py:FUNCTION`, read here without TensorFlow.

`pipebench diagnose PATH.py:FUNCTION` and an experiment's `pipelines.functions` name a function this
way. In the process that parses them (no TensorFlow) the file is found and parsed (ast), and the
function's top-level definition is read: whether it exists, which keyword arguments it takes, and
whether it takes a batch size. Importing and calling it happens in a worker
(pipebench.pipeline.user_code).

An experiment's function pipeline (`FunctionPipeline`) is plain data, as a PipelineSpec is: the file,
the function, the keyword arguments it is called with (the run's data files filled in for
placeholders) and the batch size it gets; its fingerprint holds the sha256 of the file's bytes, so
rows measured before an edit of the file are told from those measured after it.

Batch size: the trial's batch size (grid.batch_size, the search's batch_size knob) is passed as
`batch_size=` when the function has a parameter of that name and its kwargs do not fix it. Otherwise
the function batches as it is written, and the trial's batch size does not apply.

Data: a kwargs value that is exactly `${data.FORMAT}` (libsvm, tfrecord, packed) becomes the list of
the run's data files in that format (synthetic, or data.files), at any depth of the kwargs.
"""
from __future__ import annotations

import ast
import hashlib
import keyword
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipebench.errors import ConfigError, UsageError
from pipebench.fingerprint import fingerprint
from pipebench.values import PLAIN_NAME, PLAIN_NAME_RULE, echo, name_text, refuse_non_finite

#: The `ordering` and `semantics` a function pipeline's rows carry: pipebench reorders and changes none of its stages.
FUNCTION_ORDERING = "user function"
#: The parameter the trial's batch size is passed to.
BATCH_PARAMETER = "batch_size"
_DATA_FORMATS = ("libsvm", "tfrecord", "packed")
_PLACEHOLDER = re.compile(r"\$\{data\.(" + "|".join(_DATA_FORMATS) + r")\}")
PLACEHOLDERS = ", ".join(f"${{data.{fmt}}}" for fmt in _DATA_FORMATS)


@dataclass(frozen=True)
class Place:
    """Where something is written in the user's code."""

    file: str
    line: int

    @property
    def text(self) -> str:
        return f"{Path(self.file).name}:{self.line}"


@dataclass(frozen=True)
class FunctionRef:
    """A function in a Python file: `path` (absolute) and the function's name at its module's top level."""

    path: str
    name: str

    @property
    def text(self) -> str:
        return f"{self.path}:{self.name}"


def parse_function_ref(text: str, flag: str = "PATH.py:FUNCTION", base: Path | None = None) -> FunctionRef:
    """Give the FunctionRef `text` names, a relative path read from `base` (default: the working folder);
    UsageError (one line) when it is malformed or the file is missing."""
    path, sep, name = text.rpartition(":")
    if not sep or not path or not name:
        raise UsageError(f"{flag}: {echo(text)} is not PATH.py:FUNCTION (a Python file, a colon, a function name)")
    if not name.isidentifier() or keyword.iskeyword(name):
        raise UsageError(f"{flag}: {echo(name)} is not a Python function name")
    file = Path(base or ".") / path
    shown = path if path.isprintable() and len(path) < 200 else echo(path)
    if file.suffix != ".py":
        raise UsageError(f"{shown}: not a .py file ({flag})")
    if not file.exists():
        raise UsageError(f"{shown}: no such file" + (f" (read from {Path(base).resolve()})" if base is not None
                                                    and not Path(path).is_absolute() else ""))
    if not file.is_file():
        raise UsageError(f"{shown}: not a file")
    return FunctionRef(str(file.resolve()), name)


@dataclass(frozen=True)
class Parameter:
    """One parameter of the user's function as its `def` line writes it."""

    name: str
    keyword: bool  # it can be given by name (not positional-only)
    default: str | None  # its default's source text; None: required


@dataclass(frozen=True)
class Definition:
    """What a file's top level says about a function, read without running it."""

    ref: FunctionRef
    sha256: str  # of the file's bytes
    line: int
    parameters: tuple[Parameter, ...] | None  # None: bound otherwise than by `def` (checked once imported)
    any_keyword: bool  # it takes **kwargs
    arguments: str = "..."  # its argument list as the `def` writes it

    @property
    def where(self) -> str:
        return f"{self.ref.path}:{self.line}"

    @property
    def signature(self) -> str:
        return f"{self.ref.name}({self.arguments})"

    def takes(self, name: str) -> bool:
        """Whether a keyword argument `name` reaches the function by that name."""
        return any(p.name == name and p.keyword for p in self.parameters or ())

    def argument_problem(self, given: Mapping[str, Any]) -> str | None:
        """Give why calling it with the keyword arguments `given` (and the batch size, when it takes one) fails,
        or None; unknown when it is no `def` (None)."""
        if self.parameters is None:
            return None
        names = {p.name: p for p in self.parameters}
        for name in given:
            if name in names and not names[name].keyword:
                return f"{self.signature}: {name} is positional-only; pipebench passes keyword arguments"
            if name not in names and not self.any_keyword:
                return f"{self.signature} takes no argument {name}"
        missing = [p.name for p in self.parameters if p.default is None and p.name not in given
                   and p.name != BATCH_PARAMETER]
        if missing:
            return f"{self.signature} needs {', '.join(missing)}: give {'it' if len(missing) == 1 else 'them'} in kwargs"
        return None

    def batch_size(self, given: Mapping[str, Any]) -> tuple[bool, int | None]:
        """Give (whether the trial's batch size is passed to it, the batch size it is called with when fixed:
        `given`'s batch_size, else its default when that is a whole number; None otherwise)."""
        if self.takes(BATCH_PARAMETER) and BATCH_PARAMETER not in given:
            return True, None
        value = given.get(BATCH_PARAMETER)
        if value is None and self.takes(BATCH_PARAMETER):
            default = next(p.default for p in self.parameters if p.name == BATCH_PARAMETER)
            try:
                value = ast.literal_eval(default) if default is not None else None
            except (ValueError, SyntaxError):
                value = None
        return False, value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[tuple[Parameter, ...], bool]:
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    found = [Parameter(a.arg, i >= len(args.posonlyargs),
                       None if d is None else ast.unparse(d)) for i, (a, d) in enumerate(zip(positional, defaults))]
    found += [Parameter(a.arg, True, None if d is None else ast.unparse(d))
              for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    return tuple(found), args.kwarg is not None


def read_definition(ref: FunctionRef) -> Definition:
    """Give what the file's top level says about the function; UsageError (naming the file and line) when the
    file does not parse or binds no such name at its top level."""
    try:
        data = Path(ref.path).read_bytes()
    except OSError as err:
        raise UsageError(f"{ref.path}: cannot read: {err.strerror}") from None
    try:
        tree = ast.parse(data, filename=ref.path)
    except SyntaxError as err:
        raise UsageError(f"{ref.path}:{err.lineno or 0}: SyntaxError: {err.msg}") from None
    except ValueError as err:  # source with NUL bytes
        raise UsageError(f"{ref.path}: not Python source ({err})") from None
    sha256 = hashlib.sha256(data).hexdigest()
    found = None
    for node, plain in _top_level(tree.body):  # the last binding wins, as when the module runs
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == ref.name and plain \
                and not node.decorator_list:
            found = Definition(ref, sha256, node.lineno, *_parameters(node), ast.unparse(node.args))
        elif ref.name in _bound_names(node):  # decorated, conditional or not a def: read once imported
            found = Definition(ref, sha256, node.lineno, None, True)
    if found is None:
        defined = [n.name for n, _ in _top_level(tree.body) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        shown = ", ".join(defined[:8]) + (", …" if len(defined) > 8 else "")
        raise UsageError(f"{ref.path}: no top-level function {ref.name} (its functions: {shown or 'none'})")
    return found


def _top_level(body: list[ast.stmt], plain: bool = True):
    """Yield the statements a module's top level runs, with whether they run unconditionally (not inside an `if`,
    `try` or `with`)."""
    for node in body:
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            for part in ("body", "orelse", "finalbody"):
                yield from _top_level(getattr(node, part, []), False)
            for handler in getattr(node, "handlers", []):
                yield from _top_level(handler.body, False)
        else:
            yield node, plain


def _bound_names(node: ast.stmt) -> set[str]:
    """Give the names a top-level statement binds (defs, assignments, imports, classes)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).partition(".")[0] for alias in node.names}
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
        node, (ast.AnnAssign, ast.AugAssign)) else []
    return {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}


def check_kwargs(kwargs: Any, where: str) -> dict[str, Any]:
    """Give `kwargs` if it is a mapping of Python argument names to plain YAML values whose placeholders are known;
    ConfigError naming the YAML path otherwise."""
    if kwargs is None:
        return {}
    if not isinstance(kwargs, Mapping):
        raise ConfigError(f"{where}: must be a mapping of argument name to value, not {type(kwargs).__name__}")
    for name, value in kwargs.items():
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise ConfigError(f"{where}.{name_text(name)}: not a Python argument name")
        _check_value(value, f"{where}.{name}")
    return dict(kwargs)


def _check_value(value: Any, where: str) -> None:
    """Raise ConfigError unless `value` is plain data (what a trial file and an exported module hold as it is) whose
    `${...}` strings are known placeholders."""
    refuse_non_finite(value, where)
    if isinstance(value, str) and "${" in value and not _PLACEHOLDER.fullmatch(value):
        raise ConfigError(f"{where}: {echo(value)} is no placeholder pipebench knows (known: {PLACEHOLDERS}, "
                          "each a whole value)")
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_value(item, f"{where}[{i}]")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ConfigError(f"{where}.{name_text(key)}: a key must be text, not {type(key).__name__}")
            _check_value(item, f"{where}.{name_text(key)}")
    elif value is not None and not isinstance(value, (bool, int, float, str)):
        raise ConfigError(f"{where}: must be a number, text, true/false, null, or a list or mapping of them, not "
                          f"{type(value).__name__} {echo(value)} (quote it)")


def data_formats(kwargs: Mapping[str, Any]) -> list[str]:
    """Give the data formats the kwargs' placeholders read, in the order they appear."""
    found: list[str] = []

    def visit(value: Any) -> None:
        match = _PLACEHOLDER.fullmatch(value) if isinstance(value, str) else None
        if match and match.group(1) not in found:
            found.append(match.group(1))
        for item in value if isinstance(value, list) else value.values() if isinstance(value, Mapping) else ():
            visit(item)

    visit(dict(kwargs))
    return found


def expand(kwargs: Mapping[str, Any], files: Mapping[str, list[str]]) -> dict[str, Any]:
    """Give the kwargs with each placeholder replaced by the list of `files` in its format."""
    def value_of(value: Any) -> Any:
        match = _PLACEHOLDER.fullmatch(value) if isinstance(value, str) else None
        if match:
            return list(files[match.group(1)])
        if isinstance(value, list):
            return [value_of(v) for v in value]
        if isinstance(value, Mapping):
            return {k: value_of(v) for k, v in value.items()}
        return value

    return {name: value_of(value) for name, value in kwargs.items()}


@dataclass(frozen=True)
class FunctionPipeline:
    """A user's function as an experiment measures it: what the worker imports and calls, with what."""

    name: str  # the pipeline's name in results (pipelines.functions[i].name)
    path: str  # the file, absolute
    function: str
    sha256: str  # of the file's bytes when the experiment was resolved
    kwargs: dict[str, Any]  # what it is called with, placeholders filled in (the batch size apart)
    batch_size: int | None  # passed as batch_size= (batch_passed), or fixed by kwargs or its default; else None
    batch_passed: bool
    data: dict[str, list[str]]  # the run's files its placeholders read, by format

    @property
    def format(self) -> str | None:
        """Give the run's data format it reads (through its placeholders), None when it reads its own files or several."""
        return next(iter(self.data)) if len(self.data) == 1 else None

    @property
    def ordering(self) -> str:
        return FUNCTION_ORDERING

    @property
    def call_kwargs(self) -> dict[str, Any]:
        """Give the keyword arguments of the call: its kwargs and, when passed, the batch size."""
        return {**self.kwargs, **({BATCH_PARAMETER: self.batch_size} if self.batch_passed else {})}

    def with_batch_size(self, batch_size: int) -> FunctionPipeline:
        """Give it called with `batch_size` when it takes the trial's; unchanged otherwise."""
        if not self.batch_passed:
            return self
        return FunctionPipeline(self.name, self.path, self.function, self.sha256, self.kwargs, batch_size, True,
                                self.data)

    def to_dict(self) -> dict:
        return {"function": {"name": self.name, "path": self.path, "function": self.function, "sha256": self.sha256,
                             "kwargs": self.kwargs, "batch_size": self.batch_size, "batch_passed": self.batch_passed,
                             "data": self.data}}

    @classmethod
    def from_dict(cls, obj: Mapping) -> FunctionPipeline:
        f = obj["function"]
        return cls(f["name"], f["path"], f["function"], f["sha256"], dict(f["kwargs"]), f["batch_size"],
                   f["batch_passed"], {fmt: list(files) for fmt, files in f["data"].items()})

    def fingerprint(self) -> str:
        """Give the sha256 of the canonical JSON form (the file's own sha256 in it): equal calls, equal fingerprints."""
        return fingerprint(self.to_dict(), 64, compact=True)


#: The keys of one `pipelines.functions` entry (sha256: filled in from the file when the experiment is resolved).
ENTRY_KEYS = ("function", "kwargs", "name", "sha256")
_SHA256 = re.compile(r"[0-9a-f]{64}")


def check_entry(entry: Any, where: str) -> dict[str, Any]:
    """Give a `pipelines.functions` entry with its keys checked and its name defaulted (no file is read);
    ConfigError naming the YAML path otherwise."""
    if isinstance(entry, str):
        entry = {"function": entry}  # `- path.py:fn`, as a preset is named
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where}: must be a mapping {{function: PATH.py:FUNCTION, kwargs: {{...}}, name: ...}}, "
                          f"not {type(entry).__name__}")
    unknown = sorted(set(map(str, entry)) - set(ENTRY_KEYS))
    if unknown:
        raise ConfigError(f"{where}.{name_text(unknown[0])}: unknown key (expected one of {', '.join(ENTRY_KEYS)})")
    text = entry.get("function")
    if not isinstance(text, str) or not text:
        raise ConfigError(f"{where}.function: required: PATH.py:FUNCTION (a path relative to the experiment file)")
    path, sep, name = text.rpartition(":")
    if not sep or not path or not name.isidentifier() or keyword.iskeyword(name) or not path.endswith(".py"):
        raise ConfigError(f"{where}.function: {echo(text)} is not PATH.py:FUNCTION (a Python file, a colon, a "
                          "function name)")
    label = entry.get("name", name)
    if not isinstance(label, str) or not PLAIN_NAME.fullmatch(label):
        raise ConfigError(f"{where}.name: must be {PLAIN_NAME_RULE}, not {echo(label)}")
    sha256 = entry.get("sha256")
    if sha256 is not None and not (isinstance(sha256, str) and _SHA256.fullmatch(sha256)):
        raise ConfigError(f"{where}.sha256: must be 64 lower-case hex digits (the file's sha256), not {echo(sha256)}")
    return {"name": label, "function": text, "kwargs": check_kwargs(entry.get("kwargs"), f"{where}.kwargs"),
            "sha256": sha256}


def definition_of(entry: Mapping[str, Any], where: str, base: Path | None) -> Definition:
    """Give the definition a checked entry (check_entry) names, its file found from `base` (the experiment file's
    folder), its kwargs checked against its parameters, and its sha256 checked when the entry holds one (a run
    resumed after the file changed would mix two functions' rows); ConfigError naming the YAML path otherwise."""
    try:
        ref = parse_function_ref(entry["function"], f"{where}.function", base)
        found = read_definition(ref)
    except UsageError as err:
        text = str(err)
        raise ConfigError(text if text.startswith(f"{where}.") else f"{where}.function: {text}") from None
    if entry["sha256"] is not None and entry["sha256"] != found.sha256:
        raise ConfigError(f"{where}.sha256: {ref.path} changed since the experiment was resolved (sha256 "
                          f"{entry['sha256'][:12]}… then, {found.sha256[:12]}… now): start a new run, or drop sha256 "
                          "to take the file as it is")
    problem = found.argument_problem(entry["kwargs"])
    if problem:
        raise ConfigError(f"{where}.kwargs: {found.where}: {problem}")
    return found


def resolve_entry(entry: Mapping[str, Any], where: str, base: Path | None) -> dict[str, Any]:
    """Give a checked entry with its function's path made absolute and the file's sha256 filled in (definition_of)."""
    found = definition_of(entry, where, base)
    return {**entry, "function": found.ref.text, "sha256": found.sha256}


def data_files(pipeline: Mapping) -> list[str]:
    """Give the run's data files a pipeline's dictionary form reads: a spec's source files, a function's
    placeholders' files."""
    if is_function(pipeline):
        return [name for files in pipeline["function"]["data"].values() for name in files]
    return list(pipeline.get("source", {}).get("files", []))


def is_function(pipeline: Mapping) -> bool:
    """Tell whether a pipeline's dictionary form (a trial's pipeline_spec, params_json's pipeline) is a user function's."""
    return "function" in pipeline
