"""parse_single_example on each record, then batch: the most common TFRecord input_fn."""
import tensorflow as tf

FIELD_SIZE = 39
CASE = {"format": "tfrecord", "files": "files", "kwargs": {"batch_size": 256}}


def parse_record(record):
    features = {
        "label": tf.io.FixedLenFeature([], tf.float32),
        "ids": tf.io.FixedLenFeature([FIELD_SIZE], tf.int64),
        "values": tf.io.FixedLenFeature([FIELD_SIZE], tf.float32),
    }
    parsed = tf.io.parse_single_example(record, features)
    return {"feat_ids": parsed["ids"], "feat_vals": parsed["values"]}, parsed["label"]


def input_fn(files, batch_size=512):
    dataset = tf.data.TFRecordDataset(files)
    dataset = dataset.map(parse_record)
    dataset = dataset.batch(batch_size)
    return dataset
