"""The stages of a tf.data.Dataset, from its source to its root, as plain records: one adapter for TF 2.14–2.21.

It walks `_inputs()` from the returned dataset back to its source and reads each node's private
attributes (`_map_func`, `_num_parallel_calls`, `_batch_size`, `_buffer_size`, ...). These sit in
the same files under the same names in TensorFlow 2.14 and 2.21 (see
shared/reference/ANCHORS-your-own-pipeline.md §2); tests/test_diagnose_walk.py runs in both.

A *stage* is one call the user wrote: `.unbatch()` alone makes three datasets (a map, a
restructure, the unbatch) and `list_files` two, so nodes are grouped by the call that returned
them (pipebench.pipeline.user_code records where each call was written); nodes no user call returned
belong to the next stage downstream. `with_options` nodes are not stages: options merge at the
root, and every prefix gets the root's options again. A reader (TextLineDataset, TFRecordDataset,
FixedLengthRecordDataset) is a source, whatever it wraps, and so is a dataset that combines several (zip,
concatenate, sample_from_datasets): the chain from it to the root is walked, the datasets it combines are measured
together as its source (each is a pipeline the user can diagnose on its own).

An interleave or flat_map whose function is the user's own (not a reader such as `tf.data.TFRecordDataset`) builds
a pipeline per element: the model Garden's Criteo reader batches and decodes inside one. Its function is called
once, eagerly, on the first element of its input (a file name, a shard index), and the pipeline it returns is
walked too: its stages follow the interleave's in the list, each with `inside` naming the interleave, and an inner
stage's prefix is that pipeline up to it (pipebench.pipeline.prefixes says why it is measured on its own). Whether a
stage's elements are batches (and so how rows are counted) follows the inner pipeline through its interleave.

Statefulness is read as map_parallelization reads it (grappler's function_utils IsFunctionStateful):
a function is stateful when one of its own nodes is a stateful op, Assert exempt, an If or While
only through its branches; an op the registry does not know counts as stateful.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import op_def_registry

from pipebench.pipeline.calls import call_text, tf_does
from pipebench.pipeline.spec import AUTOTUNE
from pipebench.pipeline.stages import Stage, UserFunction
from pipebench.pipeline.rows import BATCHING, UNBATCHING
from pipebench.pipeline.function import Place
from pipebench.pipeline.user_code import Site

_READERS = {"TextLineDatasetV2": "TextLineDataset", "TFRecordDatasetV2": "TFRecordDataset",
            "FixedLengthRecordDatasetV2": "FixedLengthRecordDataset", "CsvDatasetV2": "CsvDataset"}
_KINDS = {
    "_MapDataset": "map", "_ParallelMapDataset": "map", "_BatchDataset": "batch", "_ParallelBatchDataset": "batch",
    "_PaddedBatchDataset": "padded_batch", "_PrefetchDataset": "prefetch", "_ShuffleDataset": "shuffle",
    "_RepeatDataset": "repeat", "CacheDataset": "cache", "_InterleaveDataset": "interleave",
    "_ParallelInterleaveDataset": "interleave", "ParallelInterleaveDataset": "interleave", "_FlatMapDataset": "flat_map",
    "_FilterDataset": "filter", "_UnbatchDataset": "unbatch", "_RebatchDataset": "rebatch", "_TakeDataset": "take",
    "_SkipDataset": "skip", "_ShardDataset": "shard",
    # made by library functions (tf.data.experimental's, through `apply` or make_*_dataset)
    "_ParseExampleDataset": "parse_example", "_MapAndBatchDataset": "map_and_batch",
    "_ShuffleAndRepeatDataset": "shuffle_and_repeat", "_DenseToSparseBatchDataset": "dense_to_sparse_batch",
    "_ScanDataset": "scan", "_GroupByWindowDataset": "group_by_window", "_IgnoreErrorsDataset": "ignore_errors",
    "_AssertCardinalityDataset": "assert_cardinality", "_TakeWhileDataset": "take_while",
}
#: The calls whose name says the stage's kind better than its root-most class (a site's call name).
_CALL_KINDS = {"unbatch": "unbatch", "list_files": "source", "from_tensor_slices": "source", "from_tensors": "source",
               "from_generator": "source", "range": "source"}
_OPENING = {"interleave", "flat_map"}
_OPTIONS = "_OptionsDataset"
_TF_ROOT = str(Path(tf.__file__).resolve().parents[1])


@dataclass
class Walked:
    """A dataset's stages, with the TensorFlow objects the replay and the measurement need."""

    stages: list[Stage]
    nodes: list[Any]  # per stage: the dataset its call returned (its prefix, options not yet re-applied)
    functions: list[Any]  # per stage: the Python function it runs, or None
    root: Any
    options: dict[str, Any]  # the root's options that are set, by path ("deterministic", "autotune.enabled", ...)
    inner_notes: dict[int, str] = field(default_factory=dict)  # why a user function's pipeline was not walked
    # by the index of a library reader's last stage: its name and the arguments it was called with (restructurings)
    library_calls: dict[int, tuple[str, tuple, dict]] = field(default_factory=dict)

    def prefix(self, stage: int):
        """Give the original pipeline up to and including `stage` (an inner stage: the pipeline the interleave's
        function built for its first element, up to that stage), with the root's options re-applied."""
        last_outer = max(i for i, s in enumerate(self.stages) if s.inside is None)
        if stage == last_outer:
            return self.root
        return self.nodes[stage].with_options(self.root.options())


