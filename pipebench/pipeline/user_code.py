"""Load a user's tf.data function in this (worker) process: import its module, call it, keep its dataset.

Both `pipebench diagnose` and a trial of an experiment's function pipeline load the function here.

`load(path, name, kwargs)` gives a `Loaded`: the tf.data.Dataset the function returned, the user's
module and function, and where each dataset call was written (`sites`: the file and line of every
`dataset.map(...)`, `tf.data.TextLineDataset(...)` and so on that the user's code made while the
function ran, recorded by wrapping tf.data's methods for the length of the call). Anything else is
one line, naming the user's own file and line (UserCodeError where the user's code raised, else UsageError):

- the module does not import (its own error, at its own line), or has no such function;
- the function does not take the arguments given (its signature says which);
- it raises (the last frame of its traceback that lies in the user's file);
- it returns something that is not a tf.data.Dataset: tensors from a TF1 iterator's get_next(), a
  generator, a Keras Sequence, an iterator, ... — said, with what to change.

This module imports TensorFlow: it runs in workers only.
"""
from __future__ import annotations

import hashlib
import importlib.util
import inspect
import keyword
import re
import sys
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tensorflow as tf

from pipebench.errors import UsageError, UserCodeError, failure_reason
from pipebench.pipeline.function import Place

#: The longest reason an error line quotes from the user's exception.
_REASON_CHARS = 160


@dataclass
class Loaded:
    """A user's function and the dataset it returned."""

    dataset: tf.data.Dataset
    module: types.ModuleType
    function: Any
    signature: inspect.Signature
    kwargs: dict[str, Any]  # the arguments it was called with, defaults filled in
    sites: dict[int, Site] = field(default_factory=dict)  # id(dataset) → where it was made
    tf1: str | None = None  # how the dataset was captured behind a TF1 iterator (pipebench.pipeline.tf1_capture)
    ignored: tuple[str, ...] = ()  # TF1 switches the user's code called that were ignored, with their places
    upgraded: Any = None  # the module as tf_upgrade_v2 converted it, when it was (pipebench.pipeline.tf1_upgrade)
    library_calls: dict = field(default_factory=dict)  # _SiteRecorder.library_calls


def _short(err: BaseException) -> str:
    """Give the exception as 'Type: first lines', on one line, cut to _REASON_CHARS."""
    return failure_reason(err, _REASON_CHARS)


def _users(line: str, err: BaseException) -> UserCodeError:
    """Give the one-line UserCodeError for what the user's code raised, the whole of its text kept as `detail`
    (what a TF1 name TF 2 lacks is told from: pipebench.pipeline.tf1_upgrade)."""
    found = UserCodeError(line)
    found.detail = f"{type(err).__name__}: {err}"
    return found


def _user_frame(tb: types.TracebackType | None, files: set[str]) -> Place | None:
    """Give the last frame of a traceback that lies in one of `files`, or None."""
    found = None
    for frame in traceback.extract_tb(tb):
        if str(Path(frame.filename).resolve()) in files:
            found = Place(str(Path(frame.filename).resolve()), frame.lineno or 0)
    return found


def _module_name(file: Path) -> str:
    """Give the name the user's module is imported under: its file's stem, as when it runs as a script's import,
    unless that name is taken (a module already imported from elsewhere: `pipebench`, `tensorflow`), belongs to the
    standard library (`random.py`) or is no Python name; then a private name of this file's own."""
    stem = file.stem
    taken = sys.modules.get(stem)
    if stem.isidentifier() and not keyword.iskeyword(stem) and stem not in sys.stdlib_module_names \
            and (taken is None or getattr(taken, "__file__", None) == str(file)):
        return stem
    digest = hashlib.sha256(str(file).encode()).hexdigest()[:12]
    return f"pipebench_user_{digest}_{stem}" if stem.isidentifier() else f"pipebench_user_{digest}"


