"""Interleave over many small TFRecord files, one file at a time, then a batched parse."""
import tensorflow as tf

FIELD_SIZE = 39
CASE = {"format": "tfrecord", "files": "files", "kwargs": {"batch_size": 256}}


def parse_batch(records):
    parsed = tf.io.parse_example(records, {
        "label": tf.io.FixedLenFeature([], tf.float32),
        "ids": tf.io.FixedLenFeature([FIELD_SIZE], tf.int64),
        "values": tf.io.FixedLenFeature([FIELD_SIZE], tf.float32),
    })
    return {"feat_ids": parsed["ids"], "feat_vals": parsed["values"]}, parsed["label"]


def input_fn(files, batch_size=512):
    dataset = tf.data.Dataset.from_tensor_slices(files)
    dataset = dataset.interleave(tf.data.TFRecordDataset, cycle_length=4, block_length=16)
    dataset = dataset.batch(batch_size)
    dataset = dataset.map(parse_batch)
    return dataset
