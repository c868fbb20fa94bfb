"""MLOps with Vertex AI's Keras trainer data reader: make_batched_features_dataset with label_key, one epoch, gzip TFRecords.

Repository: GoogleCloudPlatform/mlops-with-vertex-ai
Path: src/model_training/data.py (+ src/common/features.py's TARGET_FEATURE_NAME)
Commit: 11a2f341626a036a5ebbc030eadc10dfd2dfa5e0 (the file last changed in 15cf450b32d0f901252b87dd7423afca19fe245f)
Licence: Apache-2.0 (the repository's LICENSE at that commit, and the file's own header, kept below)
Style: one library reader, no further stages: make_batched_features_dataset(file_pattern, batch_size, feature_spec,
label_key, reader=_gzip_reader_fn, num_epochs=1, drop_final_batch=True) with its other defaults (shuffle=True,
shuffle_buffer_size=10,000, reader_num_threads=1, parser_num_threads=2, sloppy_ordering=False, prefetch AUTOTUNE;
batched parse_example); one pass; elements (dict {ids [B, 39] int64, values [B, 39] float32}, label [B] float32);
the reader is TFRecordDataset(compression_type="GZIP").
Wiring changed: (1) `from src.common import features` → a stand-in namespace whose TARGET_FEATURE_NAME is 'label'
(theirs 'tip_bin', a tf.Transform output of the Chicago taxi data); (2) a module-level `input_fn(file_pattern,
batch_size=512, feature_spec=None)` calls `get_dataset(file_pattern, feature_spec, batch_size)` as trainer.train does
(`get_dataset(train_data_dir, tft_output.transformed_feature_spec(), hyperparams["batch_size"])`; task.py's default
batch size 512), with the AWS DeepFM TFRecord schema (`ids` int64 [39], `values` float32 [39], `label` float32 []) in
place of `tft.TFTransformOutput(...).transformed_feature_spec()`; `file_pattern` takes the list of files. `_gzip_reader_fn`
and `get_dataset` are verbatim: the files must be gzip-compressed TFRecords (CASE's "compression").
"""
# ruff: noqa: E402 -- verbatim code: the original's second docstring precedes its imports
# Copyright 2021 Google LLC
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""Functions for reading data as tf.data.Dataset."""

import types

import tensorflow as tf

# wiring: stands in for `from src.common import features` (TARGET_FEATURE_NAME was "tip_bin")
features = types.SimpleNamespace(TARGET_FEATURE_NAME="label")

CASE = {"format": "tfrecord", "compression": "gzip", "files": "file_pattern", "kwargs": {"batch_size": 512}}


def _gzip_reader_fn(filenames):
    """Small utility returning a record reader that can read gzip'ed files."""
    return tf.data.TFRecordDataset(filenames, compression_type="GZIP")


def get_dataset(file_pattern, feature_spec, batch_size=200):
    """Generates features and label for tuning/training.
    Args:
      file_pattern: input tfrecord file pattern.
      feature_spec: a dictionary of feature specifications.
      batch_size: representing the number of consecutive elements of returned
        dataset to combine in a single batch
    Returns:
      A dataset that contains (features, indices) tuple where features is a
        dictionary of Tensors, and indices is a single Tensor of label indices.
    """

    dataset = tf.data.experimental.make_batched_features_dataset(
        file_pattern=file_pattern,
        batch_size=batch_size,
        features=feature_spec,
        label_key=features.TARGET_FEATURE_NAME,
        reader=_gzip_reader_fn,
        num_epochs=1,
        drop_final_batch=True,
    )

    return dataset


def input_fn(file_pattern, batch_size=512, feature_spec=None):
    """Wiring: what trainer.train does: get_dataset(train_data_dir, transformed_feature_spec, batch_size)."""
    if feature_spec is None:  # the AWS DeepFM TFRecord schema
        feature_spec = {"ids": tf.io.FixedLenFeature([39], tf.int64),
                        "values": tf.io.FixedLenFeature([39], tf.float32),
                        "label": tf.io.FixedLenFeature([], tf.float32)}
    return get_dataset(file_pattern, feature_spec, batch_size)
