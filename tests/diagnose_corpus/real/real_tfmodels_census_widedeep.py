"""TensorFlow Model Garden's Wide & Deep census input_fn (official/wide_deep), its CSV columns made Criteo's.

Repository: tensorflow/models
Path: official/wide_deep/wide_deep.py
Commit: 04132c8698addc305e5875bcb32901545268b318
Licence: Apache-2.0 (the file's own header, kept below; the repository's LICENSE, Apache-2.0, read at 10f5019c: the snapshot is over the size limit and the index holds no LICENSE at this commit)
Style: classic per-line CSV with the shuffle before the parse: TextLineDataset → shuffle(_NUM_EXAMPLES['train'] = 32,561) (when shuffle) → map(parse_csv: one decode_csv → dict of 40 scalars, label popped and compared to '>50K', num_parallel_calls=5) → repeat(num_epochs) → batch(batch_size); returns the dataset.
Wiring changed: (1) CSV layout adapted to raw Kaggle Criteo rows: `_CSV_COLUMNS` is the label column then I1..I13 and C1..C26, `_CSV_COLUMN_DEFAULTS` is `['']` for the label, `[0]` for the integer columns and `['']` for the categorical ones, and `field_delim='\t'` is added to the `decode_csv` call; the label column keeps the name parse_csv pops, 'income_bracket', so `tf.equal(labels, '>50K')` runs as in the original (every Criteo label compares unequal: the classes are all False); (2) TF1-only names → `tf.compat.v1` (`tf.gfile.Exists`, `tf.decode_csv`); (3) the original takes one CSV path and asserts it exists; `data_file` takes the list of files here (TextLineDataset reads either), so the assert checks each file. `_NUM_EXAMPLES` and every stage are verbatim; the estimator, feature columns and argparse wiring are left out.
"""
# Copyright 2017 The TensorFlow Authors. All Rights Reserved.
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
# ==============================================================================
import tensorflow as tf

CASE = {"format": "criteo", "files": "data_file", "kwargs": {"num_epochs": 1, "shuffle": True, "batch_size": 256}}

# wiring: Criteo's 40 columns in place of census's 15; the label keeps census's name (parse_csv pops it)
_CSV_COLUMNS = ['income_bracket'] + ['I%d' % i for i in range(1, 14)] + ['C%d' % i for i in range(1, 27)]

_CSV_COLUMN_DEFAULTS = [['']] + [[0] for _ in range(13)] + [[''] for _ in range(26)]

_NUM_EXAMPLES = {
    'train': 32561,
    'validation': 16281,
}


def input_fn(data_file, num_epochs, shuffle, batch_size):
  """Generate an input function for the Estimator."""
  assert all(tf.compat.v1.gfile.Exists(f) for f in data_file), (  # wiring: each file of the list
      '%s not found. Please make sure you have run data_download.py and '
      'set the --data_dir argument to the correct path.' % data_file)

  def parse_csv(value):
    print('Parsing', data_file)
    columns = tf.compat.v1.decode_csv(value, record_defaults=_CSV_COLUMN_DEFAULTS,
                                      field_delim='\t')  # wiring: Criteo is tab-separated
    features = dict(zip(_CSV_COLUMNS, columns))
    labels = features.pop('income_bracket')
    return features, tf.equal(labels, '>50K')

  # Extract lines from input files using the Dataset API.
  dataset = tf.data.TextLineDataset(data_file)

  if shuffle:
    dataset = dataset.shuffle(buffer_size=_NUM_EXAMPLES['train'])

  dataset = dataset.map(parse_csv, num_parallel_calls=5)

  # We call repeat after shuffling, rather than before, to prevent separate
  # epochs from blending together.
  dataset = dataset.repeat(num_epochs)
  dataset = dataset.batch(batch_size)
  return dataset
