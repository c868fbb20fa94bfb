"""Named pipelines reproducing the references' stage order and parameters, and name-or-file lookup.

- `aws-sample`: the AWS SageMaker DeepFM sample's File-mode input_fn
  (aws-samples/deepfm-tensorflow-distributed-training-on-amazon-sagemaker,
  1-ps-cpu/DeepFM-dist-ps-for-multipleCPU-multiInstance.py): `TFRecordDataset(files)` →
  [`shard(hosts, rank)`] → `batch(drop_remainder=True)` → `map(parse_example, AUTOTUNE)` →
  `repeat(epochs)` → `prefetch(AUTOTUNE)`.
- `lambdaji-libsvm`: lambdaji/tf_repos deep_ctr DeepFM.py input_fn with perform_shuffle:
  `TextLineDataset(files)` → `map(decode_libsvm, 10)` → `prefetch(500000)` → `shuffle(256)` →
  `repeat(epochs)` → `batch(batch_size)`.
- `guide`: the tf.data performance guide's practice in the deck's order (create → cache → shuffle →
  batch → map → repeat → prefetch): `interleave(AUTOTUNE)` over the files → `cache()` →
  `shuffle(10000)` → `batch` → vectorized `map(decode, AUTOTUNE)` → `repeat` → `prefetch(AUTOTUNE)`.

Decoding always meets the builder's contract (int64 ids of shape [B, F]); lambdaji's own decode
gave int32 ids of shape [B, F, 1] that its model reshaped. Any preset runs on any format: the
stage order is what a preset fixes.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from pipebench.errors import UsageError
from pipebench.pipeline.orderings import Enumeration, load
from pipebench.pipeline.spec import PipelineSpec, Source, StageSpec
from pipebench.values import echo

PRESETS = ("aws-sample", "lambdaji-libsvm", "guide")
NATIVE_FORMAT = {"aws-sample": "tfrecord", "lambdaji-libsvm": "libsvm", "guide": "tfrecord"}
GUIDE_SHUFFLE_BUFFER = 10_000


def preset(name: str, *, format: str | None = None, files: tuple[str, ...] = (), batch_size: int = 1024,
           epochs: int | None = 10, seed: int | None = None, field_size: int = 39,
           num_shards: int | None = None, shard_index: int = 0) -> PipelineSpec:
    """Give the named preset's spec; `epochs` None repeats forever, `seed` seeds its shuffle, `num_shards`
    adds aws-sample's shard."""
    if name not in PRESETS:
        raise UsageError(f"unknown preset {echo(name)} (known: {', '.join(PRESETS)})")
    if num_shards is not None and name != "aws-sample":
        raise UsageError("only the aws-sample preset has an optional shard")
    source = Source(format=format or NATIVE_FORMAT[name], files=tuple(files), field_size=field_size)
    repeat = StageSpec.of("repeat", epochs=epochs)
    if name == "aws-sample":
        stages = [StageSpec.of("shard", num_shards=num_shards, index=shard_index)] if num_shards else []
        stages += [StageSpec.of("batch", batch_size=batch_size, drop_remainder=True),
                   StageSpec.of("decode", num_parallel_calls="AUTOTUNE"), repeat,
                   StageSpec.of("prefetch", buffer_size="AUTOTUNE")]
    elif name == "lambdaji-libsvm":
        stages = [StageSpec.of("decode", num_parallel_calls=10), StageSpec.of("prefetch", buffer_size=500_000),
                  StageSpec.of("shuffle", buffer_size=256, seed=seed), repeat,
                  StageSpec.of("batch", batch_size=batch_size)]
    else:
        stages = [StageSpec.of("interleave", cycle_length="AUTOTUNE", block_length=1, num_parallel_calls="AUTOTUNE"),
                  StageSpec.of("cache"), StageSpec.of("shuffle", buffer_size=GUIDE_SHUFFLE_BUFFER, seed=seed),
                  StageSpec.of("batch", batch_size=batch_size), StageSpec.of("decode", num_parallel_calls="AUTOTUNE"),
                  repeat, StageSpec.of("prefetch", buffer_size="AUTOTUNE")]
    return PipelineSpec(source, tuple(stages))


def resolve(name_or_path: str, format: str | None = None) -> Enumeration:
    """Give the enumeration for a preset name or an experiment/spec file, optionally in another format."""
    if name_or_path in PRESETS:
        return Enumeration.of(preset(name_or_path, format=format))
    path = Path(name_or_path)
    if not path.is_file():
        raise UsageError(f"{name_or_path}: neither a preset ({', '.join(PRESETS)}) nor a file")
    found = load(path)
    if format:
        found = dataclasses.replace(found, reference=found.reference.with_source(format=format))
    return found
