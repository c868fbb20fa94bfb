"""MLCommons AlgoPerf's Criteo 1TB input pipeline (the DLRM-small workload).

Repository: mlcommons/algorithmic-efficiency
Path: algoperf/workloads/criteo1tb/input_pipeline.py
Commit: 2c90454fc05d5bdf3598b0c7651e611f132a7060
Licence: Apache-2.0 (LICENSE.md; the file itself carries no copyright header)
Style: list_files → shuffle(1024) (file names) → flat_map(TextLineDataset) → batch(drop_remainder=is_training) → map(@tf.function batched decode_csv + to_hash_bucket_fast, num_parallel_calls=16) → repeat (train) → prefetch(10) → take(num_batches); reads raw Kaggle-format Criteo rows.
Wiring changed: (1) `from algoperf import data_utils` dropped; the function's last step, `ds = map(functools.partial(data_utils.shard_and_maybe_pad_np, global_batch_size=global_batch_size), ds)` (a Python `map` that turns each batch into numpy arrays sharded over the JAX/PyTorch devices, so the function returns a Python iterator, not a dataset) is removed and the tf.data.Dataset is returned; (2) the `data_dir` parameter is replaced by `file_paths` (the list of files): the block that built `file_paths` from data_dir's day_0.._22 / day_23_NN names per split is removed, and with it `import os`; (3) `get_criteo1tb_dataset` is renamed `input_fn`, and `shuffle_rng` (a JAX PRNG key in the original, only its [0] is read) defaults to (0, 0). Everything else, `_parse_example_fn` and `_VOCAB_SIZES` included, is verbatim.
"""

import functools
from typing import Optional

import tensorflow as tf

# The tests call the function with a take (num_batches=7, as the workload's evaluation does); the benchmark, which
# compares diagnose's rate with a plain loop, calls it as training does (num_batches=None): diagnose measures a
# pipeline without its final take and says so, while a loop over 7 batches restarts the pipeline every 1,792 rows.
CASE = {"format": "criteo", "files": "file_paths",
        "kwargs": {"split": "train", "global_batch_size": 256, "num_batches": 7},
        "benchmark": {"num_batches": None}}

_NUM_DAY_23_FILES = 36

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


# Preprocessing is the same as
# https://github.com/mlcommons/inference/blob/master/recommendation/dlrm/tf/dataloader.py#L157
# and MAX_IND_RANGE used like
# https://github.com/facebookresearch/dlrm/blob/fbc37ebe21d4f88f18c6ae01333ada2d025e41cf/dlrm_data_pytorch.py#L298.
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


def input_fn(  # wiring: was get_criteo1tb_dataset
  split: str,
  file_paths,  # wiring: was data_dir: str (file_paths was built from it per split)
  shuffle_rng=(0, 0),  # wiring: default added (a JAX PRNG key in the original)
  num_dense_features: int = 13,  # wiring: default added (the workload's num_dense_features)
  global_batch_size: int = 262_144,  # wiring: default added (the workload's train batch size)
  num_batches: Optional[int] = None,
  repeat_final_dataset: bool = False,
):
  """Get the Criteo 1TB dataset for a given split."""
  is_training = split == 'train'
  shuffle = is_training or split == 'eval_train'
  ds = tf.data.Dataset.list_files(
    file_paths, shuffle=shuffle, seed=shuffle_rng[0]
  )

  if shuffle:
    ds = ds.shuffle(buffer_size=1024)
  ds = ds.flat_map(tf.data.TextLineDataset)

  ds = ds.batch(global_batch_size, drop_remainder=is_training)
  parse_fn = functools.partial(_parse_example_fn, num_dense_features)
  ds = ds.map(parse_fn, num_parallel_calls=16)
  if is_training:
    ds = ds.repeat()
  ds = ds.prefetch(10)

  if num_batches is not None:
    ds = ds.take(num_batches)

  # We do not use ds.cache() because the dataset is so large that it would OOM.
  if repeat_final_dataset:
    ds = ds.repeat()

  return ds  # wiring: was ds = map(functools.partial(data_utils.shard_and_maybe_pad_np, ...), ds); return ds
