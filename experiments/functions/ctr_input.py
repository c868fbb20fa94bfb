"""Two input_fns written the way public CTR training scripts write them, for experiments/functions.yaml.

Neither knows pipebench: an experiment names them (`functions/ctr_input.py:tfrecord_input_fn`) and
passes the run's data files through `${data.tfrecord}` / `${data.libsvm}` (README "Your own pipeline").
"""
import tensorflow as tf

FIELD_SIZE = 39


def parse_record(record):
    """One serialized tf.train.Example → ({feat_ids, feat_vals}, label): the AWS DeepFM sample's schema."""
    features = {
        "label": tf.io.FixedLenFeature([], tf.float32),
        "ids": tf.io.FixedLenFeature([FIELD_SIZE], tf.int64),
        "values": tf.io.FixedLenFeature([FIELD_SIZE], tf.float32),
    }
    parsed = tf.io.parse_single_example(record, features)
    return {"feat_ids": parsed["ids"], "feat_vals": parsed["values"]}, parsed["label"]


def tfrecord_input_fn(files, batch_size=512, shuffle_buffer=10000, num_epochs=None):
    """parse_single_example on each record, shuffle, then batch: the most common TFRecord input_fn."""
    dataset = tf.data.TFRecordDataset(files)
    dataset = dataset.map(parse_record, num_parallel_calls=tf.data.AUTOTUNE)
    dataset = dataset.shuffle(shuffle_buffer).repeat(num_epochs)
    dataset = dataset.batch(batch_size)
    return dataset.prefetch(1)


def libsvm_input_fn(filenames, batch_size=32, num_epochs=1, perform_shuffle=False):
    """Per-line libsvm decode with a huge prefetch and a small shuffle: lambdaji/tf_repos' DeepFM input_fn in TF2."""
    def decode_libsvm(line):
        columns = tf.strings.split([line], " ")
        labels = tf.strings.to_number(columns.values[0], out_type=tf.float32)
        splits = tf.strings.split(columns.values[1:], ":")
        id_vals = tf.reshape(splits.values, [-1, 2])
        feat_ids, feat_vals = tf.split(id_vals, num_or_size_splits=2, axis=1)
        feat_ids = tf.strings.to_number(feat_ids, out_type=tf.int32)
        feat_vals = tf.strings.to_number(feat_vals, out_type=tf.float32)
        return {"feat_ids": feat_ids, "feat_vals": feat_vals}, labels

    dataset = tf.data.TextLineDataset(filenames).map(decode_libsvm, num_parallel_calls=10).prefetch(500000)
    if perform_shuffle:
        dataset = dataset.shuffle(buffer_size=256)
    dataset = dataset.repeat(num_epochs)
    dataset = dataset.batch(batch_size)
    return dataset
