"""The baseline: libsvm → TFRecord the way the AWS SageMaker DeepFM sample's converter does it.

One process, one `str.split` per line and per pair, one `tf.train.Example` per row, one writer, no
validation. Kept only so benchmarks/converter_speed.py can measure pipebench against it.
"""
from __future__ import annotations

import sys


def convert(input_path: str, output_path: str) -> int:
    """Convert one libsvm file; give the number of rows written."""
    import tensorflow as tf

    rows = 0
    with tf.io.TFRecordWriter(output_path) as writer:
        for line in open(input_path, "r"):
            data = line.split(" ")
            label = float(data[0])
            ids = []
            values = []
            for fea in data[1:]:
                feature_id, value = fea.split(":")
                ids.append(int(feature_id))
                values.append(float(value))
            example = tf.train.Example(features=tf.train.Features(feature={
                "label": tf.train.Feature(float_list=tf.train.FloatList(value=[label])),
                "ids": tf.train.Feature(int64_list=tf.train.Int64List(value=ids)),
                "values": tf.train.Feature(float_list=tf.train.FloatList(value=values)),
            }))
            writer.write(example.SerializeToString())
            rows += 1
    return rows


if __name__ == "__main__":
    print(convert(sys.argv[1], sys.argv[2]))
