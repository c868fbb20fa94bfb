"""Cloud ML Engine census sample's input_fn: a TF1 iterator whose label is looked up in a hash table after get_next().

Repository: GoogleCloudPlatform/cloudml-samples
Path: census/estimator/trainer/input.py
Commit: efddc4a9898127e55edc0946557aca4bfaf59705
Licence: Apache-2.0 (the repository's LICENSE at that commit, and the file's own header, kept below)
Style: TF1 iterator with computation on its tensors: TextLineDataset → skip(skip_header_lines) → map(_decode_csv: expand_dims + decode_csv → dict of [1]-shaped columns, unused columns popped, num_parallel_calls=cpu_count()) → prefetch(1024) → shuffle(batch_size * 10) → repeat(num_epochs) → batch(batch_size) → dataset.make_one_shot_iterator().get_next(); then the label column is popped from the features dict and looked up in a string → index table built in the graph (`_parse_label_column`), and (features, label indices) returned. TF1 names kept (`tf.decode_csv`, `dataset.make_one_shot_iterator()`): diagnose converts a copy with tf_upgrade_v2.
Wiring changed: (1) `constants` (census/estimator/constants/constants.py) and `trainer.featurizer` imports → module stand-ins, adapted to raw Kaggle Criteo rows: CSV_COLUMNS is label, I1..I13, C1..C26, CSV_COLUMN_DEFAULTS `['']` for the label (a string: the sample's label is a string looked up in LABELS), `[0]` for the integer columns and `['']` for the categorical ones, LABEL_COLUMN 'label', LABELS ['0', '1'] (the sample's ' <=50K', ' >50K'); featurizer.INPUT_COLUMNS is one named column per feature (the sample's are tf.feature_column objects, of which `_decode_csv` reads only `.name`); (2) `field_delim='\t'` is added to the decode_csv call; (3) `tf.contrib.lookup.index_table_from_tensor` (tf.contrib is gone from TF 2 and tf_upgrade_v2 cannot convert it) → `lookup_ops.index_table_from_tensor`, the function tf.contrib.lookup exported. `input_fn` is called as task.py calls it (`input_module.input_fn(args.train_files, num_epochs=..., batch_size=..., ...)`). The serving input functions are left out.
"""
# Copyright 2016 Google Inc. All Rights Reserved. Licensed under the Apache
# License, Version 2.0 (the "License"); you may not use this file except in
# compliance with the License. You may obtain a copy of the License at
# http://www.apache.org/licenses/LICENSE-2.0

# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations under
# the License.

import multiprocessing
import types

import tensorflow as tf
from tensorflow.python.ops import lookup_ops

CASE = {"format": "criteo", "files": "filenames", "kwargs": {"num_epochs": 1, "batch_size": 256}}

# --- wiring: stand-ins for `from constants import constants` and `import trainer.featurizer as featurizer`
constants = types.SimpleNamespace(
    CSV_COLUMNS=['label'] + ['I%d' % i for i in range(1, 14)] + ['C%d' % i for i in range(1, 27)],
    CSV_COLUMN_DEFAULTS=[['']] + [[0] for _ in range(13)] + [[''] for _ in range(26)],
    LABEL_COLUMN='label',
    LABELS=['0', '1'],
)
featurizer = types.SimpleNamespace(
    INPUT_COLUMNS=[types.SimpleNamespace(name=name) for name in constants.CSV_COLUMNS[1:]])


def _decode_csv(line):
    """Takes the string input tensor and returns a dict of rank-2 tensors."""

    # Takes a rank-1 tensor and converts it into rank-2 tensor
    # Example if the data is ['csv,line,1', 'csv,line,2', ..] to
    # [['csv,line,1'], ['csv,line,2']] which after parsing will result in a
    # tuple of tensors: [['csv'], ['csv']], [['line'], ['line']], [[1], [2]]
    row_columns = tf.expand_dims(line, -1)
    columns = tf.decode_csv(
        row_columns, record_defaults=constants.CSV_COLUMN_DEFAULTS,
        field_delim='\t')  # wiring: Criteo is tab-separated
    features = dict(zip(constants.CSV_COLUMNS, columns))

    # Remove unused columns
    unused_columns = set(constants.CSV_COLUMNS) - {col.name for col in
                                                   featurizer.INPUT_COLUMNS} - {
                         constants.LABEL_COLUMN}
    for col in unused_columns:
        features.pop(col)
    return features


def _parse_label_column(label_string_tensor):
    """Parses a string tensor into the label tensor.

    Args:
      label_string_tensor: Tensor of dtype string. Result of parsing the CSV
        column specified by LABEL_COLUMN.

    Returns:
      A Tensor of the same shape as label_string_tensor, should return
      an int64 Tensor representing the label index for classification tasks,
      and a float32 Tensor representing the value for a regression task.
    """
    # Build a Hash Table inside the graph
    table = lookup_ops.index_table_from_tensor(  # wiring: was tf.contrib.lookup.index_table_from_tensor
        tf.constant(constants.LABELS))

    # Use the hash table to convert string labels to ints and one-hot encode
    return table.lookup(label_string_tensor)


def input_fn(filenames,
             num_epochs=None,
             shuffle=True,
             skip_header_lines=0,
             batch_size=200,
             num_parallel_calls=None,
             prefetch_buffer_size=None):
    """Generates features and labels for training or evaluation.

    This uses the input pipeline based approach using file name queue
    to read data so that entire data is not loaded in memory.

    Args:
        filenames: [str] A List of CSV file(s) to read data from.
        num_epochs: (int) how many times through to read the data. If None will
          loop through data indefinitely
        shuffle: (bool) whether or not to randomize the order of data. Controls
          randomization of both file order and line order within files.
        skip_header_lines: (int) set to non-zero in order to skip header
        lines in CSV files.
        batch_size: (int) First dimension size of the Tensors returned by
        input_fn

    Returns:
        A (features, indices) tuple where features is a dictionary of
          Tensors, and indices is a single Tensor of label indices.
    """
    if num_parallel_calls is None:
        num_parallel_calls = multiprocessing.cpu_count()

    if prefetch_buffer_size is None:
        prefetch_buffer_size = 1024

    dataset = tf.data.TextLineDataset(filenames).skip(skip_header_lines).map(
        _decode_csv, num_parallel_calls).prefetch(prefetch_buffer_size)

    if shuffle:
        dataset = dataset.shuffle(buffer_size=batch_size * 10)
    iterator = dataset.repeat(num_epochs).batch(
        batch_size).make_one_shot_iterator()
    features = iterator.get_next()
    return features, _parse_label_column(features.pop(constants.LABEL_COLUMN))
