"""A TF1 input_fn's dataset, captured behind its iterator before anything is iterated.

SageMaker's TF1 scripts end their input_fn with `tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()`
(or an initializable iterator), returning tensors for an Estimator to feed. Run eagerly, that iterator would
start the pipeline (a prefetch(500000) fills for minutes) only for pipebench to find tensors, not a dataset.

While the user's function runs, `capturing()` replaces the iterator makers (`tf.compat.v1.data`'s functions,
`DatasetV1`'s methods, `Iterator.from_structure(...).make_initializer(dataset)`) with ones that record the
dataset and hand back an iterator whose `get_next()` gives *stand-ins* for the element's tensors, nothing
run. The function then returns those stand-ins, as they are or restructured (`features, labels =
get_next()`, `features.pop("label")`): `dataset_of` gives the captured dataset, mapped to the returned structure
when that differs.

A function that computes on the stand-ins (a cast of the label, a label looked up in a hash table) is called once
more, traced as TensorFlow 1 traces it (`tf.compat.v1.wrap_function`), where `get_next()` gives placeholders: the
graph between them and the returned tensors is the computation, pruned to a function of the element
(`computed_after_get_next`), its tables initialised once, and the dataset captured in the first call ends in a map
of it. Only what cannot be a function of one element is refused, with why: ops that keep state from element to
element (a variable assigned, a queue, a second iterator).

`tf.compat.v1.disable_eager_execution()` and `disable_v2_behavior()` are ignored while the user's module is
imported and its function called (pipebench measures eagerly, as TF2 runs); `ignored_calls` says where.

The module holds no pipebench import: the rewritten module of a TF1 input_fn copies `dataset_of_tf1` and what
it uses (pipebench.pipeline.export) so that it returns the dataset by itself.
"""
from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from typing import Any

import tensorflow as tf


class Standin:
    """One component of a captured iterator's element: what the user's code gets in place of a tensor."""

    def __init__(self, position: int) -> None:
        self.position = position

    def __repr__(self) -> str:
        return f"<component {self.position} of the element get_next() gives>"


class CapturedIterator:
    """What a TF1 iterator maker returns while capturing: the dataset, and stand-ins for its element (placeholders,
    when traced as TensorFlow 1 traces: `computed_after_get_next`)."""

    def __init__(self, dataset: Any, how: str, caller: tuple[str, int]) -> None:
        self.dataset, self.how, self.caller = dataset, how, caller
        self.initializer = None  # `sess.run(iterator.initializer)` has nothing to run: nothing was started
        self.placeholders: Any = None  # the element's placeholders, when get_next() was called in a graph

    @property
    def element_spec(self) -> Any:
        return self.dataset.element_spec

    def make_initializer(self, dataset: Any, name: str | None = None) -> None:
        self.dataset = dataset

    def get_next(self, name: str | None = None) -> Any:
        spec = self.dataset.element_spec
        if not tf.executing_eagerly():  # the user's code may pop from what it gets: it gets a copy
            self.placeholders = tf.nest.map_structure(_placeholder, spec)
            return tf.nest.map_structure(lambda leaf: leaf, self.placeholders)
        leaves = tf.nest.flatten(spec)
        return tf.nest.pack_sequence_as(spec, [Standin(i) for i in range(len(leaves))])


def _placeholder(spec: Any) -> Any:
    if isinstance(spec, tf.SparseTensorSpec):
        return tf.compat.v1.sparse_placeholder(spec.dtype, spec.shape)
    return tf.compat.v1.placeholder(spec.dtype, spec.shape)


class Capture:
    """What `capturing()` saw: the iterators made, and the TF1 switches the user's code asked for."""

    def __init__(self) -> None:
        self.iterators: list[CapturedIterator] = []
        self.ignored_calls: list[tuple[str, str, int]] = []  # (call, file, line)


def _caller() -> tuple[str, int]:
    """Give the file and line of the first frame outside TensorFlow and this module."""
    frame = sys._getframe(2)
    while frame is not None and ("/tensorflow/" in frame.f_code.co_filename
                                 or frame.f_code.co_filename == __file__):
        frame = frame.f_back
    return (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("?", 0)


@contextlib.contextmanager
def capturing() -> Iterator[Capture]:
    """Replace TF1's iterator makers and eager switches for the block (module docstring); give what was seen."""
    from tensorflow.python.data.ops import dataset_ops, iterator_ops

    seen = Capture()
    saved: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, replacement: Any) -> None:
        if hasattr(owner, name):
            saved.append((owner, name, owner.__dict__[name] if name in getattr(owner, "__dict__", {}) else
                          getattr(owner, name)))
            setattr(owner, name, replacement)

    def maker(how: str):
        def make(dataset, *args, **kwargs):
            made = CapturedIterator(dataset, how, _caller())
            seen.iterators.append(made)
            return made
        return make

    def from_structure(*args, **kwargs):
        made = CapturedIterator(None, "Iterator.from_structure", _caller())
        seen.iterators.append(made)
        return made

    def ignored(name: str):
        def call(*args, **kwargs):
            seen.ignored_calls.append((name, *_caller()))
        return call

    compat_data = tf.compat.v1.data
    for name in ("make_one_shot_iterator", "make_initializable_iterator"):
        patch(compat_data, name, maker(f"tf.compat.v1.data.{name}"))
        patch(dataset_ops, name, maker(f"tf.compat.v1.data.{name}"))
        patch(dataset_ops.DatasetV1, name, maker(f"dataset.{name}()"))  # as a method: `self` is the dataset
    patch(iterator_ops.Iterator, "from_structure", staticmethod(from_structure))
    for name in ("disable_eager_execution", "disable_v2_behavior"):
        patch(tf.compat.v1, name, ignored(f"tf.compat.v1.{name}()"))
    try:
        yield seen
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)


