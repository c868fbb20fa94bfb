"""Steps (pipebench.diagnose.records.Step) back into a tf.data.Dataset: the original pipeline or a rewrite of it.

The original's steps are its stages' arguments (`steps_of`); a rewrite changes, moves or adds steps.
Replaying reuses the original's source dataset as it is (unless a rewrite changes how it reads) and
calls each later stage's public method with the arguments the stage had, every one of them, the
user's own function included (its Python function, traced again). The root's options are applied
last, as they merged there in the original. pipebench.diagnose.export writes the same steps as code.

A step's `function` says how its function is made: "user" (the stage's own), "parse_example" (the stage's
function parsing a whole batch: pipebench.pipeline.decoders.batched_parse), "vectorized_map"
(`tf.vectorized_map` of the stage's function over a batch, pfor without its while-loop fallback), "gather" (the
rows of an in-memory source gathered for a batch of their numbers: pipebench.diagnose.rewrites.gather), or
"libsvm" (the batched libsvm decoder of pipebench.pipeline.decoders, reshaped to the user's structure:
pipebench.diagnose.vectorize).
"""
from __future__ import annotations

import inspect
from typing import Any

import tensorflow as tf

from pipebench.diagnose.records import AUTOTUNE, Step
from pipebench.diagnose.walk import Walked, walk
from pipebench.typed import to_json

#: Stage kinds the replay can call again from their arguments alone.
REPLAYABLE = ("source", "map", "batch", "unbatch", "shuffle", "prefetch", "repeat", "cache", "interleave", "flat_map",
              "filter", "take", "skip", "shard", "parse_example", "map_and_batch", "shuffle_and_repeat",
              "ignore_errors")
_FUNCTION_KINDS = ("map", "interleave", "flat_map", "filter", "map_and_batch")


def _tf(value: Any) -> Any:
    return tf.data.AUTOTUNE if value == AUTOTUNE else value


def steps_of(walked: Walked) -> tuple[tuple[Step, ...], str | None]:
    """Give the original pipeline as steps, or () and why a stage cannot be replayed."""
    steps = []
    for stage in walked.stages:
        if stage.inside is not None:  # built by an interleave's function, which the replay calls as it is
            continue
        if stage.kind not in REPLAYABLE:
            return (), f"stage {stage.index} {stage.call} ({', '.join(stage.ops)}) cannot be replayed"
        if stage.kind == "source" and "reader" not in stage.params and stage.index != 0:
            return (), f"stage {stage.index} is a second source"
        steps.append(Step(stage.kind, dict(stage.params), stage.index,
                          "user" if stage.kind in _FUNCTION_KINDS else None))
    return tuple(steps), None


def _source(step: Step, walked: Walked, files: int | None, one_epoch: bool):
    original = walked.nodes[0]
    if "indices" in step.args:  # the row numbers of an in-memory source (rewrites.gather)
        return tf.data.Dataset.range(step.args["indices"])
    if "restructured" in step.args:  # a library reader's pipeline, restructured (rewrites.restructured)
        from pipebench.pipeline import decoders

        name, args, kwargs = walked.library_calls[step.origin]
        build = getattr(decoders, f"pipebench_{name}")
        if one_epoch:  # its own repeat (num_epochs) goes as the original's repeat stage goes
            bound = inspect.signature(build).bind(*args, **kwargs)
            bound.arguments["drop_remainder"] = bound.arguments.get("num_epochs") is None  # as it batches
            bound.arguments["num_epochs"] = 1
            args, kwargs = bound.args, bound.kwargs
        return build(*args, **kwargs)
    if files is not None and "slices" in step.args:
        return tf.data.Dataset.from_tensor_slices(step.args["slices"][:files])
    if to_json(step.args) == to_json(walked.stages[0].params) and files is None:  # a step read from JSON too
        return original
    reader = {"TextLineDataset": tf.data.TextLineDataset, "TFRecordDataset": tf.data.TFRecordDataset}[step.args["reader"]]
    names = original._filenames if files is None else step.args["files"][:files]
    return reader(names, compression_type=step.args["compression_type"], buffer_size=step.args["buffer_size"],
                  num_parallel_reads=_tf(step.args["num_parallel_reads"]))


def step_function(step: Step, walked: Walked):
    """Give the Python function a step maps with (module docstring)."""
    if step.function == "gather":
        return gathered(walked.nodes[0])
    own = walked.functions[step.origin]
    if step.function == "user":
        return own
    if step.function == "vectorized_map":
        from pipebench.diagnose.vectorize import vectorized

        return vectorized(own)
    if step.function == "parse_example":
        from pipebench.pipeline.decoders import batched_parse

        return batched_parse(own)
    if step.function == "libsvm":
        from pipebench.diagnose.vectorize import libsvm_batch_decoder

        return libsvm_batch_decoder(step.args["libsvm"])
    raise ValueError(f"unknown step function {step.function!r}")


def gathered(source):
    """Give the function that gathers a batch of row numbers' rows from an in-memory source (a from_tensor_slices
    dataset): what batching its sliced rows would give."""
    tensors, spec = source._tensors, source.element_spec

    def gather(indices):
        return tf.nest.pack_sequence_as(spec, [tf.gather(t, indices) for t in tensors])
    return gather