def _value(tensor: Any) -> Any:
    """Give a constant tensor's (or a plain value's) Python value."""
    if tensor is None:
        return None
    value = tf.get_static_value(tensor) if tf.is_tensor(tensor) else tensor
    if hasattr(value, "item"):
        value = value.item()
    return value.decode() if isinstance(value, bytes) else value


def _tunable(tensor: Any) -> int | str | None:
    value = _value(tensor)
    return AUTOTUNE if value == tf.data.AUTOTUNE else value


def _deterministic(node: Any) -> bool | None:
    return {"true": True, "false": False}.get(getattr(node, "_deterministic", "default"))


def set_options(options: tf.data.Options) -> dict[str, Any]:
    """Give the options set to other than their defaults (TensorFlow sets some to their defaults itself), by
    dotted path; enums are left out (tf.data.Options takes them back only as enums)."""
    found: dict[str, Any] = {}

    def visit(obj: Any, default: Any, prefix: str) -> None:
        for name, value in getattr(obj, "_options", {}).items():
            if hasattr(value, "_options"):
                visit(value, getattr(default, name), f"{prefix}{name}.")
            elif value is not None and value != getattr(default, name) and isinstance(value, (bool, int, float, str)):
                found[f"{prefix}{name}"] = value
    visit(options, tf.data.Options(), "")
    return found


def stateful_ops(concrete: Any) -> tuple[str, ...]:
    """Give the stateful ops that make a traced function stateful as map_parallelization judges it (module docstring)."""
    graph_def = concrete.graph.as_graph_def()
    library = {f.signature.name: f for f in graph_def.library.function}

    def of_function(fdef) -> list[str]:
        if fdef is None or not fdef.signature.is_stateful:
            return []
        found = []
        for node in fdef.node_def:
            found += of_node(node)
        return found

    def of_node(node) -> list[str]:
        op_def = op_def_registry.get(node.op)
        if op_def is None:
            return [node.op]
        if not op_def.is_stateful or node.op == "Assert":
            return []
        branches = {"If": ("then_branch", "else_branch"), "While": ("cond", "body")}.get(node.op)
        if branches:
            inner = [of_function(library.get(node.attr[b].func.name)) for b in branches]
            if all(library.get(node.attr[b].func.name) is not None for b in branches) and not any(inner):
                return []
            return [op for ops in inner for op in ops] or [node.op]
        return [node.op]

    return tuple(sorted(set(of_function(concrete.function_def))))


