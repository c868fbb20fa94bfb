"""TFX's Chicago taxi trainer input_fn (Estimator era): make_batched_features_dataset over gzip TFRecords, a TF1 iterator.

Repository: tensorflow/tfx
Path: tfx/examples/chicago_taxi_pipeline/taxi_utils.py
Commit: b212fae7aafbb51cfd20a39410ef9cbc4dba2192
Licence: Apache-2.0 (the repository's LICENSE at that commit, and the file's own header, kept below)
Style: TF1 iterator over a library reader: make_batched_features_dataset(filenames, batch_size, feature spec, reader=_gzip_reader_fn) with its defaults (num_epochs=None: repeats forever, shuffle=True, shuffle_buffer_size=10000, batched parse_example) → tf.compat.v1.data.make_one_shot_iterator(dataset).get_next() → the label popped from the features dict after get_next(); the reader is TFRecordDataset(compression_type='GZIP').
Wiring changed: (1) a module-level `input_fn(filenames, batch_size=200, feature_spec=None)` is added that calls `_input_fn(filenames, tf_transform_output, batch_size)` as trainer_fn's train_input_fn does (its train_batch_size is 40); (2) `tf_transform_output` (a tft.TFTransformOutput, read from the Transform component's output) is a stand-in whose `transformed_feature_spec()` gives the AWS DeepFM TFRecord schema (`ids` int64 [39], `values` float32 [39], `label` float32 []) in place of the taxi features; (3) the label key: the original pops `_transformed_name(_LABEL_KEY)`, 'tips_xf' (tf.Transform output names carry '_xf'); the synthetic TFRecords hold raw names, so `_LABEL_KEY` is 'label' and `_transformed_name` returns the key unchanged. `_gzip_reader_fn` and `_input_fn` are verbatim: the files must be gzip-compressed TFRecords (CASE's "compression": `pipebench data synth --compression gzip`). tensorflow_transform / tensorflow_model_analysis imports and the rest of the module (preprocessing_fn, estimator, serving) are left out.
"""
# Lint as: python2, python3
# Copyright 2019 Google LLC. All Rights Reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     https://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
import tensorflow as tf

CASE = {"format": "tfrecord", "compression": "gzip", "files": "filenames", "kwargs": {"batch_size": 256}}

# Keys
_LABEL_KEY = 'label'  # wiring: was 'tips'


def _transformed_name(key):
  return key  # wiring: was key + '_xf' (tf.Transform's output names)


def _gzip_reader_fn(filenames):
  """Small utility returning a record reader that can read gzip'ed files."""
  return tf.data.TFRecordDataset(
      filenames,
      compression_type='GZIP')


def _input_fn(filenames, tf_transform_output, batch_size=200):
  """Generates features and labels for training or evaluation.

  Args:
    filenames: [str] list of CSV files to read data from.
    tf_transform_output: A TFTransformOutput.
    batch_size: int First dimension size of the Tensors returned by input_fn

  Returns:
    A (features, indices) tuple where features is a dictionary of
      Tensors, and indices is a single Tensor of label indices.
  """
  transformed_feature_spec = (
      tf_transform_output.transformed_feature_spec().copy())

  dataset = tf.data.experimental.make_batched_features_dataset(
      filenames, batch_size, transformed_feature_spec, reader=_gzip_reader_fn)

  transformed_features = tf.compat.v1.data.make_one_shot_iterator(
      dataset).get_next()
  # We pop the label because we do not want to use it as a feature while we're
  # training.
  return transformed_features, transformed_features.pop(
      _transformed_name(_LABEL_KEY))


class _TransformOutput:
  """Wiring: stands in for tft.TFTransformOutput; gives the feature spec of the files read."""

  def __init__(self, feature_spec):
    self._feature_spec = feature_spec

  def transformed_feature_spec(self):
    return dict(self._feature_spec)


def input_fn(filenames, batch_size=200, feature_spec=None):
  """Wiring: what trainer_fn's train_input_fn does, `_input_fn(files, tf_transform_output, batch_size=...)`."""
  if feature_spec is None:  # the AWS DeepFM TFRecord schema
    feature_spec = {'ids': tf.io.FixedLenFeature([39], tf.int64),
                    'values': tf.io.FixedLenFeature([39], tf.float32),
                    'label': tf.io.FixedLenFeature([], tf.float32)}
  return _input_fn(filenames, _TransformOutput(feature_spec), batch_size=batch_size)
