"""Per-line libsvm decode with a huge prefetch and a small shuffle: lambdaji/tf_repos' DeepFM input_fn in TF2."""
import tensorflow as tf

CASE = {"format": "libsvm", "files": "filenames", "kwargs": {"batch_size": 256, "num_epochs": 1,
                                                            "perform_shuffle": True}}


def input_fn(filenames, batch_size=32, num_epochs=1, perform_shuffle=False):
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
