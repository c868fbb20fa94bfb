"""TF Estimator tutorials' census input_fn: a TF1 iterator whose label is looked up in a table after get_next().

Repository: GoogleCloudPlatform/tf-estimator-tutorials
Path: 02_Classification/06.0 - Classification Example -  Census Income Prediction - Custom Estimator + Exponential
Decay Learning Rate.ipynb (cells 1, 2, 4, 14, 16, 17)
Commit: ed1d56c08606478f012c67ef9a1fd78d90938512 (the notebook last changed in
3870bdb32fe594aa43abb8a038ed5974359b27d9)
Licence: Apache-2.0 (the repository's LICENSE at that commit; the notebook carries no header)
Style: TF1 iterator, batched parse, computation after get_next(): matching_files → TextLineDataset → skip(0) →
shuffle(2 × batch + 1) (mode TRAIN) → batch(batch_size) → map(decode_csv of the batch → dict, unused columns and the
target popped, cpu_count) → map(process_features: `capital_indicator` = cast(capital_gain > capital_loss),
cpu_count) → repeat(num_epochs) → dataset.make_one_shot_iterator().get_next(); then the target strings are looked up
in a string → index table built in the graph (`parse_label_column`) and (features, label indices) returned. TF1
names kept (`tf.decode_csv`, `tf.matching_files`, `dataset.make_one_shot_iterator()`): diagnose converts a copy with
tf_upgrade_v2.
Wiring changed: (1) the notebook's constants (cells 2 and 4) adapted to raw Kaggle Criteo rows, tab-separated:
HEADER is the label, I1..I13, C1..C26, with the label column keeping the census target's name `income_bracket` and I1,
I2 named `capital_gain`, `capital_loss` (the two columns `process_features` reads); HEADER_DEFAULTS `['']` for the
label (a string: the target is looked up in TARGET_LABELS), `[0]` for the integer columns, `['']` for the categorical
ones; NUMERIC_FEATURE_NAMES the integer columns, the categorical ones C1..C26 (the vocabulary / bucket dicts, which
only the feature columns read, left out); TARGET_LABELS ['0', '1'] (the census' '<=50K', '>50K'); (2)
`field_delim='\t'` added to the decode_csv call; (3) `tf.contrib.lookup.index_table_from_tensor` (tf.contrib is gone
from TF 2 and tf_upgrade_v2 cannot convert it) → `lookup_ops.index_table_from_tensor`, the function
tf.contrib.lookup exported; (4) `tf.estimator.ModeKeys` (tf.estimator is gone from TF 2.16 on) → a `ModeKeys`
stand-in with tf.estimator's values ('train', 'eval', 'infer'); (5) `input_fn` calls `csv_input_fn(...)` with the
file list as `files_name_pattern` (matching_files takes a list of patterns), as cell 36's TrainSpec input_fn does
(`lambda: csv_input_fn(TRAIN_DATA_FILES_PATTERN, mode=TRAIN, num_epochs=..., batch_size=...)`).
The feature columns, the estimator and the serving function are left out; the three functions are otherwise verbatim
(their progress prints included).
"""
# ruff: noqa: W291, W293 -- verbatim code (trailing whitespace)
import multiprocessing
import types

import tensorflow as tf
from tensorflow import data
from tensorflow.python.ops import lookup_ops

CASE = {"format": "criteo", "files": "files_name_pattern",
        "kwargs": {"mode": "train", "num_epochs": 1, "batch_size": 256}}

# --- wiring: stand-in for tf.estimator.ModeKeys (its values)
ModeKeys = types.SimpleNamespace(TRAIN='train', EVAL='eval', PREDICT='infer')

# cell 2
PROCESS_FEATURES = True
MULTI_THREADING = True

# cell 4, adapted to the Criteo columns (wiring, see the docstring)
HEADER = ['income_bracket', 'capital_gain', 'capital_loss'] + ['I%d' % i for i in range(3, 14)] \
    + ['C%d' % i for i in range(1, 27)]

