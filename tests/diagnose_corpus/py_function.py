"""libsvm lines decoded in Python through tf.py_function, as scripts ported from numpy readers do."""
import numpy as np
import tensorflow as tf

FIELD_SIZE = 39
CASE = {"format": "libsvm", "files": "files", "kwargs": {"batch_size": 256}}


def _parse_line(line):
    tokens = line.numpy().decode().split(" ")
    pairs = [token.split(":") for token in tokens[1:]]
    ids = np.array([int(i) for i, _ in pairs], np.int64)
    values = np.array([float(v) for _, v in pairs], np.float32)
    return ids, values, np.float32(tokens[0])


def decode(line):
    ids, values, label = tf.py_function(_parse_line, [line], [tf.int64, tf.float32, tf.float32])
    ids.set_shape([FIELD_SIZE])
    values.set_shape([FIELD_SIZE])
    label.set_shape([])
    return {"feat_ids": ids, "feat_vals": values}, label


def input_fn(files, batch_size=512):
    return tf.data.TextLineDataset(files).map(decode).batch(batch_size)
