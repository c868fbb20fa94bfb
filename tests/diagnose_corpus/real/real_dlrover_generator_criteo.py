"""DLRover's TF trainer dataset: lines from a Python generator (its elastic reader), batched, then decode_csv.

Repository: intelligent-machine-learning/dlrover
Path: dlrover/trainer/tensorflow/util/dataset_util.py (columns from examples/tensorflow/criteo_deeprec/train_conf.py)
Commit: 7c3e96481f7010c3e4b7adb4c6618075e07d144e
Licence: Apache-2.0 (the repository's LICENSE at that commit: "The following Apache license applies to all files unless otherwise noted"; and both files' own headers, kept below)
Style: Python generator source: Dataset.from_generator(reader lines, output_types=tf.string) → batch(batch_size) → repeat(epoch) → map(batched decode_csv with the columns' defaults → dict of 39 [B] columns, label popped, num_parallel_calls=10); no shuffle, no prefetch.
Wiring changed: (1) a module-level `input_fn(filenames, batch_size=32, epoch=1, field_delim='\t')` is added that builds the train_set dict as the criteo_deeprec example's TrainConf does (its columns verbatim: I0 int32 label, I1..I13 float32, C1..C26 string; `"epoch": 100, "batch_size": 32` there) with `"field_delim": '\t'` (a key DatasetUtil.create reads; the example's CSV is comma-separated with a header row), then `DatasetUtil.create(train_set).input_fn()()`, as DLRover's estimator executor does; (2) the reader: DLRover's FileReader is an ElasticReader that asks the DLRover master for shards (line ranges) for `num_epochs` epochs and yields the lines, `strip()`ped; here a stand-in yields every line of every file once, with only its newline removed (strip would drop the trailing tabs of rows whose last fields are empty); it is not an ElasticReader, so DatasetUtil's set_reader does nothing; (3) stand-ins for DLRover's `ElasticReader` (for the isinstance test), `Column.create` (a record of name, dtype, is_sparse, is_label) and its logger. DatasetUtil is verbatim.
"""
# ruff: noqa: B006, PIE790, PIE808 -- verbatim code (a mutable default, a needless pass, range(0, 14))
# Copyright 2023 The DLRover Authors. All rights reserved.
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
# http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

import logging
import types
from typing import Any, List, Optional

import numpy as np
import tensorflow as tf
from tensorflow.python.ops import parsing_ops

CASE = {"format": "criteo", "files": "filenames", "kwargs": {"batch_size": 256, "epoch": 1}}


# --- wiring: stand-ins for dlrover.trainer's reader base class, Column and logger
class ElasticReader:
    """Stands in for dlrover.trainer.tensorflow.reader.base_reader.ElasticReader (sharding through the master)."""


class Column:
    """Stands in for dlrover.trainer.tensorflow.util.column_info.Column: a record of the four fields."""

    @staticmethod
    def create(name, dtype, is_sparse, is_label):
        return types.SimpleNamespace(name=name, dtype=dtype, is_sparse=is_sparse, is_label=is_label)


logger = logging.getLogger("dlrover")


