"""spec → tf.data.Dataset of `({"feat_ids": int64[B, F], "feat_vals": float32[B, F]}, label float32[B])`.

`decode` is scalar (one row per call: `parse_single_example`, one libsvm line) when it comes before
`batch`, vectorized (`parse_example`, one `tf.strings.split` over a whole batch of lines) after.

Packed records hold `rows_per_record` rows (the data set's last record may hold fewer). A batch
placed before decode therefore groups ⌈batch_size / rows_per_record⌉ records, decode unpacks
them with one `decode_raw`, and `rebatch` cuts exactly batch_size rows (drop_remainder as asked):
any batch size works, and when batch_size is a multiple of rows_per_record the rebatch only copies.
Scalar decode unpacks one record and unbatches its rows, so later stages see rows as in the other
formats.

Source modes (pipebench.sources): `file` reads the files (optionally evicting each from the page
cache as it opens), `fastfile` reads them behind an emulated remote link (a wait per file opened)
unless `sources.fastfile.emulate` is false, and `pipe` reads a channel through SageMaker's
PipeModeDataset (TextLine for libsvm, TFRecord otherwise). Without emulation all three read exactly
as the exported input_fn does. `service` builds the same pipeline and runs the stages before
`sources.service.split_before` on tf.data service workers (reading as `sources.service.read` says).

The decoders and helpers are pipebench.pipeline.decoders': export.py copies their source into the
modules it writes, so exported input_fns decode exactly as the builder does.
A walked pipeline (pipebench.pipeline.stages) is built here too, from its steps (`replay`, for pipebench diagnose):
the original's steps are its stages' arguments (`steps_of`); a rewrite changes, moves or adds steps. Replaying reuses
the original's source dataset as it is (unless a rewrite changes how it reads) and calls each later stage's public
method with the arguments the stage had, every one of them, the user's own function included (its Python function,
traced again). The root's options are applied last, as they merged there in the original. pipebench.diagnose.export
writes the same steps into the user's calls. A step's `function` says how its function is made: "user" (the stage's
own), "parse_example" (it parsing a whole batch: pipebench.pipeline.decoders.batched_parse), "vectorized_map"
(`tf.vectorized_map` of it over a batch, pfor without its while-loop fallback), "gather" (the rows of an in-memory
source gathered for a batch of their numbers: pipebench.diagnose.rewrites.gather), or "libsvm" (the batched libsvm
decoder, reshaped to the user's structure: pipebench.pipeline.decoders.libsvm_batch_decoder).
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tensorflow as tf

from pipebench.converters import MANIFEST, TF_COMPRESSION
from pipebench.converters.manifest import read_manifest
from pipebench.config import resolve_block
from pipebench.config.service import split_index
from pipebench.errors import ConfigError
from pipebench.pipeline import decoders
from pipebench.pipeline.decoders import (apply_options, batched_parse, example_decoder, libsvm_batch_decoder,
                                         libsvm_decoder, list_files, packed_decoder, scalar_decoder, vectorized)
from pipebench.pipeline.spec import AUTOTUNE, MEMORY, PipelineSpec, Source, Tunable
from pipebench.pipeline.stages import Step
from pipebench.pipeline.walk import Walked, walk
from pipebench.sources.readers import hooked_reader, open_hook, pipe_records, through_service
from pipebench.typed import to_json


@dataclass
class Built:
    """A built pipeline: the dataset, the files it reads, the options this TensorFlow could not set.

    `open_hook` runs as each file opens (a FastFile FetchLink, whose `fetches` log them, or a page-cache
    eviction); `source_note` labels what the source emulates, if anything.
    """

    dataset: tf.data.Dataset
    files: list[str]
    unsupported_options: list[str]
    open_hook: Callable[[str], float] | None = None
    source_note: str | None = None
    split_part: tf.data.Dataset | None = None  # service mode: the part the workers run, as built here


def _tf(value: Tunable | Any) -> Any:
    return tf.data.AUTOTUNE if value == AUTOTUNE else value


def _reader(source: Source, files, parallel: bool, hook=None) -> tf.data.Dataset:
    """Give the records of `files` (paths, or one filename tensor in an interleave); `hook` runs per file opened."""
    reader = tf.data.TextLineDataset if source.format == "libsvm" else tf.data.TFRecordDataset
    read_args = {"compression_type": TF_COMPRESSION[source.compression], "buffer_size": source.buffer_size}
    parallel_reads = _tf(source.num_parallel_reads) if parallel else None
    if hook is not None:
        return hooked_reader(reader, files, parallel_reads, hook, **read_args)
    return reader(files, num_parallel_reads=parallel_reads, **read_args)


def _check_manifests(source: Source, files: list[str]) -> None:
    """Raise ConfigError when a converter manifest beside the files contradicts the source."""
    for folder in sorted({Path(f).parent for f in files}):
        path = folder / MANIFEST
        if not path.is_file():
            continue
        manifest = read_manifest(path)
        stated = {"format": manifest.format, "compression": manifest.compression, "field_size": manifest.field_size,
                  "rows_per_record": manifest.packed_layout and manifest.packed_layout.rows_per_record}
        for name, value in stated.items():
            if value is not None and (name != "rows_per_record" or source.format == "packed") \
                    and getattr(source, name) != value:
                raise ConfigError(f"source.{name}: {getattr(source, name)!r}, but {path} says {value!r}")


def build(spec: PipelineSpec, sources: dict | None = None, stages: int | None = None) -> Built:
    """Give the spec's dataset, reading as its source mode says, with the `sources:` settings of an experiment.

    `stages` builds only the source and the first that many stages (a prefix, pipebench.pipeline.prefixes),
    each as it is built in the whole pipeline (a packed batch before decode still batches records).

    Pipe mode reads the channel's FIFOs (the folders in `sources.pipe`; pipebench.sources.session
    starts an emulator and fills them in), never the files: they are what the channel streams (on
    SageMaker, S3 objects), so `Built.files` is empty. Raises UnavailableError when
    PipeModeDataset cannot be imported here.
    """
    source = spec.source
    settings = resolve_block("sources", sources)
    served = source.mode == "service"
    reading = settings["service"]["read"] if served else source.mode
    files: list[str] = []
    if reading != "pipe":
        if not source.files:
            raise ConfigError("source.files: no files given")
        try:
            files = list_files(source.files)
        except FileNotFoundError as err:
            raise ConfigError(f"source.files: {err}") from None
        _check_manifests(source, files)
    hook, source_note = open_hook(reading, settings)

    packed = source.format == "packed"
    decode_batch, decode_one = _decoders(source)
    interleaved = "interleave" in spec.kinds
    if reading == "pipe":
        dataset = pipe_records(source, settings["pipe"])
    elif interleaved:
        dataset = tf.data.Dataset.from_tensor_slices(files)
    else:
        dataset = _reader(source, files, parallel=True, hook=hook)
    batch = None
    split = split_index(spec, settings["service"]) if served else None
    split_part = None
    for at, stage in enumerate(spec.stages[:stages]):
        if at == split:
            split_part, dataset = dataset, through_service(dataset, settings["service"])
        kind = stage.kind
        if kind == "interleave":
            dataset = dataset.interleave(lambda f: _reader(source, f, parallel=False, hook=hook),
                                         cycle_length=_tf(stage["cycle_length"]), block_length=stage["block_length"],
                                         num_parallel_calls=_tf(stage["num_parallel_calls"]))
        elif kind == "shard":
            dataset = dataset.shard(stage["num_shards"], stage["index"])
        elif kind == "shuffle":
            dataset = dataset.shuffle(stage["buffer_size"], seed=stage["seed"],
                                      reshuffle_each_iteration=stage["reshuffle_each_iteration"])
        elif kind == "cache":
            dataset = dataset.cache("" if stage["location"] == MEMORY else stage["location"])
        elif kind == "batch":
            batch = stage
            if packed and spec.kinds.index("decode") > spec.kinds.index("batch"):
                dataset = dataset.batch(-(-stage["batch_size"] // source.rows_per_record))
            else:
                dataset = dataset.batch(stage["batch_size"], drop_remainder=stage["drop_remainder"])
        elif kind == "decode":
            parallel = _tf(stage["num_parallel_calls"])
            if batch is None:
                dataset = dataset.map(decode_one, num_parallel_calls=parallel)
                if packed:
                    dataset = dataset.unbatch()
            else:
                dataset = dataset.map(decode_batch, num_parallel_calls=parallel)
                if packed:
                    dataset = dataset.rebatch(batch["batch_size"], drop_remainder=batch["drop_remainder"])
        elif kind == "repeat":
            dataset = dataset.repeat(stage["epochs"])
        elif kind == "prefetch":
            dataset = dataset.prefetch(_tf(stage["buffer_size"]))
    dataset, unsupported = apply_options(dataset, dict(spec.options.settings))
    return Built(dataset, files, unsupported, hook, source_note, split_part)


def _decoders(source: Source) -> tuple[Callable, Callable]:
    """Give the source format's decoders: of a batch of records, and of one record (a packed record: its rows)."""
    if source.format == "libsvm":
        decode_batch = libsvm_decoder(source.field_size)
        return decode_batch, scalar_decoder(decode_batch)
    if source.format == "tfrecord":
        return example_decoder(source.field_size, single=False), example_decoder(source.field_size, single=True)
    decode_batch = packed_decoder(source.field_size, source.rows_per_record)
    return decode_batch, lambda record: decode_batch(tf.expand_dims(record, 0))


# --- a walked pipeline's steps (pipebench diagnose) ---------------------------------------------------------------

#: Stage kinds the replay can call again from their arguments alone.
REPLAYABLE = ("source", "map", "batch", "unbatch", "shuffle", "prefetch", "repeat", "cache", "interleave", "flat_map",
              "filter", "take", "skip", "shard", "parse_example", "map_and_batch", "shuffle_and_repeat",
              "ignore_errors")
_FUNCTION_KINDS = ("map", "interleave", "flat_map", "filter", "map_and_batch")


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
        return vectorized(own)
    if step.function == "parse_example":
        return batched_parse(own)
    if step.function == "libsvm":
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