#: The sha256 of the bytes a user's module was executed from, set on the module: a result row names the code that
#: ran, not the file's bytes at another moment (an edit between a run's trials).
SHA256_ATTRIBUTE = "__pipebench_sha256__"


def import_user_module(path: str) -> types.ModuleType:
    """Give the user's module, imported from `path` (its folder first on sys.path, as a script's is, so its own
    sibling imports work) under its file's stem or a private name (_module_name); UsageError naming its file and
    line when it does not import."""
    file = Path(path).resolve()
    name = _module_name(file)
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(file):
        return sys.modules[name]
    if sys.path[:1] != [str(file.parent)]:
        sys.path.insert(0, str(file.parent))
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        source = file.read_bytes()  # read once: what runs is what is hashed (SHA256_ATTRIBUTE)
        setattr(module, SHA256_ATTRIBUTE, hashlib.sha256(source).hexdigest())
        exec(compile(source, str(file), "exec"), module.__dict__)  # noqa: S102 — the user's own module
    except SyntaxError as err:
        del sys.modules[name]
        raise UserCodeError(f"{err.filename or file}:{err.lineno or 0}: SyntaxError: {err.msg}") from None
    except BaseException as err:  # the user's module may raise anything, SystemExit included (argparse, flags)
        del sys.modules[name]
        if isinstance(err, KeyboardInterrupt):
            raise
        place = _user_frame(err.__traceback__, {str(file)})
        where = f"{place.file}:{place.line}" if place else str(file)
        raise _users(f"{where}: importing {file.name} failed: {_short(err)}", err) from None
    return module


def user_function(module: types.ModuleType, name: str, path: str) -> Any:
    """Give the module's top-level function `name`; UsageError when it has none or it is not callable."""
    found = getattr(module, name, None)
    if found is None:
        defined = sorted(n for n, v in vars(module).items()
                         if inspect.isfunction(v) and getattr(v, "__module__", None) == module.__name__)
        shown = ", ".join(defined[:8]) + (", …" if len(defined) > 8 else "")
        raise UsageError(f"{path}: no function {name} (its functions: {shown or 'none'})")
    if not callable(found):
        raise UsageError(f"{path}: {name} is a {type(found).__name__}, not a function")
    return found


def _def_place(function: Any, path: str) -> str:
    code = getattr(function, "__code__", None)
    return f"{path}:{code.co_firstlineno}" if code is not None else path


