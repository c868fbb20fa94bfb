"""AWS sample: DeepFM on SageMaker with parameter servers (TF 1.x Estimator), its TFRecord input_fn.

Repository: aws-samples/deepfm-tensorflow-distributed-training-on-amazon-sagemaker
Path: 1-ps-cpu/DeepFM-dist-ps-for-multipleCPU-multiInstance.py
Commit: 6d6906cac7ecf800f29659baaf430a0b3f0f0b69
Licence: MIT-0 (Copyright Amazon.com, Inc. or its affiliates. All Rights Reserved.; header kept below)
Style: TF1 input_fn returning iterator tensors: TFRecordDataset → shard(hosts) → batch(drop_remainder=True) → map(parse_example, AUTOTUNE) → repeat (if num_epochs > 1) → prefetch(AUTOTUNE) → make_one_shot_iterator().get_next(); the AWS DeepFM TFRecord schema (label, ids[39], values[39]).
Wiring changed: (1) the tf.app.flags definitions and `from sagemaker_tensorflow import PipeModeDataset` / `from tensorflow.contrib.data import map_and_batch` (unused) imports are dropped; the FLAGS the input_fn reads become keyword parameters with the flags' defaults or the sample's values: `FLAGS.field_size` → `field_size=39` (the flag defaults to 0; the sample runs with 39), `FLAGS.pipe_mode` → `pipe_mode=0`, `FLAGS.enable_s3_shard` → `enable_s3_shard=False`, `FLAGS.hosts` → `hosts=("algo-1",)` and `FLAGS.current_host` → `current_host="algo-1"` (SM_HOSTS / SM_CURRENT_HOST of a one-instance job); (2) `os.environ["SM_NUM_CPUS"]` → parameter `sm_num_cpus` defaulting to os.cpu_count() (read, then unused, as in the original); (3) the pipe-mode branch is kept, with `PipeModeDataset` a local stub that raises (sagemaker_tensorflow is not installed). The TF1 names TF 2.x lacks (`tf.parse_example`, `tf.FixedLenFeature`, `dataset.make_one_shot_iterator()`) are kept as the original writes them: under TF 2 `pipebench diagnose` converts a copy with TensorFlow's tf_upgrade_v2 (pipebench.pipeline.tf1_upgrade).
"""
# ruff: noqa: E712, F841 -- verbatim code: `enable_s3_shard == False`, and num_cpus is read but unused there too
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

# This code is applied for TF1.x estimator API.

import os
import tensorflow as tf

CASE = {"format": "tfrecord", "files": "filenames", "kwargs": {"batch_size": 256, "num_epochs": 1}}

_SM_NUM_CPUS = os.cpu_count()  # wiring: what SageMaker puts in SM_NUM_CPUS


def PipeModeDataset(*args, **kwargs):  # wiring: stands in for sagemaker_tensorflow.PipeModeDataset
    raise NotImplementedError("SageMaker pipe mode (sagemaker_tensorflow.PipeModeDataset) is not available here")


# 1 1:0.5 2:0.03519 3:1 4:0.02567 7:0.03708 8:0.01705 9:0.06296 10:0.18185 11:0.02497 12:1 14:0.02565 15:0.03267 17:0.0247 18:0.03158 20:1 22:1 23:0.13169 24:0.02933 27:0.18159 31:0.0177 34:0.02888 38:1 51:1 63:1 132:1 164:1 236:1
# To use sagemaker pipe mode, we add an parameter - channel in input_fn()
def input_fn(
    filenames, channel="training", batch_size=32, num_epochs=1, perform_shuffle=False,
    # wiring: the FLAGS and SageMaker environment variables the function reads
    field_size=39, pipe_mode=0, enable_s3_shard=False, hosts=("algo-1",), current_host="algo-1",
    sm_num_cpus=_SM_NUM_CPUS,
):
    def decode_tfrecord(batch_examples):
        # The feature definition here should BE consistent with LibSVM TO TFRecord process.
        features = tf.parse_example(
            batch_examples,
            features={
                "label": tf.FixedLenFeature([], tf.float32),
                "ids": tf.FixedLenFeature(dtype=tf.int64, shape=[field_size]),
                "values": tf.FixedLenFeature(
                    dtype=tf.float32, shape=[field_size]
                ),
            },
        )

        batch_label = features["label"]
        batch_ids = features["ids"]
        batch_values = features["values"]

        return {"feat_ids": batch_ids, "feat_vals": batch_values}, batch_label

    # Extract lines from input files using the Dataset API, can pass one filename or filename list
    num_cpus = int(sm_num_cpus)

    if pipe_mode == 0:
        """
        dataset = tf.data.Dataset.from_tensor_slices(filenames)
        dataset = dataset.interleave(lambda x:
                                     tf.data.TFRecordDataset(x),
                                     cycle_length=len(filenames), block_length=16,
                                     num_parallel_calls=tf.data.experimental.AUTOTUNE)
        """
        # Enter file mode
        # dataset = tf.data.TFRecordDataset(filenames, buffer_size = 16*1024*1024*1024)
        dataset = tf.data.TFRecordDataset(filenames)
    else:
        # Enter pipe mode
        dataset = PipeModeDataset(channel, record_format="TFRecord")

    # If you don't use S3 Shard, here you need to shard dataset
    if enable_s3_shard == False:
        host_rank = hosts.index(current_host)
        number_host = len(hosts)
        dataset = dataset.shard(number_host, host_rank)

    dataset = dataset.batch(batch_size, drop_remainder=True)  # Batch size to use
    dataset = dataset.map(
        decode_tfrecord, num_parallel_calls=tf.data.experimental.AUTOTUNE
    )

    if num_epochs > 1:
        dataset = dataset.repeat(num_epochs)
    dataset = dataset.prefetch(buffer_size=tf.data.experimental.AUTOTUNE)

    iterator = dataset.make_one_shot_iterator()
    batch_features, batch_labels = iterator.get_next()
    return batch_features, batch_labels