def _standins(value: Any) -> list[Standin] | None:
    """Give the stand-ins a returned value is made of, in tf.nest order, or None when it holds anything else."""
    try:
        leaves = tf.nest.flatten(value)
    except (TypeError, ValueError):
        return None
    return leaves if leaves and all(isinstance(leaf, Standin) for leaf in leaves) else None


def dataset_of(returned: Any, seen: Capture) -> tuple[Any, str] | str | None:
    """Give (the dataset the returned value stands for, how it was made) when the function returned a captured
    iterator's stand-ins (restructured by a map when the structure differs); a reason when it returned something
    else after capturing an iterator; None when it captured none."""
    made = [i for i in seen.iterators if i.dataset is not None]
    if not made:
        return None
    iterator = made[-1]
    leaves = _standins(returned)
    if leaves is None:
        return (f"it returned {type(returned).__name__}, not the tensors {iterator.how} gave "
                f"({iterator.caller[0].rpartition('/')[2]}:{iterator.caller[1]})")
    dataset = iterator.dataset
    positions = [leaf.position for leaf in leaves]
    spec = dataset.element_spec
    if positions == list(range(len(tf.nest.flatten(spec)))):
        try:
            tf.nest.assert_same_structure(returned, spec)
            return dataset, iterator.how
        except (TypeError, ValueError):
            pass
    structure = tf.nest.map_structure(lambda leaf: leaf.position, returned)

    def restructure(*element):
        flat = tf.nest.flatten(element if len(element) > 1 else element[0])
        return tf.nest.map_structure(lambda position: flat[position], structure)

    restructure.__qualname__ = "get_next() restructured as returned"

    return dataset.map(restructure), iterator.how + " (its element restructured as the function returned it)"


#: Ops that keep state from one element to the next: a computation holding one is no function of an element.
_STATEFUL = re.compile(r"Assign|Scatter|Queue|Iterator|Reader|Barrier|Accumulator|Stage|CountUpTo")


def computed_after_get_next(function: Any, dataset: Any, *args: Any, **kwargs: Any) -> tuple[Any, str] | str:
    """Give (`dataset` ending in a map of what `function` computes after get_next(), how) by calling the function
    once more traced as TensorFlow 1 traces it (module docstring); why not, when the computation is no function of
    one element."""
    with capturing() as seen:
        try:
            wrapped = tf.compat.v1.wrap_function(lambda: function(*args, **kwargs), [])
        except Exception as err:  # noqa: BLE001 — the user's code, traced: say what it raised
            return f"traced as TensorFlow 1 traces it, it raised {type(err).__name__}: {str(err)[:120]}"
    made = [i for i in seen.iterators if i.placeholders is not None]
    if not made:
        return "traced as TensorFlow 1 traces it, it made no iterator"
    returned = wrapped.structured_outputs
    fetches = tf.nest.flatten(returned, expand_composites=True)
    if not fetches or not all(tf.is_tensor(t) for t in fetches):
        return "it returns something other than tensors"
    graph = wrapped.graph
    initializers = graph.get_collection(tf.compat.v1.GraphKeys.TABLE_INITIALIZERS)
    feeds = tf.nest.flatten(made[-1].placeholders, expand_composites=True)
    try:
        if initializers:
            wrapped.prune([], initializers)()
        pruned = wrapped.prune(feeds, fetches)
    except Exception as err:  # noqa: BLE001 — a graph that cannot be cut at get_next(): its state spans elements
        return f"its computation cannot be cut at get_next() ({type(err).__name__}: {str(err)[:100]})"
    state = sorted({op.type for op in pruned.graph.get_operations() if _STATEFUL.search(op.type)})
    if state:
        return f"its computation keeps state from element to element ({', '.join(state)})"

    def computed(*element: Any) -> Any:
        flat = tf.nest.flatten(element if len(element) > 1 else element[0], expand_composites=True)
        return tf.nest.pack_sequence_as(returned, pruned(*flat), expand_composites=True)

    computed.__qualname__ = f"{getattr(function, '__name__', 'input_fn')} after get_next()"
    return dataset.map(computed), made[-1].how + " (what the function computes after get_next() mapped on it)"


def dataset_of_tf1(function: Any, *args: Any, **kwargs: Any) -> Any:
    """Give the tf.data.Dataset behind the iterator a TF1 input_fn returns `get_next()` of, or the dataset itself
    when it returns one (what pipebench diagnose measured; the pipeline does not start until iterated)."""
    with capturing() as seen:
        try:
            returned = function(*args, **kwargs)
        except Exception:
            if not seen.iterators:
                raise
            returned = None  # it computed on the stand-ins
    if isinstance(returned, tf.data.Dataset):
        return returned
    found = dataset_of(returned, seen) if returned is not None else None
    if returned is None or isinstance(found, str):
        found = computed_after_get_next(function, seen.iterators[-1].dataset, *args, **kwargs)
    if not isinstance(found, tuple):
        raise ValueError(f"{getattr(function, '__name__', 'the function')} returned no dataset: "
                         f"{found or 'it made no TF1 iterator'}")
    return found[0]
