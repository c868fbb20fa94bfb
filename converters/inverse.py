"""Read DeepFM TFRecords (Example) with TensorFlow, and write rows back as libsvm text.

TensorFlow parses the Examples because input may come from any writer (the AWS sample's
converter, Spark, ours); only this module imports it, and only on the TFRecord-input path.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from converters import tfrecord
from pipebench.errors import DataError

_BATCH = 8192


def example_batches(path: Path, compression: str, field_size: int
                    ) -> Iterator[tuple[int, tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """Yield (first record number, (labels, ids, values)) from a TFRecord file of the schema."""
    import tensorflow as tf

    spec = {
        "label": tf.io.FixedLenFeature([], tf.float32),
        "ids": tf.io.FixedLenFeature([field_size], tf.int64),
        "values": tf.io.FixedLenFeature([field_size], tf.float32),
    }
    dataset = tf.data.TFRecordDataset(str(path), compression_type=tfrecord.TF_COMPRESSION[compression])
    dataset = dataset.batch(_BATCH).map(lambda records: tf.io.parse_example(records, spec))
    first = 1
    try:
        for batch in dataset.as_numpy_iterator():
            labels = batch["label"].astype(np.float32)
            yield first, (labels, batch["ids"], batch["values"].astype(np.float32))
            first += len(labels)
    except tf.errors.OpError as err:
        detail = err.message.strip().splitlines()[0] if err.message else type(err).__name__
        raise DataError(f"{path}: records near #{first} do not match the schema label float[1], "
                        f"ids int64[{field_size}], values float[{field_size}]: {detail}") from None


def _text(numbers: np.ndarray) -> np.ndarray:
    """Give the shortest text that parses back to each float32 exactly ('1' for integral values)."""
    text = numbers.astype(str)
    integral = (numbers == np.round(numbers)) & (np.abs(numbers) < 2**24)
    text[integral] = numbers[integral].astype(np.int64).astype(str)
    return text


def format_libsvm(labels: np.ndarray, ids: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Give rows as libsvm lines (concatenated bytes) and each line's end offset."""
    pairs = np.char.add(np.char.add(ids.astype(str), ":"), _text(values))
    label_text = _text(labels)
    lines = [f"{label} {' '.join(row)}\n".encode() for label, row in zip(label_text.tolist(), pairs.tolist())]
    ends = np.cumsum([len(line) for line in lines], dtype=np.int64)
    return np.frombuffer(b"".join(lines), dtype=np.uint8), ends
