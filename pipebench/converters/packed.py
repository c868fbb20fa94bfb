"""The packed format: many rows per TFRecord, each row a fixed run of little-endian 32-bit words.

Row layout (all words 4 bytes, so one `tf.io.decode_raw(records, tf.int32)` decodes a whole batch
of records): word 0 = label (float32 bits), words 1..F = ids (int32), words F+1..2F = values
(float32 bits). Every record holds `rows_per_record` rows except the dataset's last, which may hold
fewer. Readers reshape to [-1, 1 + 2F], bitcast the float columns and cast ids to int64.
"""
from __future__ import annotations

import numpy as np

from pipebench.converters.manifest import PackedColumn, PackedLayout

DEFAULT_ROWS_PER_RECORD = 256
_ID_LIMIT = 2**31


def layout(field_size: int, rows_per_record: int) -> PackedLayout:
    """Give the manifest's description of the packed row layout."""
    return PackedLayout(
        word_bytes=4, byte_order="little", row_words=1 + 2 * field_size, row_bytes=4 * (1 + 2 * field_size),
        rows_per_record=rows_per_record, last_record="may hold fewer rows",
        columns=(PackedColumn("label", "float32", 0, 1), PackedColumn("ids", "int32", 1, field_size),
                 PackedColumn("values", "float32", 1 + field_size, field_size)),
        decode="tf.io.decode_raw(records, tf.int32) -> reshape [-1, row_words]; "
               "bitcast words 0 and F+1.. to float32; cast words 1..F to int64")


def pack_rows(labels: np.ndarray, ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Give rows as uint8[n, row_bytes]; ids must fit int32 (the caller checks feature_size)."""
    n, f = ids.shape
    words = np.empty((n, 1 + 2 * f), dtype="<u4")
    words[:, 0] = np.asarray(labels, dtype="<f4").view("<u4")
    words[:, 1 : f + 1] = ids.astype("<i4").view("<u4")
    words[:, f + 1 :] = np.asarray(values, dtype="<f4").view("<u4")
    return words.view(np.uint8).reshape(n, 4 * (1 + 2 * f))  # explicit: a chunk may have no good row


def ids_fit(max_id: int) -> bool:
    """Tell whether ids up to `max_id` fit the packed int32 id column."""
    return max_id < _ID_LIMIT


def unpack_record(record: bytes, field_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Give (labels float32[n], ids int64[n, F], values float32[n, F]) of one packed record."""
    words = np.frombuffer(record, dtype="<u4").reshape(-1, 1 + 2 * field_size)
    labels = words[:, 0].view("<f4").astype(np.float32)
    ids = words[:, 1 : field_size + 1].view("<i4").astype(np.int64)
    values = np.ascontiguousarray(words[:, field_size + 1 :]).view("<f4").astype(np.float32)
    return labels, ids, values


class Packer:
    """Group rows arriving in chunks of any size into records of exactly rows_per_record rows."""

    def __init__(self, rows_per_record: int) -> None:
        self.rows_per_record = rows_per_record
        self._pending = np.empty((0, 0), dtype=np.uint8)

    def add(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Give (payload, record ends, rows per record) for the full records now available."""
        if self._pending.size:
            rows = np.concatenate([self._pending, rows])
        full = len(rows) // self.rows_per_record * self.rows_per_record
        self._pending = rows[full:].copy()
        return self._records(rows[:full])

    def flush(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Give the final, possibly short, record."""
        rows, self._pending = self._pending, np.empty((0, 0), dtype=np.uint8)
        return self._records(rows)

    def _records(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = len(rows)
        counts = np.full(-(-n // self.rows_per_record), self.rows_per_record, dtype=np.int64)
        if n % self.rows_per_record:
            counts[-1] = n % self.rows_per_record
        row_bytes = rows.shape[1] if n else 0
        return rows.reshape(-1), np.cumsum(counts) * row_bytes, counts
