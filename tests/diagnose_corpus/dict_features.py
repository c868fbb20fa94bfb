"""A dict of features with the label inside, built by a helper nested in input_fn."""
import tensorflow as tf

CASE = {"format": "tfrecord", "files": "files", "kwargs": {"batch_size": 256, "field_size": 39}}


def input_fn(files, batch_size=512, field_size=39):
    spec = {
        "label": tf.io.FixedLenFeature([], tf.float32),
        "ids": tf.io.FixedLenFeature([field_size], tf.int64),
        "values": tf.io.FixedLenFeature([field_size], tf.float32),
    }

    def to_features(record):
        parsed = tf.io.parse_single_example(record, spec)
        return {"ids": parsed["ids"], "values": parsed["values"], "click": parsed["label"]}

    dataset = tf.data.TFRecordDataset(files).map(to_features, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.batch(batch_size, drop_remainder=True).prefetch(1)
