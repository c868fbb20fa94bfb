"""Already well built: batch(drop_remainder) → map(parse_example, AUTOTUNE) → prefetch(AUTOTUNE) (the AWS sample)."""
import tensorflow as tf

FIELD_SIZE = 39
CASE = {"format": "tfrecord", "files": "files", "kwargs": {"batch_size": 256}}


def parse_example(records):
    parsed = tf.io.parse_example(records, {
        "label": tf.io.FixedLenFeature([], tf.float32),
        "ids": tf.io.FixedLenFeature([FIELD_SIZE], tf.int64),
        "values": tf.io.FixedLenFeature([FIELD_SIZE], tf.float32),
    })
    return {"feat_ids": parsed["ids"], "feat_vals": parsed["values"]}, parsed["label"]


def input_fn(files, batch_size=512):
    dataset = tf.data.TFRecordDataset(files, num_parallel_reads=tf.data.AUTOTUNE)
    dataset = dataset.batch(batch_size, drop_remainder=True)
    dataset = dataset.map(parse_example, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)
