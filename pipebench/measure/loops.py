"""The loops that read a pipeline and train on it, and how rows and bytes are counted: what the trial worker
(pipebench.measure.worker) and the diagnosis worker (pipebench.diagnose.subject) both time. TensorFlow is handed in.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipebench.measure.cpu_clock import process_tree_cpu_sec
from pipebench.measure.windows import Arm, Loop


def examples_counter(tf, spec) -> Callable:
    """Give count(element) → int64 examples in one element of the spec's dataset or of any prefix of it.

    A decoded element counts its labels (one, or a batch's); an undecoded one its records (one, or a
    batch's), and a packed record the rows its bytes hold.
    """
    row_bytes = 4 * (1 + 2 * spec.source.field_size)

    def count(element):
        if isinstance(element, tuple):
            return tf.size(element[1], out_type=tf.int64)
        if spec.source.format == "packed":
            return tf.cast(tf.reduce_sum(tf.strings.length(element)), tf.int64) // row_bytes
        return tf.size(element, out_type=tf.int64)
    return count


def input_loop(tf, count: Callable, per_step: int = 1):
    """Give the input arm's loop: count examples inside a tf.function, no per-batch Python work.

    `per_step` > 1: each element stands for that many (the shard(K, 0) sink of a prefix; pipebench.pipeline.prefixes).
    """
    @tf.function
    def run(iterator, steps):
        examples = tf.constant(0, tf.int64)
        for _ in tf.range(steps):
            element = iterator.get_next_as_optional()
            if not element.has_value():
                break
            examples += count(element.get_value()) * per_step
        return examples

    def loop(iterator, steps: int) -> tuple[int, float]:
        return int(run(iterator, tf.constant(steps, tf.int64))), 0.0

    return loop


def train_arms(tf, loop: Loop, pipelines: list[tuple[str, Any, bool]]) -> tuple[list[Arm], Any]:
    """Give a train arm per pipeline (name, the dataset the step takes, releasable) and the synthetic arm: the same
    step on the first pipeline's first batch served from memory, forever (the compute ceiling, timed once beside
    them all); and that batch. Trials and pipebench diagnose's train terms time the same arms."""
    first = next(iter(pipelines[0][1]))
    batch = tf.data.Dataset.from_tensors(first).repeat()
    arms = [Arm(name, lambda one=one: iter(one), loop, releasable=releasable, cpu_clock=process_tree_cpu_sec)
            for name, one, releasable in pipelines]
    return [*arms, Arm("synthetic", lambda: iter(batch), loop, cpu_clock=process_tree_cpu_sec)], first


def element_bytes(tf, element) -> int:
    """Give what an element holds in memory: strings by their length, other tensors by their size; a sparse or ragged
    tensor by the components it is made of (its values and indices, not its dense shape)."""
    return sum(int(tf.reduce_sum(tf.strings.length(t))) if t.dtype == tf.string else int(tf.size(t)) * t.dtype.size
               for t in tf.nest.flatten(element, expand_composites=True))
