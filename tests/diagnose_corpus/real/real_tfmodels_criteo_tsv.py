"""TensorFlow Model Garden's Criteo TSV reader for the DLRM / DCN ranking models.

Repository: tensorflow/models
Path: official/recommendation/ranking/data/data_pipeline.py
Commit: 00b830c7ca641413f37e5147cf059c89f79b0e8e
Licence: Apache-2.0 (Copyright 2023 The TensorFlow Authors. All Rights Reserved.; header kept below)
Style: batching inside interleave: list_files → range(num_shards_per_host).interleave(shard → TextLineDataset → repeat (training) → batch(drop_remainder=True) → map(@tf.function batched decode_csv, AUTOTUNE)) → prefetch(AUTOTUNE); nested features dict ({'dense_features': [B, 13], 'sparse_features': {'0'..'25': [B]}}), labels reshaped to [B, 1].
Wiring changed: (1) `from official.recommendation.ranking.configs import config` replaced by a local `config` namespace holding a `DataConfig` dataclass with the fields and defaults of official/recommendation/ranking/configs/config.py's DataConfig (same commit); (2) the module-level `input_fn(file_pattern, batch_size=..., ...)` is added: it builds that DataConfig from keyword arguments (batch_size → global_batch_size) and calls `CriteoTsvReader(...)(ctx)`, like the original `train_input_fn`/`eval_input_fn` do; `vocab_sizes` defaults to config.py's `vocab_sizes` list and `num_dense_features` to ModelConfig's 13; (3) column defaults adapted to raw Kaggle Criteo rows: `categorical_defaults = [[0] ...]` → `[[''] ...]` (the original reads rows whose categorical columns were already bucketized to integers; raw rows hold 8-hex-digit strings). Everything else (the class, `_parse_fn`, `make_dataset`, `_generate_synthetic_data`) is verbatim.
"""
# Copyright 2023 The TensorFlow Authors. All Rights Reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

import dataclasses
import types
from typing import List
import tensorflow as tf

CASE = {"format": "criteo", "files": "file_pattern", "kwargs": {"batch_size": 256, "is_training": False}}


# --- wiring: stand-in for official.recommendation.ranking.configs.config (DataConfig fields and defaults as there)
@dataclasses.dataclass
class DataConfig:
  """Dataset config for training and evaluation."""
  input_path: str = ''
  global_batch_size: int = 0
  is_training: bool = True
  dtype: str = 'float32'
  shuffle_buffer_size: int = 10000
  cycle_length: int = 10
  sharding: bool = True
  num_shards_per_host: int = 8


config = types.SimpleNamespace(DataConfig=DataConfig)

# config.py's vocab_sizes (the dlrm_criteo / dcn_criteo experiments)
vocab_sizes = [
        39884406, 39043, 17289, 7420, 20263, 3, 7120, 1543, 63, 38532951,
        2953546, 403346, 10, 2208, 11938, 155, 4, 976, 14, 39979771, 25641295,
        39664984, 585935, 12972, 108, 36
    ]
# --- end of wiring


