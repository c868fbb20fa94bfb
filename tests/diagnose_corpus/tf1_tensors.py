"""TF1-style: returns the tensors of an iterator's get_next(), not the dataset (diagnose captures the dataset behind it)."""
import tensorflow as tf

CASE = {"format": "libsvm", "files": "filenames", "kwargs": {"batch_size": 256}}


def input_fn(filenames, batch_size=32):
    dataset = tf.data.TextLineDataset(filenames).map(lambda line: tf.strings.length(line)).batch(batch_size)
    return tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
