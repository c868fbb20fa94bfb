"""AWS sample: DeepFM on SageMaker with Horovod on GPUs (TF 1.x Estimator), its TFRecord input_fn.

Repository: aws-samples/deepfm-tensorflow-distributed-training-on-amazon-sagemaker
Path: 2-hvd-gpu/DeepFM-hvd-tfrecord-vectorized-map.py
Commit: 6d6906cac7ecf800f29659baaf430a0b3f0f0b69
Licence: MIT-0 (Copyright Amazon.com, Inc. or its affiliates. All Rights Reserved.; header kept below)
Style: vectorized parse, drop_remainder: TFRecordDataset → shard(hvd.size(), hvd.rank()) → batch(drop_remainder=True) → map(parse_example, AUTOTUNE) → repeat (if num_epochs > 1) → prefetch(AUTOTUNE); returns the dataset; the AWS DeepFM TFRecord schema (label, ids[39], values[39]).
Wiring changed: (1) `import horovod.tensorflow as hvd`, `from sagemaker_tensorflow import PipeModeDataset`, `from tensorflow.contrib.data import map_and_batch` (unused) and the tf.app.flags definitions are dropped; `hvd.size()` → parameter `hvd_size=1`, `hvd.rank()` → `hvd_rank=0`, `hvd.local_rank()` → `hvd_local_rank=0`; the FLAGS read become parameters with the flags' defaults or the sample's values: `FLAGS.field_size` → `field_size=39` (the flag defaults to 0; the sample runs with 39), `FLAGS.pipe_mode` → `pipe_mode=0`, `FLAGS.enable_s3_shard` → `enable_s3_shard=False`, `FLAGS.worker_per_host` → `worker_per_host=1`, `FLAGS.enable_data_multi_path` → `enable_data_multi_path=False`, `FLAGS.hosts` → `hosts=("algo-1",)`; (2) the pipe-mode branch is kept, with `PipeModeDataset` a local stub that raises (sagemaker_tensorflow is not installed); (3) TF1 names that TF 2.x lacks: `tf.parse_example` → `tf.compat.v1.parse_example`, `tf.FixedLenFeature` → `tf.compat.v1.FixedLenFeature`.
"""
# ruff: noqa: E712 -- verbatim code: `enable_s3_shard == False`
# ***************************************************************************************
# Copyright Amazon.com, Inc. or its affiliates. All Rights Reserved.                    *
#                                                                                       *
# Permission is hereby granted, free of charge, to any person obtaining a copy of this  *
# software and associated documentation files (the "Software"), to deal in the Software *
# without restriction, including without limitation the rights to use, copy, modify,    *
# merge, publish, distribute, sublicense, and/or sell copies of the Software, and to    *
# permit persons to whom the Software is furnished to do so.                            *
#                                                                                       *
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED,   *
# INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A         *
# PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT    *
# HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION     *
# OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE        *
# SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.                                *
# ***************************************************************************************

#!/usr/bin/env python
# coding=utf-8

import tensorflow as tf

CASE = {"format": "tfrecord", "files": "filenames", "kwargs": {"batch_size": 256, "num_epochs": 1}}


def PipeModeDataset(*args, **kwargs):  # wiring: stands in for sagemaker_tensorflow.PipeModeDataset
    raise NotImplementedError("SageMaker pipe mode (sagemaker_tensorflow.PipeModeDataset) is not available here")


# 1 1:0.5 2:0.03519 3:1 4:0.02567 7:0.03708 8:0.01705 9:0.06296 10:0.18185 11:0.02497 12:1 14:0.02565 15:0.03267 17:0.0247 18:0.03158 20:1 22:1 23:0.13169 24:0.02933 27:0.18159 31:0.0177 34:0.02888 38:1 51:1 63:1 132:1 164:1 236:1
# To use sagemaker pipe mode, we add an parameter - channel in input_fn()
def input_fn(
    filenames="", channel="training", batch_size=32, num_epochs=1, perform_shuffle=False,
    # wiring: the FLAGS and horovod values the function reads
    field_size=39, pipe_mode=0, enable_s3_shard=False, worker_per_host=1, enable_data_multi_path=False,
    hosts=("algo-1",), hvd_size=1, hvd_rank=0, hvd_local_rank=0,
):
    def decode_tfrecord(batch_examples):
        # The feature definition here should BE consistent with LibSVM TO TFRecord process.
        features = tf.compat.v1.parse_example(
            batch_examples,
            features={
                "label": tf.compat.v1.FixedLenFeature([], tf.float32),
                "ids": tf.compat.v1.FixedLenFeature(dtype=tf.int64, shape=[field_size]),
                "values": tf.compat.v1.FixedLenFeature(
                    dtype=tf.float32, shape=[field_size]
                ),
            },
        )

        batch_label = features["label"]
        batch_ids = features["ids"]
        batch_values = features["values"]

        return {"feat_ids": batch_ids, "feat_vals": batch_values}, batch_label

    # Extract lines from input files using the Dataset API, can pass one filename or filename list
    if pipe_mode == 0:
        dataset = tf.data.TFRecordDataset(filenames)

        if enable_s3_shard:  # ShardedByS3Key
            dataset = dataset.shard(worker_per_host, hvd_local_rank)
        else:  # S3FullReplicate
            dataset = dataset.shard(hvd_size, hvd_rank)
    else:
        print("-------enter into pipe mode branch!------------")
        dataset = PipeModeDataset(channel, record_format="TFRecord")

        number_host = len(hosts)

        if enable_data_multi_path:
            if enable_s3_shard == False:
                if number_host > 1:
                    index = hvd_rank // worker_per_host
                    dataset = dataset.shard(number_host, index)
        else:
            if enable_s3_shard:
                dataset = dataset.shard(worker_per_host, hvd_local_rank)
            else:
                dataset = dataset.shard(hvd_size, hvd_rank)

    dataset = dataset.batch(batch_size, drop_remainder=True)  # Batch size to use
    dataset = dataset.map(
        decode_tfrecord, num_parallel_calls=tf.data.experimental.AUTOTUNE
    )

    if num_epochs > 1:
        dataset = dataset.repeat(num_epochs)

    dataset = dataset.prefetch(buffer_size=tf.data.experimental.AUTOTUNE)

    return dataset
