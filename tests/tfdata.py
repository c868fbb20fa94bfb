"""Read converter output back the way a training job does: TensorFlow's own readers and parsers."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def _files(folder: Path) -> tuple[list[str], dict]:
    manifest = json.loads((folder / "manifest.json").read_text())
    return [str(folder / s["name"]) for s in manifest["shards"]], manifest


def read_examples(folder: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Give (labels, ids, values) of an Example-TFRecord folder, parsed by tf.io.parse_example."""
    import tensorflow as tf

    files, manifest = _files(folder)
    f = manifest["field_size"]
    spec = {"label": tf.io.FixedLenFeature([], tf.float32), "ids": tf.io.FixedLenFeature([f], tf.int64),
            "values": tf.io.FixedLenFeature([f], tf.float32)}
    ds = tf.data.TFRecordDataset(files, compression_type=manifest["tf_compression_type"]).batch(4096)
    parts = [tf.io.parse_example(batch, spec) for batch in ds]
    if not parts:
        return np.zeros(0, np.float32), np.zeros((0, f), np.int64), np.zeros((0, f), np.float32)
    return tuple(np.concatenate([p[k].numpy() for p in parts]) for k in ("label", "ids", "values"))


def read_packed(folder: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Give (labels, ids, values) of a packed folder: one tf.io.decode_raw per batch of records."""
    import tensorflow as tf

    files, manifest = _files(folder)
    layout = manifest["packed_layout"]
    f = manifest["field_size"]
    ds = tf.data.TFRecordDataset(files, compression_type=manifest["tf_compression_type"]).batch(8)
    labels, ids, values = [], [], []
    for records in ds:
        if records.shape[0] > 1 and len(set(len(r) for r in records.numpy())) > 1:
            words = tf.concat([tf.io.decode_raw(r, tf.int32) for r in records], axis=0)
        else:
            words = tf.reshape(tf.io.decode_raw(records, tf.int32), [-1])
        words = tf.reshape(words, [-1, layout["row_words"]])
        labels.append(tf.bitcast(words[:, 0], tf.float32).numpy())
        ids.append(tf.cast(words[:, 1 : f + 1], tf.int64).numpy())
        values.append(tf.bitcast(words[:, f + 1 :], tf.float32).numpy())
    return np.concatenate(labels), np.concatenate(ids), np.concatenate(values)


def write_sample_tfrecord(path: Path, labels, ids, values) -> None:
    """Write rows the AWS DeepFM sample's converter does: one tf.train.Example per row."""
    import tensorflow as tf

    with tf.io.TFRecordWriter(str(path)) as writer:
        for label, row_ids, row_values in zip(labels, ids, values):
            example = tf.train.Example(features=tf.train.Features(feature={
                "label": tf.train.Feature(float_list=tf.train.FloatList(value=[float(label)])),
                "ids": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(i) for i in row_ids])),
                "values": tf.train.Feature(float_list=tf.train.FloatList(value=[float(v) for v in row_values])),
            }))
            writer.write(example.SerializeToString())
