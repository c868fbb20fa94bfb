"""init2winit's raw Criteo 1TB TSV reader (the DLRM workload's input pipeline).

Repository: google/init2winit
Path: init2winit/dataset_lib/criteo_terabyte_dataset.py
Commit: afd5a84dbb865f41bf8d6b75181d5b421d73806b
Licence: Apache-2.0 (Copyright 2026 The init2winit Authors.; header kept below)
Style: list_files → shard(hosts) → repeat (train) → interleave(TextLineDataset, cycle_length=64, block_length=batch_size // 8, num_parallel_calls=64, deterministic=False) → shuffle(52,428,800) (train) → batch(drop_remainder=is_training) → map(@tf.function batched decode_csv + hashing, num_parallel_calls=256) → prefetch(n); reads raw Kaggle-format Criteo rows.
Wiring changed: (1) imports of absl.logging, init2winit.dataset_lib.data_utils, jax, jax.experimental.multihost_utils, ml_collections and tensorflow_datasets dropped (only `criteo_tsv_reader`, `_parse_example_fn` and `_VOCAB_SIZES` are copied); (2) in `criteo_tsv_reader` the training-only seed derivation from the jax key (`jax.random.split`, `data_utils.convert_jax_to_tf_random_seed`, `multihost_utils.broadcast_one_to_all`) is removed; `file_shuffle_seed` and `data_shuffle_seed` are keyword parameters defaulting to None (what the original sets for every split but 'train'); (3) `jax.process_index()` / `jax.process_count()` are replaced by parameters `process_index=0` / `process_count=1`; (4) a module-level `input_fn(file_path, batch_size, ...)` calls `criteo_tsv_reader` with keyword arguments; `num_batches_to_prefetch` defaults to tf.data.AUTOTUNE (what get_criteo1tb passes when hps.num_tf_data_prefetches <= 0). `file_path` takes a list of paths (tf.data.Dataset.list_files accepts one).
"""
# coding=utf-8
# Copyright 2026 The init2winit Authors.
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

import functools

import tensorflow as tf

# 'train' repeats forever and shuffles through a 52M-line buffer; 'eval_train' reads the files once, in file order.
CASE = {"format": "criteo", "files": "file_path",
        "kwargs": {"batch_size": 256, "split": "eval_train", "num_batches_to_prefetch": 10}}

# Raw vocab sizes from
# https://cloud.google.com/tpu/docs/tutorials/dlrm-dcn-2.x#run-model.
_VOCAB_SIZES = [
    39884406,
    39043,
    17289,
    7420,
    20263,
    3,
    7120,
    1543,
    63,
    38532951,
    2953546,
    403346,
    10,
    2208,
    11938,
    155,
    4,
    976,
    14,
    39979771,
    25641295,
    39664984,
    585935,
    12972,
    108,
    36,
]


@tf.function
def _parse_example_fn(num_dense_features, example):
  """Parser function for pre-processed Criteo TSV records."""
  label_defaults = [[0.0]]
  int_defaults = [[0.0] for _ in range(num_dense_features)]
  categorical_defaults = [['00000000'] for _ in range(len(_VOCAB_SIZES))]
  record_defaults = label_defaults + int_defaults + categorical_defaults
  fields = tf.io.decode_csv(
      example, record_defaults, field_delim='\t', na_value='-1'
  )

  num_labels = 1
  features = {}
  features['targets'] = tf.reshape(fields[0], (-1,))

  int_features = []
  for idx in range(num_dense_features):
    positive_val = tf.nn.relu(fields[idx + num_labels])
    int_features.append(tf.math.log(positive_val + 1))
  int_features = tf.stack(int_features, axis=1)

  cat_features = []
  for idx in range(len(_VOCAB_SIZES)):
    field = fields[idx + num_dense_features + num_labels]
    # We append the column index to the string to make the same id in different
    # columns unique.
    cat_features.append(
        tf.strings.to_hash_bucket_fast(field + str(idx), _VOCAB_SIZES[idx])
    )
  cat_features = tf.cast(
      tf.stack(cat_features, axis=1), dtype=int_features.dtype
  )
  features['inputs'] = tf.concat([int_features, cat_features], axis=1)
  return features


def criteo_tsv_reader(
    split,
    shuffle_rng,
    file_path,
    num_dense_features,
    batch_size,
    num_batches_to_prefetch,
    file_shuffle_seed=None,  # wiring: was derived from shuffle_rng through jax for 'train'
    data_shuffle_seed=None,  # wiring: likewise
    process_index=0,  # wiring: was jax.process_index()
    process_count=1,  # wiring: was jax.process_count()
):
  """Input reader fn for pre-processed Criteo data.

  Raw Criteo data is assumed to be preprocessed in the following way:
  1. Missing values are replaced with zeros.
  2. Negative values are replaced with zeros.
  3. Integer features are transformed by log(x+1) and are hence tf.float32.
  4. Categorical data is bucketized and are hence tf.int32.

  Args:
    split: a text string indicating which split, one of {'train', 'eval_train',
      'validation', 'test'}.
    shuffle_rng: jax.random.PRNGKey used for shuffling, only used in training.
    file_path: filepath to the criteo dataset.
    num_dense_features: number of dense features.
    batch_size: per-host batch size.
    num_batches_to_prefetch: number of batches to prefetch.

  Returns:
    A tf.data.Dataset object.
  """
  if split not in ['train', 'eval_train', 'validation', 'test']:
    raise ValueError(f'Invalid split name {split}.')

  is_training = split == 'train'

  ds = tf.data.Dataset.list_files(
      file_path, shuffle=is_training, seed=file_shuffle_seed
  )
  index = process_index
  num_hosts = process_count
  ds = ds.shard(num_hosts, index)
  if is_training:
    ds = ds.repeat()
  ds = ds.interleave(
      tf.data.TextLineDataset,
      cycle_length=64,
      block_length=batch_size // 8,
      num_parallel_calls=64,
      deterministic=False,
  )
  if is_training:
    ds = ds.shuffle(buffer_size=524_288 * 100, seed=data_shuffle_seed)
  ds = ds.batch(batch_size, drop_remainder=is_training)
  parse_fn = functools.partial(_parse_example_fn, num_dense_features)
  ds = ds.map(parse_fn, num_parallel_calls=256)
  ds = ds.prefetch(num_batches_to_prefetch)
  return ds


def input_fn(file_path, batch_size=256, split='train', shuffle_rng=None, num_dense_features=13,
             num_batches_to_prefetch=tf.data.AUTOTUNE, file_shuffle_seed=None, data_shuffle_seed=None,
             process_index=0, process_count=1):
  """Wiring: the call _get_criteo1tb_tsv makes, with keyword arguments."""
  return criteo_tsv_reader(
      split=split,
      shuffle_rng=shuffle_rng,
      file_path=file_path,
      num_dense_features=num_dense_features,
      batch_size=batch_size,
      num_batches_to_prefetch=num_batches_to_prefetch,
      file_shuffle_seed=file_shuffle_seed,
      data_shuffle_seed=data_shuffle_seed,
      process_index=process_index,
      process_count=process_count,
  )