def user_function(function: Any, module: Any) -> UserFunction:
    """Give the record of a stage's Python function: its name, where it is defined, whether it can be imported."""
    inner = function
    while isinstance(inner, functools.partial) or hasattr(inner, "python_function"):
        inner = inner.func if isinstance(inner, functools.partial) else inner.python_function  # a @tf.function
    api = getattr(inner, "_tf_api_names", None)
    if api:
        return UserFunction(f"tf.{api[0]}", None, f"tf.{api[0]}", None)
    name = getattr(inner, "__qualname__", None) or type(inner).__name__
    code = getattr(inner, "__code__", None)
    place = Place(str(Path(code.co_filename).resolve()), code.co_firstlineno) if code is not None else None
    importable, module_file = None, None
    owner = inspect.getmodule(inner)
    if inner is function and owner is not None and getattr(owner, inner.__name__ if hasattr(inner, "__name__") else "",
                                                             None) is inner and getattr(owner, "__file__", None):
        importable, module_file = inner.__name__, str(Path(owner.__file__).resolve())
    if isinstance(function, functools.partial):
        name = f"partial({name})"
    return UserFunction(name, place, importable, module_file)


def _chain(root: Any) -> list[Any]:
    """Give the nodes from the source to the root, as TensorFlow runs them: a tf.compat.v1 adapter is not a node
    (its `_inputs()` skip the dataset it wraps), nor one sharing its input's variant (unbatch's restructuring keeps
    its Python node: a stage's own). A node of several inputs (zip, concatenate, sample_from_datasets) is the
    chain's source: what follows it is walked, its inputs are measured as one (each can be diagnosed on its own)."""
    from tensorflow.python.data.ops import dataset_ops

    nodes = []
    node = root
    while True:
        while isinstance(node, dataset_ops.DatasetV1Adapter):
            node = node._dataset
        nodes.append(node)
        if type(node).__name__ in _READERS:
            break
        inputs = node._inputs()
        if not inputs:
            break
        if len(inputs) > 1:
            break
        node = inputs[0]
    return nodes[::-1]


def graph_ops(root: Any, nodes: list[Any]) -> list[str]:
    """Give the op TensorFlow runs for each of `nodes` (the chain from the source to `root`), read from the dataset's
    own graph (DatasetToGraphV2: what the runtime holds, whatever Python built it); a node's class name where the
    graph and the chain do not line up (a node sharing its input's variant has no op of its own: its input's)."""
    from tensorflow.core.framework import graph_pb2

    fallback = [type(n).__name__.strip("_") for n in nodes]
    try:
        graph = graph_pb2.GraphDef.FromString(root._as_serialized_graph(
            external_state_policy=tf.data.experimental.ExternalStatePolicy.IGNORE).numpy())
    except Exception:  # noqa: BLE001 — a dataset TensorFlow cannot serialise (a py_func's state): the classes say it
        return fallback
    by_name = {n.name: n for n in graph.node}
    consumed = {i.split(":")[0].lstrip("^") for n in graph.node for i in n.input}
    ends = [n for n in graph.node if n.name not in consumed]
    if len(ends) != 1:
        return fallback
    node = ends[0]
    chain = []
    while node is not None:
        if "Dataset" in node.op:
            chain.append(node.op)
        first = node.input[0].split(":")[0] if node.input and not node.input[0].startswith("^") else None
        node = by_name.get(first) if first is not None and (not chain or "Dataset" in by_name[first].op) else None
    chain.reverse()
    own = [n for i, n in enumerate(nodes) if i == 0 or n._variant_tensor is not nodes[i - 1]._variant_tensor]
    if type(nodes[0]).__name__ in _READERS:  # a reader's own inputs (its file names) are not stages
        chain = chain[max(0, len(chain) - len(own)):]
    if len(own) != len(chain):
        return fallback
    ops = dict(zip(map(id, own), chain))
    found, last = [], fallback[0]
    for node in nodes:
        last = ops.get(id(node), last)
        found.append(last)
    return found


def _internal(node: Any) -> bool:
    """Give whether a node is one TensorFlow makes inside a call (unbatch's restructuring), not a call of its own."""
    if type(node).__name__ == "_RestructuredDataset":
        return True
    function = getattr(getattr(node, "_map_func", None), "_func", None)
    code = getattr(function, "__code__", None)
    # unbatch's own map normalising sparse and ragged components (normalize_to_dense): a library function's maps are
    # stages of their own
    return code is not None and getattr(function, "__qualname__", "").startswith("normalize_to_dense.")