def bind(function: Any, name: str, kwargs: dict[str, Any], path: str,
         give: str = "--set {}=VALUE") -> tuple[inspect.Signature, inspect.BoundArguments]:
    """Give the function's signature and the arguments it gets (defaults filled in); UsageError when they do not fit
    (`give` says how to give a missing argument, its name in {})."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        raise UsageError(f"{path}: {name} has no signature Python can read") from None
    try:
        bound = signature.bind(**kwargs)
    except TypeError as err:
        hint = ""
        missing = [p.name for p in signature.parameters.values()
                   if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                   and p.name not in kwargs]
        if missing:
            hint = f" (give it with {give.format(missing[0])})"
        raise UsageError(f"{_def_place(function, path)}: {name}{signature}: {err}{hint}") from None
    bound.apply_defaults()
    return signature, bound


def _what_it_is(value: Any) -> tuple[str, str]:
    """Give (what a returned value is, what to change) for a value that is not a tf.data.Dataset."""
    flat = tf.nest.flatten(value) if isinstance(value, (tuple, list, dict)) else [value]
    if value is None:
        return "None", "end it with `return dataset`"
    if flat and all(tf.is_tensor(v) for v in flat):
        shape = type(value).__name__ if isinstance(value, (tuple, list, dict)) else "a Tensor"
        return (f"tensors ({shape}), as a TF1 iterator's get_next() gives",
                "return the dataset itself, not dataset.make_one_shot_iterator().get_next()")
    if inspect.isgenerator(value):
        return "a generator", "return tf.data.Dataset.from_generator(...) over it, or the dataset it reads"
    if isinstance(value, tf.data.Iterator) or type(value).__name__.endswith("Iterator"):
        return f"an iterator ({type(value).__name__})", "return the dataset, not iter(dataset)"
    if any(c.__name__ in ("Sequence", "PyDataset") for c in type(value).__mro__):
        return (f"a Keras {type(value).__mro__[0].__name__}",
                "pipebench reads tf.data pipelines: build the input with tf.data and return the dataset")
    return f"a {type(value).__module__}.{type(value).__qualname__}", "return a tf.data.Dataset"


@dataclass(frozen=True)
class Site:
    """Where a dataset of the user's pipeline was made: the call that returned it, the line of the user's code that
    made the call (directly, or through a library function: `via`), and the dataset."""

    place: Place
    call: str  # the method or class that returned it: "map", "TextLineDataset", "_ParseExampleDataset"
    node: Any
    via: str | None = None  # the library function the user's line called that made it ("make_csv_dataset"), else None


_OWN_FILE = str(Path(__file__).resolve())
#: Library readers whose calls are recorded with their arguments (tf.data.experimental's): a restructuring
#: rebuilds what they make (pipebench.diagnose.rewrites).
LIBRARY_READERS = ("make_csv_dataset",)
#: Frames of these functions are wrappers (deprecation, dispatch, pipebench's own recording), never the API called.
_WRAPPERS = {"new_func", "wrapper", "_wrapper", "error_handler", "op_dispatch_handler", "wrapped", "_note",
             "_record_init", "__init__"}


class _SiteRecorder:
    """Records every dataset the user's function makes, whoever makes it (pipebench.pipeline.walk names a stage per
    op TensorFlow runs). tf.data's public methods and readers are wrapped while the function runs: a dataset a call
    returns is recorded unless it is made inside another recorded call (unbatch's inner map is unbatch's), and so is
    a dataset class made directly by library code outside any call (`apply(parse_example_dataset(...))` makes a
    `_ParseExampleDataset`). `apply` is not a call of its own: what its function makes is recorded as if the user's
    line had made it, `via` naming the library function. Each record names the user's line (the first frame
    outside TensorFlow and pipebench) and, when that line called a library function rather than a tf.data method
    (make_csv_dataset, make_batched_features_dataset), the function."""

    def __init__(self) -> None:
        self.sites: dict[int, Site] = {}
        self._saved: list[tuple[type, str, Any]] = []
        self._tf_root = str(Path(tf.__file__).resolve().parents[1])
        self._own_root = str(Path(__file__).resolve().parents[1])  # pipebench's package
        self._depth = 0  # recorded calls running now (a dataset made inside one is that call's)
        # id(dataset a library reader returned) → (its name, its positional and keyword arguments, the dataset):
        # a restructuring rebuilds its pipeline from them (pipebench.diagnose.rewrites)
        self.library_calls: dict[int, tuple[str, tuple, dict, Any]] = {}

    def _wrap(self, owner: type, name: str) -> None:
        raw = inspect.getattr_static(owner, name)
        kind = type(raw) if isinstance(raw, (staticmethod, classmethod)) else None
        original = raw.__func__ if kind else raw
        if not callable(original) or isinstance(original, type):
            return
        recorder = self
        transparent = name == "apply"

        def wrapped(*args, **kwargs):
            outer = recorder._depth == 0
            recorder._depth += 0 if transparent else 1
            try:
                result = original(*args, **kwargs)
            finally:
                recorder._depth -= 0 if transparent else 1
            if outer and not transparent:
                recorder._note(result if name != "__init__" else args[0], name if name != "__init__"
                               else owner.__name__.removesuffix("V2").removesuffix("V1"))
            return result

        wrapped.__wrapped__ = original
        self._saved.append((owner, name, raw))
        setattr(owner, name, kind(wrapped) if kind else wrapped)

    def _record_init(self, original: Any) -> Any:
        """Give DatasetV2.__init__ wrapped: a dataset class made outside any recorded call is recorded."""
        recorder = self

        def __init__(dataset, *args, **kwargs):
            original(dataset, *args, **kwargs)
            if recorder._depth == 0:
                recorder._note(dataset, type(dataset).__name__)
        return __init__

    def _note(self, result: Any, call: str) -> None:
        if not isinstance(result, tf.data.Dataset) or id(result) in self.sites:
            return
        frame = sys._getframe(2)
        api = []  # the TensorFlow functions between the user's line and the call, innermost first
        while frame is not None:
            filename = str(Path(frame.f_code.co_filename).resolve())
            if filename.startswith(self._tf_root):
                if frame.f_code.co_name == "apply" and callable(frame.f_locals.get("transformation_func")):
                    # what `apply` was given names the library function (Python < 3.11 has no co_qualname)
                    api.append(getattr(frame.f_locals["transformation_func"], "__qualname__", "apply"))
                if frame.f_code.co_name not in _WRAPPERS:
                    api.append(getattr(frame.f_code, "co_qualname", frame.f_code.co_name))
            elif filename != _OWN_FILE:
                break
            frame = frame.f_back
        if frame is None or filename.startswith(self._own_root):
            return  # pipebench called TensorFlow (a library function's inner pipeline): no line of the user's
        call, via = _call_and_via(api, call)
        self.sites[id(result)] = Site(Place(filename, frame.f_lineno), call, result, via)

    def __enter__(self) -> _SiteRecorder:
        from tensorflow.python.data.ops import dataset_ops, readers

        dataset_class = tf.data.Dataset
        for name, raw in list(vars(dataset_class).items()):
            if not name.startswith("_") and (inspect.isfunction(raw) or isinstance(raw, (staticmethod, classmethod))):
                self._wrap(dataset_class, name)
        for reader in (readers.TextLineDatasetV2, readers.TFRecordDatasetV2, readers.FixedLengthRecordDatasetV2):
            self._wrap(reader, "__init__")
        base = dataset_ops.DatasetV2
        self._saved.append((base, "__init__", base.__dict__["__init__"]))
        base.__init__ = self._record_init(base.__dict__["__init__"])
        for name in LIBRARY_READERS:
            self._wrap_library(tf.data.experimental, name)
        return self

    def _wrap_library(self, owner: Any, name: str) -> None:
        original = getattr(owner, name, None)
        if original is None:
            return
        recorder = self

        def wrapped(*args, **kwargs):
            result = original(*args, **kwargs)
            recorder.library_calls[id(result)] = (name, args, kwargs, result)
            return result

        wrapped.__wrapped__ = original
        self._saved.append((owner, name, original))
        setattr(owner, name, wrapped)

    def __exit__(self, *exc) -> None:
        for owner, name, raw in reversed(self._saved):
            setattr(owner, name, raw)
        self._saved.clear()


def _call_and_via(api: list[str], call: str) -> tuple[str, str | None]:
    """Give the call that made a dataset as the user would name it, and the library function the user's line called
    that made it (`api`: the TensorFlow functions between them, innermost first), None when the line called the
    tf.data method or class itself (a tf.compat.v1 method calling its TF2 twin included)."""
    names = []
    for qualname in reversed(api):  # the one the user's line called first
        owner, _, short = qualname.rpartition(".<locals>.")
        short = re.sub(r"_v[12]$", "", (owner or qualname).rpartition(".")[2])
        if short != "__init__" and (not names or names[-1] != short):
            names.append(short)
    methods = set(vars(tf.data.Dataset))
    if names and names[0] in methods and names[0] != "apply":
        return names[0], None  # DatasetV1.map making its _MapDataset directly
    if not names or names[0] in (call, call.strip("_")) or names[0].startswith(("Dataset", "_")):
        return call, None
    if names[0] == "apply":
        inner = [n for n in names[1:] if n not in ("apply", call) and not n.startswith(("Dataset", "_"))]
        return call, f"apply({inner[0]})" if inner else None
    return call, names[0]


def call_user_function(function: Any, name: str, bound: inspect.BoundArguments, path: str,
                       recorder: _SiteRecorder | None = None) -> tuple[Any, dict]:
    """Give what the function returns when called with `bound`, and the dataset calls it made (see _SiteRecorder;
    `recorder` keeps them when the call raises); UserCodeError naming the user's file and line when it raises."""
    file = str(Path(path).resolve())
    recorder = recorder or _SiteRecorder()
    with recorder:
        try:
            result = function(*bound.args, **bound.kwargs)
        except BaseException as err:
            if isinstance(err, KeyboardInterrupt):
                raise
            place = _user_frame(err.__traceback__, {file})
            where = f"{place.file}:{place.line}" if place else _def_place(function, path)
            raise _users(f"{where}: {name} raised {_short(err)}", err) from None
    return result, recorder.sites


