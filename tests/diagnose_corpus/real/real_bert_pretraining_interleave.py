"""BERT's pre-training input_fn (TPUEstimator era): a hand-written parallel_interleave inside .apply(), then map_and_batch.

Repository: google-research/bert
Path: run_pretraining.py
Commit: eedf5716ce1268e56f0a50264a88cafad334ac61 (the file last changed in e13c1f3459cc254f7abbabfc5a286a3304d573e4)
Licence: Apache-2.0 (the repository's LICENSE at that commit, and the file's own header, kept below)
Style: per-record parse fused into batching, file-level shuffle before a sloppy parallel interleave (is_training=True):
from_tensor_slices(tf.constant(files)) → repeat() → shuffle(len(files)) → apply(parallel_interleave(TFRecordDataset,
sloppy=True, cycle_length=min(num_cpu_threads, len(files)))) → shuffle(100) → apply(map_and_batch(_decode_record:
parse_single_example + int64 → int32 casts, batch_size, num_parallel_batches=num_cpu_threads, drop_remainder=True));
no prefetch; repeats forever; elements dict {ids [B, 39] int32, values [B, 39] float32, label [B] float32}.
(is_training=False: TFRecordDataset(files) → repeat() → the same map_and_batch.)
Wiring changed: (1) `name_to_features` (the masked-LM pre-training features: input_ids, input_mask, segment_ids
[max_seq_length] int64, masked_lm_positions / masked_lm_ids [max_predictions_per_seq] int64, masked_lm_weights
float32, next_sentence_labels [1] int64) → the AWS DeepFM TFRecord schema (`ids` int64 [39], `values` float32 [39],
`label` float32 []); max_seq_length and max_predictions_per_seq are therefore unused; (2) TF1-only names TF 2 lacks:
`tf.FixedLenFeature` → `tf.io.FixedLenFeature`, `tf.contrib.data.parallel_interleave` →
`tf.data.experimental.parallel_interleave`, `tf.contrib.data.map_and_batch` → `tf.data.experimental.map_and_batch`,
`tf.parse_single_example` → `tf.io.parse_single_example`, `tf.to_int32` → `tf.compat.v1.to_int32`; (3) a module-level
`input_fn(input_files, batch_size=32, is_training=True, num_cpu_threads=4)` calls `input_fn_builder(input_files,
max_seq_length=128, max_predictions_per_seq=20, is_training, num_cpu_threads)` as main() does (FLAGS defaults: 128,
20, train_batch_size 32) and then the closure with `params={"batch_size": batch_size}` as TPUEstimator does.
The `from __future__` imports are dropped (they must precede this docstring; Python 3 needs none); the modeling /
optimization imports, FLAGS, model_fn_builder, the masked-LM / next-sentence losses and main() are left out; `input_fn_builder` and
`_decode_record` are otherwise verbatim.
"""
# ruff: noqa: E402 -- verbatim code: the original's second docstring precedes its imports
# coding=utf-8
# Copyright 2018 The Google AI Language Team Authors.
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
"""Run masked LM/next sentence masked_lm pre-training for BERT."""

import tensorflow as tf

CASE = {"format": "tfrecord", "files": "input_files",
        "kwargs": {"batch_size": 32, "is_training": True, "num_cpu_threads": 4}}


def input_fn_builder(input_files,
                     max_seq_length,
                     max_predictions_per_seq,
                     is_training,
                     num_cpu_threads=4):
  """Creates an `input_fn` closure to be passed to TPUEstimator."""

  def input_fn(params):
    """The actual input function."""
    batch_size = params["batch_size"]

    # wiring: the AWS DeepFM TFRecord schema (the original's are the masked-LM
    # pre-training features, [max_seq_length] / [max_predictions_per_seq] wide)
    name_to_features = {
        "ids":
            tf.io.FixedLenFeature([39], tf.int64),
        "values":
            tf.io.FixedLenFeature([39], tf.float32),
        "label":
            tf.io.FixedLenFeature([], tf.float32),
    }

    # For training, we want a lot of parallel reading and shuffling.
    # For eval, we want no shuffling and parallel reading doesn't matter.
    if is_training:
      d = tf.data.Dataset.from_tensor_slices(tf.constant(input_files))
      d = d.repeat()
      d = d.shuffle(buffer_size=len(input_files))

      # `cycle_length` is the number of parallel files that get read.
      cycle_length = min(num_cpu_threads, len(input_files))

      # `sloppy` mode means that the interleaving is not exact. This adds
      # even more randomness to the training pipeline.
      d = d.apply(
          tf.data.experimental.parallel_interleave(  # wiring: was tf.contrib.data.parallel_interleave
              tf.data.TFRecordDataset,
              sloppy=is_training,
              cycle_length=cycle_length))
      d = d.shuffle(buffer_size=100)
    else:
      d = tf.data.TFRecordDataset(input_files)
      # Since we evaluate for a fixed number of steps we don't want to encounter
      # out-of-range exceptions.
      d = d.repeat()

    # We must `drop_remainder` on training because the TPU requires fixed
    # size dimensions. For eval, we assume we are evaluating on the CPU or GPU
    # and we *don't* want to drop the remainder, otherwise we wont cover
    # every sample.
    d = d.apply(
        tf.data.experimental.map_and_batch(  # wiring: was tf.contrib.data.map_and_batch
            lambda record: _decode_record(record, name_to_features),
            batch_size=batch_size,
            num_parallel_batches=num_cpu_threads,
            drop_remainder=True))
    return d

  return input_fn


def _decode_record(record, name_to_features):
  """Decodes a record to a TensorFlow example."""
  example = tf.io.parse_single_example(record, name_to_features)  # wiring: was tf.parse_single_example

  # tf.Example only supports tf.int64, but the TPU only supports tf.int32.
  # So cast all int64 to int32.
  for name in list(example.keys()):
    t = example[name]
    if t.dtype == tf.int64:
      t = tf.compat.v1.to_int32(t)  # wiring: was tf.to_int32
    example[name] = t

  return example


def input_fn(input_files, batch_size=32, is_training=True, num_cpu_threads=4):
  """Wiring: what main() and TPUEstimator do: input_fn_builder(files, 128, 20, is_training)(params)."""
  return input_fn_builder(
      input_files=input_files,
      max_seq_length=128,
      max_predictions_per_seq=20,
      is_training=is_training,
      num_cpu_threads=num_cpu_threads)({"batch_size": batch_size})