def _groups(nodes: list[Any], sites: dict) -> list[tuple[list[Any], Site | None]]:
    """Give the nodes grouped by the call that returned them (pipebench.pipeline.user_code records every call,
    a library function's inner ones too), source first: a node no call returned (made inside one) joins the next
    that one did; without any record, each node is a stage of its own but for those TensorFlow makes inside a call."""
    groups: list[tuple[list[Any], Site | None]] = []
    pending: list[Any] = []
    for node in nodes:
        if type(node).__name__ == _OPTIONS:
            continue
        pending.append(node)
        site = sites.get(id(node))
        mine = site if site is not None and site.node is node else None
        if mine is not None or (not sites and not _internal(node)) or node is nodes[-1]:
            groups.append((pending, mine))
            pending = []
    if pending:
        groups.append((pending, None))
    if len(groups) > 1 and not groups[-1][0]:
        groups.pop()
    return groups


def _reader_params(node: Any) -> dict[str, Any]:
    filenames = getattr(node, "_filenames", None)
    files = None
    if type(filenames).__name__ == "_TensorSliceDataset":
        files = [f.decode() for f in filenames.as_numpy_iterator()]
    elif tf.is_tensor(filenames):
        names = tf.get_static_value(filenames)
        files = None if names is None else [f.decode() if isinstance(f, bytes) else str(f)
                                            for f in np.asarray(names, dtype=object).reshape(-1).tolist()]
    impl = getattr(node, "_impl", None)
    reads = getattr(node, "_num_parallel_reads", None)
    if reads is None and impl is not None:
        kind = type(impl).__name__
        reads = (_tunable(impl._num_parallel_calls) if kind == "_ParallelInterleaveDataset"
                 else _value(impl._cycle_length) if kind == "ParallelInterleaveDataset" else None)
    return {"reader": _READERS[type(node).__name__], "files": files,
            "compression_type": _value(getattr(node, "_compression_type", None)),
            "buffer_size": _value(getattr(node, "_buffer_size", None)), "num_parallel_reads": _tunable(reads)}


def _slices(members: list[Any]) -> dict[str, Any]:
    """Give a source that is one from_tensor_slices of file names (strings) as {"slices": [...]}; one that slices
    them and more (list_files shuffling them) as {"listed": [...]} (what it lists, not how: it is not replayed from
    them); else {}."""
    slices = [m for m in members if type(m).__name__ == "_TensorSliceDataset"]
    if len(slices) != 1:
        return {}
    spec = slices[0].element_spec
    if not (isinstance(spec, tf.TensorSpec) and spec.dtype == tf.string and spec.shape.rank == 0):
        tensors = slices[0]._tensors  # rows held in memory (a DataFrame's columns): how many, and whether all dense
        dense = len(members) == 1 and all(isinstance(s, tf.TensorSpec) for s in tf.nest.flatten(spec))
        return {"rows": int(tensors[0].shape[0])} if dense and tensors and tensors[0].shape.rank else {}
    names = [f.decode() for f in slices[0].as_numpy_iterator()]
    return {"slices": names} if len(members) == 1 else {"listed": names}


