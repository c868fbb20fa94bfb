"""Read DeepFM TFRecords (Example) with TensorFlow, and write rows back as libsvm text.

Records are framed and CRC-checked by `converters.tfrecord` (so a damaged file is reported by
record number, without TensorFlow's log lines); TensorFlow parses the Examples because input may
come from any writer (the AWS sample's converter, Spark, ours). Only this module imports it, and
only on the TFRecord-input path.
"""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from pipebench.converters import tfrecord
from pipebench.converters.inputs import InputFile

NOT_EXAMPLE = "not_example"
SCHEMA_MISMATCH = "schema_mismatch"
_TF_NOISE = re.compile(r"\{\{function_node [^}]*\}\}\s*|\s*\[Op:\w+\]|Name: <unknown>, ")
_DETAIL_CHARS = 120


def _tensorflow():
    """Give the tensorflow module, imported without its start-up log lines on stderr.

    TF_CPP_MIN_LOG_LEVEL=2 (unless the user set it) hides later C++ info and warnings; lines
    logged while TensorFlow's libraries load (absl's "before InitializeLog" notice, oneDNN) ignore
    it, so stderr is pointed at /dev/null for the import itself unless the user asked for logs.
    """
    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if os.environ["TF_CPP_MIN_LOG_LEVEL"] in ("", "0"):
        import tensorflow as tf

        return tf
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        import tensorflow as tf
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
    return tf


@dataclass
class ExampleBatch:
    """Rows of consecutive records; records that are not Examples of the schema are listed apart."""

    first: int  # 1-based number of the batch's first record
    records: list[bytes]
    numbers: np.ndarray  # int64[n]: record number of each parsed row
    labels: np.ndarray  # float32[n]
    ids: np.ndarray  # int64[n, field_size]
    values: np.ndarray  # float32[n, field_size]
    failures: list[tuple[int, str, str]] = field(default_factory=list)  # (record number, code, reason)


def _why_not_parsed(err: Exception, field_size: int) -> tuple[str, str]:
    """Give (code, reason) for a record tf.io.parse_example refused."""
    text = " ".join(_TF_NOISE.sub("", getattr(err, "message", "") or "").split())
    # TF 2.21 fails to decode its own message when it quotes the record's bytes: also not an Example.
    if isinstance(err, UnicodeDecodeError) or text.startswith("Could not parse example input"):
        return NOT_EXAMPLE, "not a tf.train.Example (its bytes do not parse as one)"
    detail = text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 1] + "…"
    return SCHEMA_MISMATCH, (f"a tf.train.Example not of the schema label float[1], ids int64[{field_size}], "
                             f"values float[{field_size}]: {detail}")


def example_batches(stream: InputFile, field_size: int, stop_at_failure: bool = False) -> Iterator[ExampleBatch]:
    """Yield the rows of a TFRecord file of Examples, batch by batch, naming records that do not parse.

    With `stop_at_failure`, records after the first one that does not parse are not tried.
    """
    tf = _tensorflow()
    spec = {
        "label": tf.io.FixedLenFeature([], tf.float32),
        "ids": tf.io.FixedLenFeature([field_size], tf.int64),
        "values": tf.io.FixedLenFeature([field_size], tf.float32),
    }
    refused = (tf.errors.InvalidArgumentError, UnicodeDecodeError)

    def parse(records: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not records:
            return (np.zeros(0, np.float32), np.zeros((0, field_size), np.int64),
                    np.zeros((0, field_size), np.float32))
        parsed = tf.io.parse_example(tf.constant(records, dtype=tf.string), spec)
        return (parsed["label"].numpy().astype(np.float32), parsed["ids"].numpy(),
                parsed["values"].numpy().astype(np.float32))

    for first, records in tfrecord.record_batches(stream):
        numbers = np.arange(first, first + len(records), dtype=np.int64)
        failures = []
        try:
            rows = parse(records)
        except refused:  # find which records: one at a time, only for a batch that has some
            keep = []
            for k, record in enumerate(records):
                try:
                    parse([record])
                    keep.append(k)
                except refused as err:
                    failures.append((first + k, *_why_not_parsed(err, field_size)))
                    if stop_at_failure:
                        break
            numbers = numbers[keep]
            rows = parse([records[k] for k in keep])
        yield ExampleBatch(first, records, numbers, *rows, failures)
        if failures and stop_at_failure:
            return


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
