"""DeepCTR's Estimator TFRecord input function (deepctr.estimator.inputs.input_fn_tfrecord).

Repository: shenweichen/DeepCTR
Path: deepctr/estimator/inputs.py
Commit: 1b5fe40e158d1ee6af8b1d9df217a5ed5aea9136
Licence: Apache-2.0 (LICENSE: Copyright 2017-present Weichen Shen; the file carries no header)
Style: parse_single_example per record: TFRecordDataset → map(parse_single_example, num_parallel_calls=8) → shuffle(batch_size * 10) → repeat → batch → prefetch(batch_size * 1) → make_one_shot_iterator().get_next() (falls back to tf.compat.v1.data.make_one_shot_iterator on TF 2.x, and to tf.io.parse_single_example); labels of shape [B, 1].
Wiring changed: (1) a module-level `input_fn(filenames, batch_size=256, ...)` is added that calls `input_fn_tfrecord(...)` with keyword arguments and then the closure it returns (the Estimator calls it), so it returns the get_next() tensors; (2) the `feature_description` argument, which the caller builds, defaults to the AWS DeepFM TFRecord schema (`label` float [1], `ids` int64 [39], `values` float32 [39]), written as DeepCTR's example (examples/run_estimator_tfrecord_classification.py) writes its own: `tf.io.FixedLenFeature(dtype=..., shape=...)`, with `label='label'`; that example's spec is one [1] feature per Criteo column (C1..C26 int64, I1..I13 float32, label float32). `input_fn_tfrecord` itself is verbatim, the try/except fallbacks included.
"""
import tensorflow as tf

CASE = {"format": "tfrecord", "files": "filenames", "kwargs": {"batch_size": 256, "num_epochs": 1}}


def input_fn_tfrecord(filenames, feature_description, label=None, batch_size=256, num_epochs=1, num_parallel_calls=8,
                      shuffle_factor=10, prefetch_factor=1,
                      ):
    def _parse_examples(serial_exmp):
        try:
            features = tf.parse_single_example(serial_exmp, features=feature_description)
        except AttributeError:
            features = tf.io.parse_single_example(serial_exmp, features=feature_description)
        if label is not None:
            labels = features.pop(label)
            return features, labels
        return features

    def input_fn():
        dataset = tf.data.TFRecordDataset(filenames)
        dataset = dataset.map(_parse_examples, num_parallel_calls=num_parallel_calls)
        if shuffle_factor > 0:
            dataset = dataset.shuffle(buffer_size=batch_size * shuffle_factor)

        dataset = dataset.repeat(num_epochs).batch(batch_size)

        if prefetch_factor > 0:
            dataset = dataset.prefetch(buffer_size=batch_size * prefetch_factor)
        try:
            iterator = dataset.make_one_shot_iterator()
        except AttributeError:
            iterator = tf.compat.v1.data.make_one_shot_iterator(dataset)

        return iterator.get_next()

    return input_fn


def input_fn(filenames, batch_size=256, num_epochs=1, num_parallel_calls=8, shuffle_factor=10, prefetch_factor=1,
             label='label', feature_description=None):
    """Wiring: what the Estimator does with input_fn_tfrecord(...)'s result: call it."""
    if feature_description is None:  # the AWS DeepFM TFRecord schema, in the example's spelling
        feature_description = {'ids': tf.io.FixedLenFeature(dtype=tf.int64, shape=39),
                               'values': tf.io.FixedLenFeature(dtype=tf.float32, shape=39),
                               'label': tf.io.FixedLenFeature(dtype=tf.float32, shape=1)}
    return input_fn_tfrecord(filenames, feature_description, label, batch_size=batch_size, num_epochs=num_epochs,
                             num_parallel_calls=num_parallel_calls, shuffle_factor=shuffle_factor,
                             prefetch_factor=prefetch_factor)()