class CriteoTsvReader:
  """Input reader callable for pre-processed Criteo data.

  Raw Criteo data is assumed to be preprocessed in the following way:
  1. Missing values are replaced with zeros.
  2. Negative values are replaced with zeros.
  3. Integer features are transformed by log(x+1) and are hence tf.float32.
  4. Categorical data is bucketized and are hence tf.int32.
  """

  def __init__(self,
               file_pattern: str,
               params: config.DataConfig,
               num_dense_features: int,
               vocab_sizes: List[int],
               use_synthetic_data: bool = False):
    self._file_pattern = file_pattern
    self._params = params
    self._num_dense_features = num_dense_features
    self._vocab_sizes = vocab_sizes
    self._use_synthetic_data = use_synthetic_data

  def __call__(self, ctx: tf.distribute.InputContext) -> tf.data.Dataset:
    params = self._params
    # Per replica batch size.
    batch_size = ctx.get_per_replica_batch_size(
        params.global_batch_size) if ctx else params.global_batch_size
    if self._use_synthetic_data:
      return self._generate_synthetic_data(ctx, batch_size)

    @tf.function
    def _parse_fn(example: tf.Tensor):
      """Parser function for pre-processed Criteo TSV records."""
      label_defaults = [[0.0]]
      dense_defaults = [
          [0.0] for _ in range(self._num_dense_features)
      ]
      num_sparse_features = len(self._vocab_sizes)
      categorical_defaults = [
          [''] for _ in range(num_sparse_features)  # wiring: was [0] (bucketized ints); raw Criteo has hex strings
      ]
      record_defaults = label_defaults + dense_defaults + categorical_defaults
      fields = tf.io.decode_csv(
          example, record_defaults, field_delim='\t', na_value='-1')

      num_labels = 1
      label = tf.reshape(fields[0], [batch_size, 1])

      features = {}
      num_dense = len(dense_defaults)

      dense_features = []
      offset = num_labels
      for idx in range(num_dense):
        dense_features.append(fields[idx + offset])
      features['dense_features'] = tf.stack(dense_features, axis=1)

      offset += num_dense
      features['sparse_features'] = {}

      for idx in range(num_sparse_features):
        features['sparse_features'][str(idx)] = fields[idx + offset]

      return features, label

    filenames = tf.data.Dataset.list_files(self._file_pattern, shuffle=False)

    # Shard the full dataset according to host number.
    # Each host will get 1 / num_of_hosts portion of the data.
    if params.sharding and ctx and ctx.num_input_pipelines > 1:
      filenames = filenames.shard(ctx.num_input_pipelines,
                                  ctx.input_pipeline_id)

    num_shards_per_host = 1
    if params.sharding:
      num_shards_per_host = params.num_shards_per_host

    def make_dataset(shard_index):
      filenames_for_shard = filenames.shard(num_shards_per_host, shard_index)
      dataset = tf.data.TextLineDataset(filenames_for_shard)
      if params.is_training:
        dataset = dataset.repeat()
      dataset = dataset.batch(batch_size, drop_remainder=True)
      dataset = dataset.map(_parse_fn,
                            num_parallel_calls=tf.data.experimental.AUTOTUNE)
      return dataset

    indices = tf.data.Dataset.range(num_shards_per_host)
    dataset = indices.interleave(
        map_func=make_dataset,
        cycle_length=params.cycle_length,
        num_parallel_calls=tf.data.experimental.AUTOTUNE)

    dataset = dataset.prefetch(tf.data.experimental.AUTOTUNE)

    return dataset

  def _generate_synthetic_data(self, ctx: tf.distribute.InputContext,
                               batch_size: int) -> tf.data.Dataset:
    """Creates synthetic data based on the parameter batch size.

    Args:
      ctx: Input Context
      batch_size: per replica batch size.

    Returns:
      The synthetic dataset.
    """
    params = self._params
    num_dense = self._num_dense_features
    num_replicas = ctx.num_replicas_in_sync if ctx else 1

    if params.is_training:
      dataset_size = 1000 * batch_size * num_replicas
    else:
      dataset_size = 1000 * batch_size * num_replicas
    dense_tensor = tf.random.uniform(
        shape=(dataset_size, num_dense), maxval=1.0, dtype=tf.float32)

    sparse_tensors = []
    for size in self._vocab_sizes:
      sparse_tensors.append(
          tf.random.uniform(
              shape=(dataset_size,), maxval=int(size), dtype=tf.int32))

    sparse_tensor_elements = {
        str(i): sparse_tensors[i] for i in range(len(sparse_tensors))
    }

    # the mean is in [0, 1] interval.
    dense_tensor_mean = tf.math.reduce_mean(dense_tensor, axis=1)

    sparse_tensors = tf.stack(sparse_tensors, axis=-1)
    sparse_tensors_mean = tf.math.reduce_sum(sparse_tensors, axis=1)
    # the mean is in [0, 1] interval.
    sparse_tensors_mean = tf.cast(sparse_tensors_mean, dtype=tf.float32)
    sparse_tensors_mean /= sum(self._vocab_sizes)
    # the label is in [0, 1] interval.
    label_tensor = (dense_tensor_mean + sparse_tensors_mean) / 2.0
    # Using the threshold 0.5 to convert to 0/1 labels.
    label_tensor = tf.cast(label_tensor + 0.5, tf.int32)

    input_elem = {'dense_features': dense_tensor,
                  'sparse_features': sparse_tensor_elements}, label_tensor

    dataset = tf.data.Dataset.from_tensor_slices(input_elem)
    dataset = dataset.cache()
    if params.is_training:
      dataset = dataset.repeat()

    return dataset.batch(batch_size, drop_remainder=True)


def input_fn(file_pattern, batch_size=16384, is_training=True, cycle_length=10, sharding=True,
             num_shards_per_host=8, num_dense_features=13, vocab_sizes=vocab_sizes, use_synthetic_data=False,
             ctx=None):
  """Wiring: what train_input_fn/eval_input_fn plus the trainer do (batch_size = config.py's train_batch_size)."""
  params = config.DataConfig(input_path=file_pattern, global_batch_size=batch_size, is_training=is_training,
                             cycle_length=cycle_length, sharding=sharding, num_shards_per_host=num_shards_per_host)
  return CriteoTsvReader(
      file_pattern=params.input_path,
      params=params,
      vocab_sizes=vocab_sizes,
      num_dense_features=num_dense_features,
      use_synthetic_data=use_synthetic_data)(ctx)
