"""A stateful random augmentation per example: a random share of the numeric values jittered (tf.random)."""
import tensorflow as tf

FIELD_SIZE = 39
CASE = {"format": "tfrecord", "files": "files", "kwargs": {"batch_size": 256}}
_SPEC = {
    "label": tf.io.FixedLenFeature([], tf.float32),
    "ids": tf.io.FixedLenFeature([FIELD_SIZE], tf.int64),
    "values": tf.io.FixedLenFeature([FIELD_SIZE], tf.float32),
}


def parse(records):
    parsed = tf.io.parse_example(records, _SPEC)
    return parsed["ids"], parsed["values"], parsed["label"]


def jitter(ids, values, label):
    noise = tf.random.uniform([FIELD_SIZE], -0.01, 0.01)
    keep = tf.cast(tf.random.uniform([FIELD_SIZE]) < 0.9, tf.float32)
    return {"feat_ids": ids, "feat_vals": values + noise * (1.0 - keep)}, label


def input_fn(files, batch_size=512):
    dataset = tf.data.TFRecordDataset(files).batch(1024).map(parse).unbatch()
    dataset = dataset.map(jitter)
    return dataset.batch(batch_size)
