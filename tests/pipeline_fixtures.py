"""Row helpers for the data of the `data` fixture (tests/conftest.py), used by the pipeline, source and capacity tests.

The same 600 synthetic rows are written as libsvm (2 files), converted to TFRecord and to packed
(16 rows per record, so the last record is short), so every format must yield identical rows.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

ROWS = 600
ROWS_PER_RECORD = 16
FORMATS = ("libsvm", "tfrecord", "packed")

Row = tuple  # (label, ids tuple, values tuple), exact floats: hashable and comparable across formats


def source(data: dict[str, str], fmt: str, **extra) -> dict:
    """Give a spec's `source:` mapping for the fixture data in `fmt`."""
    out = {"format": fmt, "files": [data[fmt]], **extra}
    if fmt == "packed":
        out["rows_per_record"] = ROWS_PER_RECORD
    return out


def expected_rows(data: dict[str, str]) -> list[Row]:
    """Give the rows in file order, parsed from the libsvm text in Python."""
    rows = []
    for path in sorted(Path(data["libsvm"]).parent.glob("part-*.libsvm")):
        for line in path.read_text().splitlines():
            label, *pairs = line.split(" ")
            ids, values = zip(*(p.split(":") for p in pairs))
            rows.append((float(np.float32(label)), tuple(int(i) for i in ids),
                         tuple(float(np.float32(v)) for v in values)))
    return rows


def batch_rows(features: dict, labels) -> list[Row]:
    """Give one batch's rows as hashable tuples."""
    ids, values = np.asarray(features["feat_ids"]), np.asarray(features["feat_vals"])
    return [(float(label), tuple(int(i) for i in row_ids), tuple(float(v) for v in row_values))
            for label, row_ids, row_values in zip(np.asarray(labels), ids, values)]


def batches(dataset) -> list[list[Row]]:
    """Give every batch of a finite dataset as a list of rows."""
    return [batch_rows(features, labels) for features, labels in dataset.as_numpy_iterator()]


def flat(batch_list: list[list[Row]]) -> list[Row]:
    return [row for batch in batch_list for row in batch]
