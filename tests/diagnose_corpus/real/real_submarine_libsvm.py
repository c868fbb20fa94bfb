"""Apache Submarine's libsvm input function for its TF2 DeepFM (pysubmarine, submarine.ml.tensorflow_v2.input).

Repository: apache/submarine
Path: submarine-sdk/pysubmarine/submarine/ml/tensorflow_v2/input/input.py
Commit: 7a1d551798c6785fc68fe028fc46f74c3ee6976d
Licence: Apache-2.0 (ASF header kept below)
Style: per-line libsvm decode with tf.compat.v1.string_split (a SparseTensor, reshaped by its dense_shape): TextLineDataset → map(decode_libsvm, AUTOTUNE) → prefetch(AUTOTUNE) → shuffle(batch_size) → repeat(num_epochs) → batch; lambdaji's DeepFM input_fn ported to TF2 by the Submarine project.
Wiring changed: a module-level `input_fn(filepath, batch_size=256, ...)` is added that calls `libsvm_input_fn(...)` with keyword arguments and then the closure it returns (the Estimator calls it). `libsvm_input_fn` is verbatim.
"""
# Licensed to the Apache Software Foundation (ASF) under one or more
# contributor license agreements. See the NOTICE file distributed with
# this work for additional information regarding copyright ownership.
# The ASF licenses this file to You under the Apache License, Version 2.0
# (the "License"); you may not use this file except in compliance with
# the License. You may obtain a copy of the License at
#
# http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

import logging

import tensorflow as tf

logger = logging.getLogger(__name__)

AUTOTUNE = tf.data.experimental.AUTOTUNE

CASE = {"format": "libsvm", "files": "filepath", "kwargs": {"batch_size": 256, "num_epochs": 1,
                                                            "perform_shuffle": True}}


def libsvm_input_fn(
    filepath,
    batch_size=256,
    num_epochs=3,  # pylint: disable=W0613
    perform_shuffle=False,
    delimiter=" ",
    **kwargs,
):
    def _input_fn():
        def decode_libsvm(line):
            columns = tf.compat.v1.string_split([line], delimiter)
            labels = tf.strings.to_number(columns.values[0], out_type=tf.float32)
            splits = tf.compat.v1.string_split(columns.values[1:], ":")
            id_vals = tf.reshape(splits.values, splits.dense_shape)
            feat_ids, feat_vals = tf.split(id_vals, num_or_size_splits=2, axis=1)
            feat_ids = tf.strings.to_number(feat_ids, out_type=tf.int32)
            feat_vals = tf.strings.to_number(feat_vals, out_type=tf.float32)
            return {"feat_ids": feat_ids, "feat_vals": feat_vals}, labels

        dataset = (
            tf.data.TextLineDataset(filepath)
            .map(decode_libsvm, num_parallel_calls=AUTOTUNE)
            .prefetch(AUTOTUNE)
        )

        if perform_shuffle:
            dataset = dataset.shuffle(buffer_size=batch_size)

        dataset = dataset.repeat(num_epochs)
        dataset = dataset.batch(batch_size)

        return dataset

    return _input_fn


def input_fn(filepath, batch_size=256, num_epochs=3, perform_shuffle=False, delimiter=" "):
    """Wiring: what the Estimator does with libsvm_input_fn(...)'s result: call it."""
    return libsvm_input_fn(filepath, batch_size=batch_size, num_epochs=num_epochs, perform_shuffle=perform_shuffle,
                           delimiter=delimiter)()