def _graphs(dataset: Any) -> list[Any]:
    """Give the graphs of every function the dataset's stages run (their inputs' too, nested functions included)."""
    found, todo, seen = [], [dataset], set()
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for wrapper in node._functions():
            graphs = [wrapper.function.graph]
            while graphs:
                graph = graphs.pop()
                found.append(graph)
                graphs += [f.graph for f in getattr(graph, "_functions", {}).values() if hasattr(f, "graph")]
        todo += node._inputs()
    return found


def _failing_op_place(text: str, dataset: Any, file: str) -> Place | None:
    """Give where in the user's file the op a TensorFlow error names (`StringToNumberOp could not ...`) was written,
    when exactly one place there made an op of that type: read from the ops' tracebacks in the pipeline's graphs."""
    kinds = set(re.findall(r"\b([A-Z][A-Za-z0-9]*?)(?:Op|V\d)?\b(?= could not| failed|:)", text))
    if not kinds or dataset is None:
        return None
    places = set()
    try:
        for graph in _graphs(dataset):
            for op in graph.get_operations():
                if op.type in kinds:
                    mine = [Place(file, frame.lineno) for frame in op.traceback
                            if str(Path(frame.filename).resolve()) == file]
                    if mine:
                        places.add(mine[-1])
    except Exception:  # noqa: BLE001 — private attributes of another TensorFlow: no place rather than no line
        return None
    return places.pop() if len(places) == 1 else None


