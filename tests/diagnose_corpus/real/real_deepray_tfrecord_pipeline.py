"""DeePray's TFRecord pipeline: files read in parallel by an interleave, then one batched parse per batch.

Repository: deepray-AI/deepray
Path: deepray/datasets/tfrecord_pipeline/tfrecord_pipeline.py (+ `__call__` and `_dataset_options` of DataPipeLine,
deepray/datasets/datapipeline.py, at the same commit)
Commit: 24ad1306017537f3808f86097bfd0ecb5bc92782
Licence: Apache-2.0 (the repository's LICENSE at that commit: "Copyright 2018 The TensorFlow Authors", Apache License
2.0; the files carry no header)
Style: an already vectorised reader: glob → (fewer files than workers: one TFRecordDataset(files,
num_parallel_reads=AUTOTUNE); else) from_tensor_slices(files) → interleave(TFRecordDataset, cycle min(cpu_count,
files), block 4, num_parallel_calls=AUTOTUNE, deterministic) → batch(batch_size) → map(batched
`tf.io.parse_sequence_example` of the context features, label popped into a dict, cpu_count) → prefetch(AUTOTUNE) →
with_options(parallel_batch, slack, max_intra_op_parallelism 1, map_parallelization; auto-shard OFF for one file) →
ignore_errors(); elements ({'ids' [B, 39], 'values' [B, 39]}, {'label' [B, 1]}). With one worker and several files
the interleave branch runs.
Wiring changed: (1) `from absl import flags; FLAGS = flags.FLAGS` → a FLAGS stand-in (`label=['label']`,
`use_horovod=False`), the flags the code reads; (2) `deepray.datasets.datapipeline.DataPipeLine` → a stand-in
whose `__init__` sets what the original's sets (`use_horovod`, `context`, `url`, and `feature_map`, which the
original reads with FeatureMap from the `--feature_map` CSV: here a pandas DataFrame of the AWS DeepFM TFRecord
schema, columns name / dtype / length: `label` float32 1, `ids` int64 39, `values` float32 39), with the
original's `__call__` and `_dataset_options` verbatim; (3) `deepray.utils.horovod_utils.get_rank/get_world_size`
→ stand-ins giving what the originals give without horovod (0, 1); (4) a module-level `input_fn(input_file_pattern,
batch_size=256, compression_type=None)` builds `TFRecordPipeline(compression_type=...)` and calls it as
tfrecord_pipeline_test.py does (`data_pipe(files, batch_size, is_training=True)`). The `TFRecordPipeline` class is
verbatim. tf.io.parse_sequence_example reads a tf.train.Example's features as its context (the two protos share
field 1).
"""
# ruff: noqa: B026 -- verbatim code (a star-arg after a keyword)
import multiprocessing
import types

import pandas as pd
import tensorflow as tf

CASE = {"format": "tfrecord", "files": "input_file_pattern", "kwargs": {"batch_size": 256}}

# --- wiring: stand-ins for `from absl import flags; FLAGS = flags.FLAGS`, horovod_utils and DataPipeLine
FLAGS = types.SimpleNamespace(label=["label"], use_horovod=False)


def get_rank():  # wiring: deepray.utils.horovod_utils.get_rank without horovod
  return 0


def get_world_size():  # wiring: deepray.utils.horovod_utils.get_world_size without horovod
  return 1


class DataPipeLine:
  """Wiring: deepray.datasets.datapipeline.DataPipeLine; `__call__` and `_dataset_options` verbatim."""

  def __init__(self, context: tf.distribute.InputContext = None, **kwargs):
    self.use_horovod = FLAGS.use_horovod
    self.context = context
    # wiring: the original reads FeatureMap(feature_map=FLAGS.feature_map, ...).feature_map from a CSV
    self.feature_map = pd.DataFrame({"name": ["label", "ids", "values"],
                                     "dtype": [tf.float32, tf.int64, tf.float32],
                                     "length": [1, 39, 39]})
    self.url = None

  def __call__(self, input_file_pattern=None, batch_size=None, is_training=None, prebatch_size=0, *args, **kwargs):
    """Gets a closure to create a dataset."""

    return self.build_dataset(
        input_file_pattern=input_file_pattern,
        batch_size=self.context.get_per_replica_batch_size(batch_size) if self.context else batch_size,
        is_training=is_training,
        epochs=1,
        *args,
        **kwargs
    )

  def _dataset_options(self, input_files):
    options = tf.data.Options()

    # When `input_files` is a path to a single file or a list
    # containing a single path, disable auto sharding so that
    # same input file is sent to all workers.
    if isinstance(input_files, str) or len(input_files) == 1:
      options.experimental_distribute.auto_shard_policy = (tf.data.experimental.AutoShardPolicy.OFF)
    else:
      """ Constructs tf.data.Options for this dataset. """
      options.experimental_optimization.parallel_batch = True
      options.experimental_slack = True
      options.threading.max_intra_op_parallelism = 1
      options.experimental_optimization.map_parallelization = True

    return options


