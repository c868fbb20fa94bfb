"""DeepRec model zoo DeepFM on Criteo: its dataset pipeline (build_model_input), CSV path.

Repository: DeepRec-AI/DeepRec
Path: modelzoo/deepfm/train.py
Commit: 11e849ff64c23fd977e84b0ddecb5882bdc8d893
Licence: Apache-2.0 (the file's own header: Copyright (c) 2022 Intel Corporation, Licensed under the Apache License 2.0; kept below. The repository's LICENSE file could not be read here: the snapshot is over the size limit and the index holds no copy.)
Style: a dict of 39 scalar Criteo columns decoded after batching: TextLineDataset → shuffle(20000, seed) → repeat(num_epochs) → batch → map(batched decode_csv → OrderedDict {'I1'..'I13': float32 [B], 'C1'..'C26': string [B]}, label int32 [B], num_parallel_calls=28) → prefetch(2).
Wiring changed: (1) the `args` (argparse) values build_model_input reads become keyword parameters with the parser's defaults: `args.workqueue` → `workqueue=False`, `args.tf` → `tf_baseline=False`, `args.parquet_dataset` → `parquet_dataset=True` (the default reads train.parquet through DeepRec's own ParquetDataset; CASE passes False to take the CSV path), `args.parquet_dataset_shuffle` → `parquet_dataset_shuffle=False`, `args.seed` → `seed=2021`; `build_model_input` is renamed `input_fn` and `filename` takes the list of files; (2) `tf.logging.info` (TF1-only) → `tf.compat.v1.logging.info`; (3) CSV layout adapted to raw Kaggle Criteo rows: `field_delim='\t'` added to the `tf.io.decode_csv` call (DeepRec's train.csv is the same 40 columns, comma-separated). The column defaults, the WorkQueue and ParquetDataset branches (DeepRec-only modules, imported only when their flags are set) and every stage are verbatim.
"""
# Copyright (c) 2022 Intel Corporation
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#    http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
# ==============================================================================

import tensorflow as tf
import collections

CASE = {"format": "criteo", "files": "filename", "kwargs": {"batch_size": 256, "num_epochs": 1,
                                                            "parquet_dataset": False}}

# Definition of some constants
CONTINUOUS_COLUMNS = ['I' + str(i) for i in range(1, 14)]  # 1-13 inclusive
CATEGORICAL_COLUMNS = ['C' + str(i) for i in range(1, 27)]  # 1-26 inclusive
LABEL_COLUMN = ['clicked']
TRAIN_DATA_COLUMNS = LABEL_COLUMN + CONTINUOUS_COLUMNS + CATEGORICAL_COLUMNS
FEATURE_COLUMNS = CONTINUOUS_COLUMNS + CATEGORICAL_COLUMNS


# generate dataset pipline
def input_fn(filename, batch_size=512, num_epochs=1,  # wiring: was build_model_input(filename, batch_size, num_epochs)
             workqueue=False, tf_baseline=False, parquet_dataset=True, parquet_dataset_shuffle=False, seed=2021):
    def parse_csv(value):
        tf.compat.v1.logging.info('Parsing {}'.format(filename))
        cont_defaults = [[0.0] for i in range(1, 14)]
        cate_defaults = [[' '] for i in range(1, 27)]
        label_defaults = [[0]]
        column_headers = TRAIN_DATA_COLUMNS
        record_defaults = label_defaults + cont_defaults + cate_defaults
        columns = tf.io.decode_csv(value, record_defaults=record_defaults, field_delim='\t')
        all_columns = collections.OrderedDict(zip(column_headers, columns))
        labels = all_columns.pop(LABEL_COLUMN[0])
        features = all_columns
        return features, labels

    def parse_parquet(value):
        tf.compat.v1.logging.info('Parsing {}'.format(filename))
        labels = value.pop(LABEL_COLUMN[0])
        features = value
        return features, labels

    '''Work Queue Feature'''
    if workqueue and not tf_baseline:
        from tensorflow.python.ops.work_queue import WorkQueue
        work_queue = WorkQueue([filename])
        # For multiple files：
        # work_queue = WorkQueue([filename, filename1,filename2,filename3])
        files = work_queue.input_dataset()
    else:
        files = filename
    # Extract lines from input files using the Dataset API.
    if parquet_dataset:
        from tensorflow.python.data.experimental.ops import parquet_dataset_ops
        dataset = parquet_dataset_ops.ParquetDataset(files, batch_size=batch_size)
        if parquet_dataset_shuffle:
            dataset = dataset.shuffle(buffer_size=20000,
                                      seed=seed)  # fix seed for reproducing
        dataset = dataset.repeat(num_epochs)
        dataset = dataset.map(parse_parquet, num_parallel_calls=28)
    else:
        dataset = tf.data.TextLineDataset(files)
        dataset = dataset.shuffle(buffer_size=20000,
                                  seed=seed)  # fix seed for reproducing
        dataset = dataset.repeat(num_epochs)
        dataset = dataset.batch(batch_size)
        dataset = dataset.map(parse_csv, num_parallel_calls=28)
    dataset = dataset.prefetch(2)
    return dataset