def failure_while_running(err: BaseException, function: Any, path: str, dataset: Any = None) -> str:
    """Give one line for an error the user's pipeline raised while it ran (its map functions, a py_function): the
    last place in the user's file its traceback or TensorFlow's message names, else the line that made the op the
    message names (found in `dataset`'s function graphs), else the function's `def` line; and the cause (a
    py_function's own exception line, not TensorFlow's wrapping of it, nor the iterator path pipebench's sink
    added)."""
    file = str(Path(path).resolve())
    text = getattr(err, "message", None) or str(err)
    named = [Place(str(Path(f).resolve()), int(n)) for f, n in re.findall(r'File "([^"]+)", line (\d+)', text)]
    named = [p for p in named if p.file == file]
    place = named[-1] if named else _user_frame(err.__traceback__, {file}) or _failing_op_place(text, dataset, file)
    where = f"{place.file}:{place.line}" if place else _def_place(function, path)
    if "Traceback (most recent call last)" in text:  # a py_function: its own exception is the traceback's last line
        lines = [line.strip() for line in text.partition("[[")[0].splitlines() if line.strip()]
        cause = f"{type(err).__name__}: {lines[-1]}"
    else:
        cause = failure_reason(err, _REASON_CHARS * 2).partition("[[")[0].strip()
    cause = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", cause)
    cause = re.sub(r"Error in user-defined function passed to \S+ transformation with iterator: [\w:\[\]]+: ", "",
                   cause)
    return f"{where}: the pipeline {getattr(function, '__name__', 'it')} returned failed while it ran: " \
           f"{cause[:_REASON_CHARS * 2]}"


