"""Serialize rows as `tf.train.Example` protos of the DeepFM schema, many rows per compiled call.

Schema (the AWS SageMaker DeepFM sample's, kept exactly): `label` FloatList[1], `ids`
Int64List[field_size], `values` FloatList[field_size]. The bytes are standard proto3 wire format
(packed repeated fields), so `tf.io.parse_example` and `tf.train.Example.FromString` read them.
"""
from __future__ import annotations

import numba
import numpy as np

#: The feature spec, as `{name: (dtype, shape)}` with shape in terms of field_size "F".
SCHEMA = {"label": ("float32", [1]), "ids": ("int64", ["F"]), "values": ("float32", ["F"])}


@numba.njit(inline="always")
def _varint_len(v):
    n = 1
    while v >= 128:
        v >>= 7
        n += 1
    return n


@numba.njit(inline="always")
def _put_varint(out, pos, v):
    while v >= 128:
        out[pos] = (v & 0x7F) | 0x80
        v >>= 7
        pos += 1
    out[pos] = v
    return pos + 1


@numba.njit(inline="always")
def _put_bytes(out, pos, text):
    for b in text:
        out[pos] = b
        pos += 1
    return pos


@numba.njit(inline="always")
def _put_u32(out, pos, v):
    for b in range(4):
        out[pos + b] = (v >> np.uint32(8 * b)) & np.uint32(0xFF)
    return pos + 4


@numba.njit(inline="always")
def _entry_sizes(value_len):
    """Sizes (entry, field-in-Features) of a map entry whose Feature wraps a list of value_len bytes."""
    list_msg = 1 + _varint_len(value_len) + value_len
    feature = 1 + _varint_len(list_msg) + list_msg
    return list_msg, feature


_KEY_LABEL = np.frombuffer(b"label", dtype=np.uint8)
_KEY_IDS = np.frombuffer(b"ids", dtype=np.uint8)
_KEY_VALUES = np.frombuffer(b"values", dtype=np.uint8)


@numba.njit(inline="always")
def _put_entry(out, pos, key, feature_tag, value_len):
    """Write the Features.feature map-entry header for `key`; the list payload follows."""
    list_msg, feature = _entry_sizes(value_len)
    entry = 2 + key.size + 1 + _varint_len(feature) + feature
    out[pos] = 0x0A  # Features.feature (map entry)
    pos = _put_varint(out, pos + 1, entry)
    out[pos] = 0x0A  # MapEntry.key
    out[pos + 1] = key.size
    pos = _put_bytes(out, pos + 2, key)
    out[pos] = 0x12  # MapEntry.value (Feature)
    pos = _put_varint(out, pos + 1, feature)
    out[pos] = feature_tag  # Feature.float_list (0x12) or Feature.int64_list (0x1A)
    pos = _put_varint(out, pos + 1, list_msg)
    out[pos] = 0x0A  # <List>.value, packed
    return _put_varint(out, pos + 1, value_len)


@numba.njit(inline="always")
def _field_size(key_len, value_len):
    list_msg, feature = _entry_sizes(value_len)
    entry = 2 + key_len + 1 + _varint_len(feature) + feature
    return 1 + _varint_len(entry) + entry


@numba.njit(cache=True, nogil=True)
def _encode(labels_u32, ids, values_u32):
    n, f = ids.shape
    ends = np.empty(n, dtype=np.int64)
    id_bytes = np.empty(n, dtype=np.int64)
    label_field = _field_size(5, 4)
    values_field = _field_size(6, 4 * f)
    total = 0
    for r in range(n):
        ib = 0
        for k in range(f):
            ib += _varint_len(ids[r, k])
        id_bytes[r] = ib
        features = label_field + _field_size(3, ib) + values_field
        total += 1 + _varint_len(features) + features
        ends[r] = total
    out = np.empty(total, dtype=np.uint8)
    pos = 0
    for r in range(n):
        features = label_field + _field_size(3, id_bytes[r]) + values_field
        out[pos] = 0x0A  # Example.features
        pos = _put_varint(out, pos + 1, features)
        pos = _put_entry(out, pos, _KEY_LABEL, 0x12, 4)
        pos = _put_u32(out, pos, labels_u32[r])
        pos = _put_entry(out, pos, _KEY_IDS, 0x1A, id_bytes[r])
        for k in range(f):
            pos = _put_varint(out, pos, ids[r, k])
        pos = _put_entry(out, pos, _KEY_VALUES, 0x12, 4 * f)
        for k in range(f):
            pos = _put_u32(out, pos, values_u32[r, k])
    return out, ends


def encode_examples(labels: np.ndarray, ids: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Give serialized Examples for the rows, concatenated, and each one's end offset."""
    if ids.size and ids.min() < 0:
        raise ValueError("ids must be non-negative")
    labels_u32 = np.ascontiguousarray(labels, dtype="<f4").view(np.uint32)
    values_u32 = np.ascontiguousarray(values, dtype="<f4").view(np.uint32)
    return _encode(labels_u32, np.ascontiguousarray(ids, dtype=np.int64), values_u32)