def _params(kind: str, node: Any) -> dict[str, Any]:
    """Give a stage's arguments as plain values, read from the dataset its call returned."""
    name = type(node).__name__
    if name in _READERS:
        return _reader_params(node)
    if kind == "map":
        return {"num_parallel_calls": _tunable(getattr(node, "_num_parallel_calls", None)),
                "deterministic": _deterministic(node)}
    if kind == "batch":
        return {"batch_size": _value(node._batch_size), "drop_remainder": bool(_value(node._drop_remainder)),
                "num_parallel_calls": _tunable(getattr(node, "_num_parallel_calls", None)),
                "deterministic": _deterministic(node)}
    if kind == "padded_batch":
        return {"batch_size": _value(node._batch_size), "drop_remainder": bool(_value(node._drop_remainder))}
    if kind == "shuffle":
        seed, seed2 = _value(node._seed), _value(node._seed2)
        # the op's own seed: the replay draws deterministically when the user's does (under a global seed too, its
        # op seed; which draw is the replay's own), at random when theirs does
        return {"buffer_size": _value(node._buffer_size), "seed": None if (seed, seed2) == (0, 0) else seed2,
                "reshuffle_each_iteration": node._reshuffle_each_iteration
                if node._reshuffle_each_iteration is None else bool(node._reshuffle_each_iteration)}
    if kind == "prefetch":
        return {"buffer_size": _tunable(node._buffer_size)}
    if kind in ("repeat", "take", "skip"):
        count = _value(node._count)
        return {"count": None if count == -1 and kind == "repeat" else count}
    if kind == "cache":
        return {"filename": _value(node._filename)}
    if kind == "interleave" and type(node).__name__ == "ParallelInterleaveDataset":
        # tf.data.experimental.parallel_interleave, as make_csv_dataset and make_batched_features_dataset read files
        # unless told AUTOTUNE: another op than interleave's (each element handed over between threads: tfx_taxi's
        # one gzip file read 13× slower through it than through interleave), replayed as such
        return {"cycle_length": _value(node._cycle_length), "block_length": _value(node._block_length),
                "num_parallel_calls": None, "deterministic": None, "sloppy": _deterministic(node) is False,
                "buffer_output_elements": _value(node._buffer_output_elements),
                "prefetch_input_elements": _value(node._prefetch_input_elements)}
    if kind == "interleave":
        calls = _tunable(getattr(node, "_num_parallel_calls", None))
        return {"cycle_length": _tunable(node._cycle_length), "block_length": _value(node._block_length),
                "num_parallel_calls": calls,  # without them, deterministic has no effect (a legacy one sets it)
                "deterministic": _deterministic(node) if calls is not None else None}
    if kind == "shard":
        return {"num_shards": _value(node._num_shards), "index": _value(node._index)}
    if kind == "rebatch":
        return {"batch_size": _value(node._batch_sizes)}
    if kind == "parse_example":
        return {"num_parallel_calls": _tunable(getattr(node, "_num_parallel_calls", None)),
                "deterministic": _deterministic(node)}
    if kind == "map_and_batch":
        return {"batch_size": _value(node._batch_size_t), "drop_remainder": bool(_value(node._drop_remainder_t)),
                "num_parallel_calls": _tunable(node._num_parallel_calls_t)}
    if kind == "shuffle_and_repeat":
        return {"buffer_size": _value(node._buffer_size), "count": _value(node._count)}
    return {}


def _function(node: Any) -> Any:
    wrapper = getattr(node, "_map_func", None) or getattr(node, "_predicate", None)
    return None if wrapper is None else wrapper._func


def _inner_reader(node: Any) -> str | None:
    """Give the reader an interleave or flat_map's function opens per element (a file name), if one."""
    wrapper = getattr(node, "_map_func", None)
    if wrapper is None:
        return None
    graph = wrapper.function.graph.as_graph_def()
    ops = {n.op for n in graph.node} | {n.op for f in graph.library.function for n in f.node_def}
    for op, reader in (("TFRecordDataset", "TFRecordDataset"), ("TextLineDataset", "TextLineDataset"),
                       ("FixedLengthRecordDataset", "FixedLengthRecordDataset")):
        if any(o.startswith(op) for o in ops):
            return reader
    return None


