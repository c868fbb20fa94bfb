"""The tf.data guide's order: interleave files → cache → shuffle → batch → vectorized parse → repeat → prefetch."""
import tensorflow as tf

FIELD_SIZE = 39
CASE = {"format": "tfrecord", "files": "files", "kwargs": {"batch_size": 256}}


def parse(records):
    parsed = tf.io.parse_example(records, {
        "label": tf.io.FixedLenFeature([], tf.float32),
        "ids": tf.io.FixedLenFeature([FIELD_SIZE], tf.int64),
        "values": tf.io.FixedLenFeature([FIELD_SIZE], tf.float32),
    })
    return {"feat_ids": parsed["ids"], "feat_vals": parsed["values"]}, parsed["label"]


def input_fn(files, batch_size=512):
    dataset = tf.data.Dataset.from_tensor_slices(files)
    dataset = dataset.interleave(tf.data.TFRecordDataset, cycle_length=2)
    dataset = dataset.cache()
    dataset = dataset.shuffle(10_000, seed=1)
    dataset = dataset.batch(batch_size)
    dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.repeat().prefetch(tf.data.AUTOTUNE)