def load(path: str, name: str, kwargs: dict[str, Any], give: str = "--set {}=VALUE",
         upgrade_into: Path | None = None) -> Loaded:
    """Give the dataset `path`'s function `name` returns when called with `kwargs`, or the dataset behind the TF1
    iterator whose get_next() tensors it returns (pipebench.pipeline.tf1_capture); one-line UsageError otherwise
    (`give` as bind's). With `upgrade_into`, TF1 code that fails at a name TF 2 lacks is converted there by
    tf_upgrade_v2 and loaded again (pipebench.pipeline.tf1_upgrade). A global seed the function sets
    (`tf.random.set_seed`) seeds what it builds and is then put back: it does not reseed the caller's process."""
    from tensorflow.python.eager import context

    seed = context.global_seed()
    try:
        return _load(path, name, kwargs, give)
    except UserCodeError as err:
        from pipebench.pipeline.tf1_upgrade import needs_upgrade, upgrade

        if upgrade_into is None or not needs_upgrade(getattr(err, "detail", str(err))):
            raise
        upgraded = upgrade(path, upgrade_into)
        if upgraded is None:
            raise
        import dataclasses

        return dataclasses.replace(_load(str(upgraded.path), name, kwargs, give), upgraded=upgraded)
    finally:
        if context.global_seed() != seed:
            tf.random.set_seed(seed)


def _load(path: str, name: str, kwargs: dict[str, Any], give: str) -> Loaded:
    from pipebench.pipeline.tf1_capture import capturing, computed_after_get_next, dataset_of

    recorder = _SiteRecorder()
    computed = None
    with capturing() as seen:
        module = import_user_module(path)
        function = user_function(module, name, path)
        signature, bound = bind(function, name, kwargs, path, give)
        try:
            result, sites = call_user_function(function, name, bound, path, recorder)
        except UserCodeError as err:
            if not seen.iterators:
                raise
            # it computed on the stand-ins (TensorFlow refused them at once): trace what it computes after get_next()
            result, sites = None, recorder.sites
            computed = computed_after_get_next(function, seen.iterators[-1].dataset, *bound.args, **bound.kwargs)
            if isinstance(computed, str):
                raise UserCodeError(f"{str(err).partition(': ')[0]}: {name} computes on get_next()'s tensors, and "
                                    f"{computed}: diagnose measures the dataset behind a TF1 iterator with what is "
                                    "computed on each element after it; move that computation into dataset.map") \
                    from None
    ignored = tuple(f"{call} ({Path(file).name}:{line})" for call, file, line in seen.ignored_calls)
    if isinstance(result, tf.data.Dataset):
        return Loaded(result, module, function, signature, dict(bound.arguments), sites, None, ignored,
                      library_calls=recorder.library_calls)
    captured = computed if computed is not None else dataset_of(result, seen)
    if isinstance(captured, str) and seen.iterators:  # it returned tensors computed outside stand-ins' reach
        with capturing():
            captured = computed_after_get_next(function, seen.iterators[-1].dataset, *bound.args, **bound.kwargs)
    if isinstance(captured, tuple):
        return Loaded(captured[0], module, function, signature, dict(bound.arguments), sites, captured[1], ignored,
                      library_calls=recorder.library_calls)
    what, change = _what_it_is(result)
    if isinstance(captured, str):
        what, change = f"{what} after a TF1 iterator, but {captured}", "return get_next() of the iterator as it is"
    raise UsageError(f"{_def_place(function, path)}: {name} returned {what}, not a tf.data.Dataset: {change}")