class DatasetUtil(object):
    """Prepare dataset from generator and parse them"""

    def __init__(
        self,
        reader=None,
        columns: List[Column] = [],
        reader_fn: Optional[Any] = None,
        schema=None,
        batch_size=64,
        epoch=10,
        field_delim=",",
    ):
        self.columns = columns
        self._batch_size = batch_size
        self._epoch = epoch
        self.reader = reader
        self.field_delim = field_delim
        self.set_reader()

    def set_reader(self):
        if isinstance(self.reader, ElasticReader):
            self.reader.set_batch_size(self._batch_size)
            self.reader.set_num_epochs(self._epoch)
            self.reader.build_sharding_client()

    def make_dataset(self):
        def reader_fn():
            for data in self.reader.iterator():
                yield data

        self._reader_fn = reader_fn
        if self._reader_fn is None:
            logger.error("building dataset without reader")

        logger.info("building dataset with reader")

        if self._reader_fn is not None:
            logger.info("Make dataset from reader_fn")
            dataset = tf.data.Dataset.from_generator(
                self._reader_fn, output_types=(tf.string)
            )
        dataset = dataset.batch(self._batch_size).repeat(self._epoch)
        return self.process_dataset(dataset)

    def parse_features(self, dataset):
        default_columns_types = []
        default_columns_names = []
        self._label_column_name = None
        for i in self.columns:
            float_types = ["float", "float32", "float64", "double"]
            int_types = ["int", "int8", "int16", "int32", "int64"]
            uint_types = ["uint8", "uint16", "uint32", "uint64"]
            all_types = float_types + int_types + uint_types
            if i.is_label is True:
                self._label_column_name = i.name
            dtype = i.dtype
            if dtype == "string":
                default_val = ""
            elif dtype in all_types:
                default_val = np.dtype(dtype).type(0)
            default_columns_types.append(default_val)
            default_columns_names.append(i.name)

        def parse_csv(value):
            columns = parsing_ops.decode_csv(
                value,
                record_defaults=default_columns_types,
                field_delim=self.field_delim,
            )
            features = dict(zip(default_columns_names, columns))
            labels = features.pop(self._label_column_name)
            return features, labels

        return dataset.map(parse_csv, num_parallel_calls=10)

    def process_dataset(self, dataset):
        return self.parse_features(dataset)

    def input_fn(self):
        return lambda: self.make_dataset()

    @staticmethod
    def get_dataset_from_uri(path):
        """Get dataset from URI

        Args:
            path: odps://, sls:// or file://
            columns: [str], names of columns
            data_source_info: credential information
            slice_id: for reading data part by part
            slice_cout: for reading data part by part
            start_hour: sls related
            days_before: sls related

        Return:
            dataset
        """
        pass

    @staticmethod
    def create(
        data_set,
    ):
        """
        Args:
            task_conf: dlrover.trainer task conf
            data_name: current data name train_set/test_set..
            initializable: whether reinitialize dataset
            wrapped_reader: for online learning
            job_name: ps/worker/chief/master
            slice_id: used for sharding
            slice_count: used for sharding
            project_dir: estimator project directory
            options: other keyword arguments
        """

        path = data_set.get("reader")
        columns = data_set.get("columns")
        reader_fn = data_set.get("reader_fn")
        field_delim = data_set.get("field_delim", ",")
        dataset_util_kwargs = {
            "reader": path,
            "columns": columns,
            "reader_fn": reader_fn,
            "field_delim": field_delim,
        }

        batch_size = data_set.get("batch_size", None)
        epoch = data_set.get("epoch", None)
        if batch_size is not None:
            dataset_util_kwargs.update({"batch_size": batch_size})
        if epoch is not None:
            dataset_util_kwargs.update({"epoch": epoch})

        return DatasetUtil(**dataset_util_kwargs)


# --- examples/tensorflow/criteo_deeprec/train_conf.py (TrainConf's columns, verbatim)
dense_col = [
    Column.create(  # type: ignore
        name="I" + str(i),
        dtype="float32" if i != 0 else "int32",
        is_sparse=False,
        is_label=False if i != 0 else True,
    )
    for i in range(0, 14)
]

sparse_col = [
    Column.create(  # type: ignore
        name="C" + str(i), dtype="string", is_sparse=True, is_label=False
    )
    for i in range(1, 27)
]

col = dense_col + sparse_col


# --- wiring: the reader and the call
class _LinesReader:
    """Stands in for DLRover's FileReader: every line of every file, once, its newline removed."""

    def __init__(self, paths):
        self._paths = list(paths)

    def iterator(self):
        for path in self._paths:
            with open(path, "r") as f:
                for line in f:
                    yield line.rstrip("\n")


def input_fn(filenames, batch_size=32, epoch=1, field_delim="\t"):
    """Wiring: TrainConf.train_set with these values; DatasetUtil.create(train_set).input_fn()()."""
    train_set = {
        "reader": _LinesReader(filenames),
        "columns": col,
        "epoch": epoch,
        "batch_size": batch_size,
        "field_delim": field_delim,
    }
    return DatasetUtil.create(train_set).input_fn()()