def _inner_pipeline(node: Any, function: Any, module: Any) -> tuple[Any, dict] | str:
    """Give the dataset an interleave / flat_map's own function returns for the first element of its input, and the
    dataset calls it made; or why there is none (module docstring)."""
    from pipebench.pipeline.user_code import _SiteRecorder

    if isinstance(function, type):
        return f"its function is TensorFlow's reader {function.__name__.removesuffix('V2')}"
    if not hasattr(function, "__code__"):
        return f"its function is a {type(function).__name__}, not a Python function"
    if str(Path(function.__code__.co_filename).resolve()).startswith(_TF_ROOT) and "<locals>" not in getattr(
            function, "__qualname__", ""):
        return "its function is TensorFlow's reader"  # TFRecordDataset itself: `reads` names it
    try:
        element = next(iter(node._input_dataset.take(1)), None)
    except Exception as err:  # noqa: BLE001 — the upstream fails on its own: the run will say so where it matters
        return f"its input failed to give an element ({type(err).__name__})"
    if element is None:
        return "its input yields no element"
    args = element if isinstance(element, tuple) else (element,)
    try:
        with _SiteRecorder() as recorder:
            inner = function(*args)
    except Exception as err:  # noqa: BLE001 — a function that only runs traced: its pipeline stays one stage
        return f"its function does not run alone on an element ({type(err).__name__})"
    if not isinstance(inner, tf.data.Dataset):
        return f"its function returns a {type(inner).__name__}"
    return inner, recorder.sites


def walk(dataset: Any, sites: dict, module: Any, library_calls: dict | None = None) -> Walked:
    """Give the dataset's stages (module docstring); UsageError for a structure diagnose cannot follow.
    `library_calls`: the library readers' calls the user's function made (pipebench.pipeline.user_code)."""
    walked = _walk(dataset, sites, module)
    calls = library_calls or {}
    walked.library_calls = {s.index: calls[id(walked.nodes[s.index])][:3] for s in walked.stages
                            if s.inside is None and id(walked.nodes[s.index]) in calls}
    depths = _batch_depths(walked)
    walked.stages = [dataclasses.replace(s, batched=d >= 1) for s, d in zip(walked.stages, depths)]
    return walked


def _walk(dataset: Any, sites: dict, module: Any) -> Walked:
    outer = _walk_chain(dataset, sites, module)
    stages, nodes, functions = [], [], []
    notes: dict[int, str] = {}
    for position, stage in enumerate(outer.stages):
        index = len(stages)
        node, function = outer.nodes[position], outer.functions[position]
        found = None
        if stage.kind in _OPENING and function is not None:
            found = _inner_pipeline(node, function, module)
            if isinstance(found, str):
                notes[index] = found
                found = None
        stages.append(dataclasses.replace(stage, index=index, inside=None))
        nodes.append(node)
        functions.append(function)
        if found is None:
            continue
        inner_walked = _walk(found[0], found[1], module)
        for sub in inner_walked.stages:
            parent = index if sub.inside is None else index + 1 + sub.inside
            made = {} if sub.place is not None else {"place": stage.place, "via": stage.via}  # a library's function
            stages.append(dataclasses.replace(sub, index=len(stages), inside=parent, **made))
            nodes.append(inner_walked.nodes[sub.index] if sub.index != len(inner_walked.stages) - 1
                         else inner_walked.root)
            functions.append(inner_walked.functions[sub.index])
        notes.update({index + 1 + key: note for key, note in inner_walked.inner_notes.items()})
    return Walked(stages, nodes, functions, dataset, outer.options, notes)


def _batch_depths(walked: Walked) -> list[int]:
    """Give each stage's batch depth: how many batch dimensions its elements hold (pipebench.pipeline.rows: a row is
    the leading dimension of the label wherever batching happened). Read from what each op does, whoever called it:
    a batching op adds one, unbatch takes one away, and an interleave or flat_map gives what the pipeline its
    function builds gives (that pipeline's source slicing the element takes one away, reading files starts from
    none). The source holds none unless something takes more away than was added (it yields batches), or, with no
    batching anywhere, the elements' label has a leading dimension of unknown size (a generator of batches) or two
    dimensions or more (a label [256, 1]: records that each hold a whole batch; a row's label is a scalar or one
    vector)."""
    stages = walked.stages

    def depths_from(start: int) -> list[int]:
        found = [0] * len(stages)

        def chain(inside: int | None, depth: int) -> int:
            for stage in [s for s in stages if s.inside == inside]:
                if stage.kind in BATCHING:
                    depth += 1
                elif stage.kind in UNBATCHING:
                    depth -= 1
                elif stage.kind in _OPENING:
                    inner = [s for s in stages if s.inside == stage.index]
                    depth = chain(stage.index, _inner_start(walked, stage.index, inner[0].index, depth)) if inner \
                        else 0 if stage.reads or depth == 0 else depth - 1
                found[stage.index] = depth
            return depth

        chain(None, start)
        return found

    found = depths_from(0)
    start = max(0, -min(found))
    if start == 0 and not any(s.kind in BATCHING for s in stages):
        from pipebench.pipeline.rows import label_leaf

        leaf = label_leaf(walked.root.element_spec)
        shape = getattr(leaf, "shape", None)
        if shape is not None and shape.rank and (shape[0] is None or shape.rank >= 2):
            start = 1
    return depths_from(start) if start else found


