"""tf.Transform's sentiment example training input_fn: VarLenFeature bag-of-words ids and weights, SparseTensors out.

Repository: tensorflow/transform
Path: examples/sentiment_example.py
Commit: 3375730685445d1f8b3b6a696c851087bb6b6441
Licence: Apache-2.0 (the repository's LICENSE at that commit, and the file's own header, kept below)
Style: TF1 iterator over a library reader whose output is sparse: make_batched_features_dataset(file_pattern, batch_size, features=transformed spec, reader=TFRecordDataset, shuffle=True) with its other defaults (num_epochs=None: repeats forever, shuffle_buffer_size=10000, batched parse_example) → tf.compat.v1.data.make_one_shot_iterator(dataset).get_next() → label popped after get_next(); the transformed spec is two VarLenFeatures (token ids int64, tf-idf weights float32: SparseTensors [B, ≤n]) for a LinearClassifier's weighted_categorical_column, and the label.
Wiring changed: (1) a module-level `input_fn(transformed_examples, batch_size=128, feature_spec=None)` is added that calls `_make_training_input_fn(tf_transform_output, transformed_examples, batch_size)` and the input_fn it returns, as train_and_evaluate does (`batch_size=TRAIN_BATCH_SIZE`, 128); (2) `tf_transform_output` (a tft.TFTransformOutput read from the transform's output directory) is a stand-in whose `transformed_feature_spec()` gives the spec of the synthetic TFRecords in the example's form: `ids` VarLenFeature(int64) in place of `review` (bag-of-words indices), `values` VarLenFeature(float32) in place of `review_weight` (tf-idf weights), `label` FixedLenFeature([], float32) (the example's label is int64); `transformed_examples` takes the list of files (the example passes a file pattern; make_batched_features_dataset takes either). `_make_training_input_fn` and `LABEL_KEY` are verbatim; apache_beam / tensorflow_transform imports and the rest of the example are left out.
"""
# Copyright 2017 Google Inc. All Rights Reserved.
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
import tensorflow as tf

CASE = {"format": "tfrecord", "files": "transformed_examples", "kwargs": {"batch_size": 256}}

TRAIN_BATCH_SIZE = 128

LABEL_KEY = 'label'


def _make_training_input_fn(tf_transform_output, transformed_examples,
                            batch_size):
  """Creates an input function reading from transformed data.

  Args:
    tf_transform_output: Wrapper around output of tf.Transform.
    transformed_examples: Base filename of examples.
    batch_size: Batch size.

  Returns:
    The input function for training or eval.
  """
  def input_fn():
    """Input function for training and eval."""
    dataset = tf.data.experimental.make_batched_features_dataset(
        file_pattern=transformed_examples,
        batch_size=batch_size,
        features=tf_transform_output.transformed_feature_spec(),
        reader=tf.data.TFRecordDataset,
        shuffle=True)

    transformed_features = tf.compat.v1.data.make_one_shot_iterator(
        dataset).get_next()

    # Extract features and label from the transformed tensors.
    # TODO(b/30367437): make transformed_labels a dict.
    transformed_labels = transformed_features.pop(LABEL_KEY)

    return transformed_features, transformed_labels

  return input_fn


class _TransformOutput:
  """Wiring: stands in for tft.TFTransformOutput; gives the feature spec of the files read."""

  def __init__(self, feature_spec):
    self._feature_spec = feature_spec

  def transformed_feature_spec(self):
    return dict(self._feature_spec)


def input_fn(transformed_examples, batch_size=TRAIN_BATCH_SIZE, feature_spec=None):
  """Wiring: what train_and_evaluate does with _make_training_input_fn(...): the Estimator calls its result."""
  if feature_spec is None:  # the synthetic TFRecords, in the example's transformed form (review, review_weight)
    feature_spec = {'ids': tf.io.VarLenFeature(tf.int64),
                    'values': tf.io.VarLenFeature(tf.float32),
                    LABEL_KEY: tf.io.FixedLenFeature([], tf.float32)}
  return _make_training_input_fn(_TransformOutput(feature_spec), transformed_examples, batch_size)()