HEADER_DEFAULTS = [['']] + [[0] for _ in range(13)] + [[''] for _ in range(26)]

NUMERIC_FEATURE_NAMES = ['capital_gain', 'capital_loss'] + ['I%d' % i for i in range(3, 14)]

CATEGORICAL_FEATURE_NAMES = ['C%d' % i for i in range(1, 27)]

FEATURE_NAMES = NUMERIC_FEATURE_NAMES + CATEGORICAL_FEATURE_NAMES

TARGET_NAME = 'income_bracket'

TARGET_LABELS = ['0', '1']

WEIGHT_COLUMN_NAME = 'fnlwgt'

UNUSED_FEATURE_NAMES = list(set(HEADER) - set(FEATURE_NAMES) - {TARGET_NAME} - {WEIGHT_COLUMN_NAME})


# cell 14
def parse_csv_row(csv_row):
    
    columns = tf.decode_csv(csv_row, record_defaults=HEADER_DEFAULTS,
                            field_delim='\t')  # wiring: Criteo is tab-separated
    features = dict(zip(HEADER, columns))
    
    for column in UNUSED_FEATURE_NAMES:
        features.pop(column)
    
    target = features.pop(TARGET_NAME)

    return features, target

def process_features(features):

    capital_indicator = features['capital_gain'] > features['capital_loss']
    features['capital_indicator'] = tf.cast(capital_indicator, dtype=tf.int32)
    
    return features


# cell 16
def parse_label_column(label_string_tensor):
    table = lookup_ops.index_table_from_tensor(tf.constant(TARGET_LABELS))  # wiring: was tf.contrib.lookup.…
    return table.lookup(label_string_tensor)


# cell 17
def csv_input_fn(files_name_pattern, mode=ModeKeys.EVAL,  # wiring: was tf.estimator.ModeKeys.EVAL
                 skip_header_lines=0, 
                 num_epochs=None, 
                 batch_size=200):
    
    shuffle = True if mode == ModeKeys.TRAIN else False  # wiring: was tf.estimator.ModeKeys.TRAIN
        
    num_threads = multiprocessing.cpu_count() if MULTI_THREADING else 1
     
    print("")
    print("* data input_fn:")
    print("================")
    print("Input file(s): {}".format(files_name_pattern))
    print("Batch size: {}".format(batch_size))
    print("Epoch Count: {}".format(num_epochs))
    print("Mode: {}".format(mode))
    print("Thread Count: {}".format(num_threads))
    print("Shuffle: {}".format(shuffle))
    print("================")
    print("")

    file_names = tf.matching_files(files_name_pattern)
    dataset = data.TextLineDataset(filenames=file_names)
    
    dataset = dataset.skip(skip_header_lines)
    
    if shuffle:
        dataset = dataset.shuffle(buffer_size=2 * batch_size + 1)
    
    dataset = dataset.batch(batch_size)
    dataset = dataset.map(lambda csv_row: parse_csv_row(csv_row), 
                          num_parallel_calls=num_threads)
    
    if PROCESS_FEATURES:
        dataset = dataset.map(lambda features, target: (process_features(features), target), 
                              num_parallel_calls=num_threads)
        
    dataset = dataset.repeat(num_epochs)
    iterator = dataset.make_one_shot_iterator()
    
    features, target = iterator.get_next()
    return features, parse_label_column(target)


def input_fn(files_name_pattern, mode=ModeKeys.TRAIN, skip_header_lines=0, num_epochs=None, batch_size=200):
    """Wiring: what the Estimator does with cell 36's TrainSpec input_fn (a lambda around csv_input_fn): call it."""
    return csv_input_fn(files_name_pattern, mode=mode, skip_header_lines=skip_header_lines, num_epochs=num_epochs,
                        batch_size=batch_size)