class TFRecordPipeline(DataPipeLine):
  """
  Build a pipeline fetching, shuffling, and preprocessing the tfrecord files.
  """

  def __init__(self, compression_type=None, **kwargs):
    super().__init__(**kwargs)
    self.compression_type = compression_type

  @property
  def features(self):
    context_features, sequence_features = {}, {}
    # for key, dtype in self.feature_map.loc[self.feature_map["length"] == 1][["name", "dtype"]].values:
    #   context_features[key] = tf.io.FixedLenFeature([FLAGS.prebatch], dtype)
    # for key, dtype in self.feature_map.loc[self.feature_map["length"] > 1][["name", "dtype"]].values:
    #   sequence_features[key] = tf.io.VarLenFeature(dtype)
    for key, dtype, length in self.feature_map[["name", "dtype", "length"]].values:
      context_features[key] = tf.io.FixedLenFeature([length], dtype)
    return context_features, sequence_features

  def parser(self, record):
    self.context_features, self.sequence_features = self.features
    tensor, sparse_tensor, ragged_tensor = tf.io.parse_sequence_example(
        serialized=record, context_features=self.context_features, sequence_features=self.sequence_features
    )

    tensor.update(sparse_tensor)
    label_map = {}
    for label in FLAGS.label:
      label_map[label] = tensor.pop(label)
    return tensor, label_map

  def build_dataset(
      self, input_file_pattern, batch_size, is_training=True, prebatch_size=0, epochs=1, shuffle=True, *args, **kwargs
  ):
    input_files = tf.io.gfile.glob(input_file_pattern)

    # When `input_file` is a path to a single file or a list
    # containing a single path, disable auto sharding so that
    # same input file is sent to all workers.
    if isinstance(input_files, str) or len(input_files) < get_world_size():
      dataset = tf.data.TFRecordDataset(
          input_files, compression_type=self.compression_type, num_parallel_reads=tf.data.AUTOTUNE
      )
      if self.use_horovod:
        # For multi-host training, we want each hosts to always process the same
        # subset of files.  Each host only sees a subset of the entire dataset,
        # allowing us to cache larger datasets in memory.
        dataset = dataset.shard(num_shards=get_world_size(), index=get_rank())

    else:
      dataset = tf.data.Dataset.from_tensor_slices(tf.constant(input_files))
      if self.use_horovod:
        # For multi-host training, we want each hosts to always process the same
        # subset of files.  Each host only sees a subset of the entire dataset,
        # allowing us to cache larger datasets in memory.
        dataset = dataset.shard(num_shards=get_world_size(), index=get_rank())

      def mfunc(x):
        rst = tf.data.TFRecordDataset(x, compression_type=self.compression_type)
        return rst

      # In parallel, create tf record dataset for each train files.
      # cycle_length = 8 means that up to 8 files will be read and deserialized in
      # parallel. You may want to increase this number if you have a large number of
      # CPU cores.
      cycle_length = min(multiprocessing.cpu_count(), len(input_files))
      dataset = dataset.interleave(
          mfunc, cycle_length=cycle_length, block_length=4, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
      )

    dataset = dataset.batch(batch_size).map(self.parser, multiprocessing.cpu_count())
    # dataset = dataset.ignore_errors()
    # Prefetch overlaps in-feed with training
    dataset = dataset.prefetch(tf.data.experimental.AUTOTUNE)
    dataset = dataset.with_options(self._dataset_options(input_files))
    # Using `ignore_errors()` will drop the element that causes an error.
    dataset = dataset.apply(tf.data.experimental.ignore_errors())
    return dataset


def input_fn(input_file_pattern, batch_size=256, compression_type=None):
  """Wiring: build the pipeline and call it as tfrecord_pipeline_test.py does."""
  data_pipe = TFRecordPipeline(compression_type=compression_type)
  return data_pipe(input_file_pattern, batch_size, is_training=True)