def _apply(dataset, step: Step, walked: Walked):
    a = step.args
    kind = step.kind
    if kind == "map":
        return dataset.map(step_function(step, walked), num_parallel_calls=_tf(a["num_parallel_calls"]),
                           deterministic=a["deterministic"])
    if kind == "batch":
        return dataset.batch(a["batch_size"], drop_remainder=a["drop_remainder"],
                             num_parallel_calls=_tf(a["num_parallel_calls"]), deterministic=a["deterministic"])
    if kind == "unbatch":
        return dataset.unbatch()
    if kind == "shuffle":
        return dataset.shuffle(a["buffer_size"], seed=a["seed"], reshuffle_each_iteration=a["reshuffle_each_iteration"])
    if kind == "prefetch":
        return dataset.prefetch(_tf(a["buffer_size"]))
    if kind == "repeat":
        return dataset.repeat(a["count"])
    if kind == "cache":
        return dataset.cache(a["filename"])
    if kind == "interleave" and a.get("sloppy") is not None:  # the legacy op, as the walk read it
        return dataset.apply(tf.data.experimental.parallel_interleave(
            step_function(step, walked), cycle_length=a["cycle_length"], block_length=a["block_length"],
            sloppy=a["sloppy"], buffer_output_elements=a["buffer_output_elements"],
            prefetch_input_elements=a["prefetch_input_elements"]))
    if kind == "interleave":
        return dataset.interleave(step_function(step, walked), cycle_length=_tf(a["cycle_length"]),
                                  block_length=a["block_length"], num_parallel_calls=_tf(a["num_parallel_calls"]),
                                  deterministic=a["deterministic"])
    if kind == "flat_map":
        return dataset.flat_map(step_function(step, walked))
    if kind == "filter":
        return dataset.filter(step_function(step, walked))
    if kind in ("take", "skip"):
        return getattr(dataset, kind)(a["count"])
    if kind == "shard":
        return dataset.shard(a["num_shards"], a["index"])
    # library functions' ops (tf.data.experimental's), made again as they were: what is not a plain value (a feature
    # spec) read from the original's node
    if kind == "parse_example":
        features = walked.nodes[step.origin]._features
        return dataset.apply(tf.data.experimental.parse_example_dataset(
            features, num_parallel_calls=_tf(a["num_parallel_calls"]) or 1, deterministic=a["deterministic"]))
    if kind == "map_and_batch":
        return dataset.apply(tf.data.experimental.map_and_batch(
            step_function(step, walked), a["batch_size"], num_parallel_calls=_tf(a["num_parallel_calls"]),
            drop_remainder=a["drop_remainder"]))
    if kind == "shuffle_and_repeat":
        return dataset.shuffle(a["buffer_size"]).repeat(None if a["count"] == -1 else a["count"])
    if kind == "ignore_errors":
        return dataset.ignore_errors()
    raise ValueError(f"step {kind} cannot be replayed")


def options_of(settings: dict[str, Any]) -> tf.data.Options:
    """Give tf.data.Options with the dotted paths set (pipebench.pipeline.decoders.apply_options' reading of them)."""
    from pipebench.pipeline.decoders import apply_options

    dataset, _ = apply_options(tf.data.Dataset.range(1), settings)
    return dataset.options()


def replay(steps: tuple[Step, ...], walked: Walked, options: dict[str, Any] | None = None, one_epoch: bool = False,
           files: int | None = None):
    """Give the dataset the steps build, with the root's options (and `options` on top); `one_epoch`: without
    repeat; `files`: reading only the first that many of the source's files."""
    dataset = None
    for step in steps:
        if step.kind == "source":
            dataset = _source(step, walked, files, one_epoch)
        elif not (one_epoch and step.kind == "repeat"):
            dataset = _apply(dataset, step, walked)
    dataset = dataset.with_options(walked.root.options())
    if options:
        dataset = dataset.with_options(options_of(options))
    return dataset


def replay_differs(steps: tuple[Step, ...], walked: Walked) -> str | None:
    """Give why replaying the steps does not rebuild the user's pipeline (its outer stages compared one by one),
    or None."""
    mine = walk(replay(steps, walked), {}, None).stages
    theirs = walked.stages
    source = len(theirs[0].ops)
    if source > 1 and [s.ops for s in mine[:source]] == [(op,) for op in reversed(theirs[0].ops)]:
        # the replay starts from the user's own source (list_files: its slices and their shuffle), which a walk
        # that does not know the user's calls lists node by node
        mine = [theirs[0], *mine[source:]]
    # the stages an interleave's function builds are not replayed but built by the function as it is (and from
    # another first file when the file list is shuffled)
    if [(s.kind, s.params) for s in mine if s.inside is None] \
            != [(s.kind, s.params) for s in theirs if s.inside is None]:
        return "replaying its stages gives another pipeline: " + " ".join(s.call for s in mine)[:160]
    # and the ops TensorFlow runs for them: the same arguments to another op read at another speed (the legacy
    # parallel_interleave replayed as interleave read 13× the user's pipeline, every rewrite credited with it)
    differ = [(a.op, b.op) for a, b in zip([s for s in mine if s.inside is None],
                                           [s for s in theirs if s.inside is None]) if a.op != b.op]
    if differ:
        return ("replaying its stages runs other ops: "
                + ", ".join(f"{mine_op} for {their_op}" for mine_op, their_op in differ))[:200]
    return None