def _inner_start(walked: Walked, parent: int, source: int, above: int) -> int:
    """Give the batch depth the source of an interleave's pipeline starts at: its input element's, less one when it
    slices that element (from_tensor_slices of it: the same components one rank lower), the same when it holds it
    whole, else none (a reader of the file it is given)."""
    try:
        given = tf.nest.flatten(walked.nodes[parent]._input_dataset.element_spec)
        made = tf.nest.flatten(walked.nodes[source].element_spec)
    except (AttributeError, TypeError, ValueError):
        return 0
    if len(given) != len(made) or any(g.dtype != m.dtype for g, m in zip(given, made)):
        return 0
    ranks = [(g.shape.rank, m.shape.rank) for g, m in zip(given, made)]
    if all(r is not None and m == r - 1 for r, m in ranks):
        return above - 1
    if all(r == m for r, m in ranks):
        return above
    return 0


def _walk_chain(dataset: Any, sites: dict, module: Any) -> Walked:
    """Give the stages of one chain, from its source to `dataset` (no inner pipelines), each named by the op
    TensorFlow runs for it and by the call that made it."""
    nodes = _chain(dataset)
    ops = dict(zip(map(id, nodes), graph_ops(dataset, nodes)))
    options = set_options(dataset.options())
    groups = _groups(nodes, sites)
    raw = []
    for position, (members, site) in enumerate(groups):
        node = members[-1]
        op = type(node).__name__
        call_name = site.call if site else None
        kind = "source" if position == 0 else _CALL_KINDS.get(call_name, _KINDS.get(op, "other"))
        if kind == "source" and position > 0:
            kind = "other"
        raw.append((members, site, node, op, kind))
    stages, kept, functions = [], [], []
    for position, (members, site, node, op, kind) in enumerate(raw):
        call_name = site.call if site else None
        params = _params(kind, node) if (kind != "source" or op in _READERS) else _slices(members)
        if kind == "source" and len(node._inputs()) > 1:
            params = {"combines": len(node._inputs())}
        function = _function(node) if kind in ("map", "filter", "interleave", "flat_map", "map_and_batch") else None
        record = user_function(function, module) if function is not None else None
        stateful = (stateful_ops((getattr(node, "_map_func", None) or node._predicate).function)
                    if kind in ("map", "filter", "map_and_batch") else None)
        following = raw[position + 1][4] if position + 1 < len(raw) else None
        reads = params.get("reader") if kind == "source" else _inner_reader(node) if kind in _OPENING else None
        stages.append(Stage(
            index=position, kind=kind, ops=tuple(type(m).__name__ for m in reversed(members)),
            call=call_text(kind, params, record, ops[id(node)], call_name),
            place=site.place if site else None, function=record,
            parallelism=str(params["cycle_length"]) if params.get("sloppy") is not None  # a thread per input
            else None if params.get("num_parallel_calls") is None else str(params["num_parallel_calls"]),
            buffer_size=None if params.get("buffer_size") is None or kind == "source" else str(params["buffer_size"]),
            deterministic=params.get("deterministic"), drop_remainder=params.get("drop_remainder"),
            stateful_ops=stateful, tf_does=tf_does(kind, params, stateful, options, following, following is None, op),
            batched=False, reads=reads, params=params, inside=None, op=ops[id(node)],
            via=site.via if site else None))
        kept.append(node)
        functions.append(function)
    return Walked(stages, kept, functions, dataset, options)
