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
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import tensorflow as tf

from pipebench.converters import MANIFEST, TF_COMPRESSION
from pipebench.converters.manifest import read_manifest
from pipebench.config import resolve_block
from pipebench.config.service import split_index
from pipebench.errors import ConfigError
from pipebench.pipeline.decoders import (apply_options, example_decoder, libsvm_decoder, list_files, packed_decoder,
                                         scalar_decoder)
from pipebench.pipeline.spec import AUTOTUNE, MEMORY, PipelineSpec, Source, Tunable
from pipebench.sources.readers import hooked_reader, open_hook, pipe_records, through_service


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


def _tf(value: Tunable) -> int | None:
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
