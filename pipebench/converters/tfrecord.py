"""TFRecord framing without TensorFlow: CRC-32C, record framing and splitting, compression.

A TFRecord file is a sequence of `uint64 length | uint32 masked_crc(length) | data |
uint32 masked_crc(data)`, little-endian, optionally wrapped whole in a gzip or zlib stream. Framing
many records in one compiled call keeps per-record Python work out of the converter.
"""
from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import numba
import numpy as np

from pipebench.converters import COMPRESSIONS, TF_COMPRESSION  # noqa: F401 (re-exported for callers)
from pipebench.converters.inputs import InputFile
from pipebench.errors import DataError

_MASK_DELTA = np.uint64(0xA282EAD8)


def _crc_tables() -> np.ndarray:
    poly = 0x82F63B78
    tables = np.zeros((8, 256), dtype=np.uint32)
    for n in range(256):
        crc = n
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        tables[0, n] = crc
    for k in range(1, 8):
        for n in range(256):
            prev = int(tables[k - 1, n])
            tables[k, n] = (prev >> 8) ^ int(tables[0, prev & 0xFF])
    return tables


_TABLES = _crc_tables()


@numba.njit(cache=True, nogil=True)
def _crc32c(buf, start, end):
    """CRC-32C (Castagnoli) of buf[start:end], slicing-by-8."""
    t = _TABLES
    crc = np.uint32(0xFFFFFFFF)
    i = start
    while i + 8 <= end:
        lo = crc ^ (np.uint32(buf[i]) | (np.uint32(buf[i + 1]) << 8) | (np.uint32(buf[i + 2]) << 16)
                    | (np.uint32(buf[i + 3]) << 24))
        crc = (t[7, lo & 0xFF] ^ t[6, (lo >> 8) & 0xFF] ^ t[5, (lo >> 16) & 0xFF] ^ t[4, lo >> 24]
               ^ t[3, buf[i + 4]] ^ t[2, buf[i + 5]] ^ t[1, buf[i + 6]] ^ t[0, buf[i + 7]])
        i += 8
    while i < end:
        crc = t[0, (crc ^ buf[i]) & 0xFF] ^ (crc >> 8)
        i += 1
    return crc ^ np.uint32(0xFFFFFFFF)


@numba.njit(cache=True, nogil=True)
def _masked(crc):
    crc = np.uint64(crc)
    return (((crc >> np.uint64(15)) | (crc << np.uint64(17))) + _MASK_DELTA) & np.uint64(0xFFFFFFFF)


@numba.njit(cache=True, nogil=True)
def _frame(payload, ends):
    n = ends.size
    out = np.empty(payload.size + 16 * n, dtype=np.uint8)
    out_ends = np.empty(n, dtype=np.int64)
    start = 0
    pos = 0
    for r in range(n):
        length = ends[r] - start
        for b in range(8):
            out[pos + b] = (length >> (8 * b)) & 0xFF
        crc = _masked(_crc32c(out, pos, pos + 8))
        for b in range(4):
            out[pos + 8 + b] = (crc >> np.uint32(8 * b)) & np.uint32(0xFF)
        out[pos + 12 : pos + 12 + length] = payload[start : ends[r]]
        crc = _masked(_crc32c(payload, start, ends[r]))
        tail = pos + 12 + length
        for b in range(4):
            out[tail + b] = (crc >> np.uint32(8 * b)) & np.uint32(0xFF)
        pos = tail + 4
        out_ends[r] = pos
        start = ends[r]
    return out, out_ends


def frame(payload: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Frame records payload[ends[i-1]:ends[i]] as TFRecords; give (bytes, record end offsets)."""
    return _frame(np.ascontiguousarray(payload, dtype=np.uint8), np.asarray(ends, dtype=np.int64))


def masked_crc32c(data: bytes) -> int:
    """Give TFRecord's masked CRC-32C of `data`."""
    buf = np.frombuffer(data, dtype=np.uint8)
    return int(_masked(_crc32c(buf, 0, buf.size)))


def compressor(compression: str):
    """Give a compress object for a whole TFRecord/text stream, or None for no compression."""
    if compression == "gzip":
        return zlib.compressobj(6, zlib.DEFLATED, 31)
    if compression == "zlib":
        return zlib.compressobj(6, zlib.DEFLATED, 15)
    return None


#: Records per batch handed on: enough to amortise a TensorFlow call, few enough to bound memory.
RECORDS_PER_BATCH = 8192
#: Protobuf messages stop at 2 GiB; a longer length is corrupt framing whose CRC matched by chance.
MAX_RECORD_BYTES = 2**31
_READ_BYTES = 4 << 20
_LENGTH_CRC, _DATA_CRC, _TOO_LONG = 1, 2, 3
_PROBLEMS = {
    _LENGTH_CRC: "corrupt record framing: the length's checksum does not match (a damaged file?)",
    _DATA_CRC: "corrupt record: the data's checksum does not match (a damaged file?)",
    _TOO_LONG: f"corrupt record framing: a length over {MAX_RECORD_BYTES:,} bytes (a damaged file?)",
}


@numba.njit(cache=True, nogil=True)
def _u32(buf, pos):
    """The little-endian uint32 at buf[pos], as uint64 (numba keeps unsigned arithmetic unsigned)."""
    word = np.uint64(0)
    for b in range(4):
        word |= np.uint64(buf[pos + b]) << np.uint64(8 * b)
    return word


@numba.njit(cache=True, nogil=True)
def _split(buf, start, max_records):
    """Find whole records from buf[start]; give (data starts, data ends, next offset, problem code)."""
    starts = np.empty(max_records, dtype=np.int64)
    ends = np.empty(max_records, dtype=np.int64)
    pos = start
    n = 0
    problem = 0
    while n < max_records and pos + 12 <= buf.size:
        if _masked(_crc32c(buf, pos, pos + 8)) != _u32(buf, pos + 8):
            problem = _LENGTH_CRC
            break
        length = _u32(buf, pos) | (_u32(buf, pos + 4) << np.uint64(32))
        if length > np.uint64(MAX_RECORD_BYTES):
            problem = _TOO_LONG
            break
        end = pos + 12 + np.int64(length)
        if end + 4 > buf.size:
            break  # the rest of this record is in the next read
        if _masked(_crc32c(buf, pos + 12, end)) != _u32(buf, end):
            problem = _DATA_CRC
            break
        starts[n] = pos + 12
        ends[n] = end
        n += 1
        pos = end + 4
    return starts[:n], ends[:n], pos, problem


def record_batches(stream: InputFile, batch: int = RECORDS_PER_BATCH) -> Iterator[tuple[int, list[bytes]]]:
    """Yield (1-based number of the first record, up to `batch` records' data) with both CRCs checked.

    Damaged framing is a DataError `FILE:RECORD: reason`; records before it are yielded first.
    """
    buf = np.empty(0, dtype=np.uint8)
    pos = 0
    number = 1
    while True:
        starts, ends, pos, problem = _split(buf, pos, batch)
        if len(starts):
            view = memoryview(buf)
            yield number, [view[s:e].tobytes() for s, e in zip(starts.tolist(), ends.tolist())]
            number += len(starts)
        if problem:
            raise DataError(f"{stream.path}:{number}: {_PROBLEMS[problem]}")
        if len(starts) == batch:
            continue
        more = stream.read(max(_READ_BYTES, _pending(buf, pos)))
        if not more:
            if pos < buf.size:
                raise DataError(f"{stream.path}:{number}: the file ends inside this record (a truncated file)")
            return
        buf = np.concatenate([buf[pos:], np.frombuffer(more, dtype=np.uint8)])
        pos = 0


def _pending(buf: np.ndarray, pos: int) -> int:
    """Give the bytes still missing from the record at buf[pos] whose checked header is whole, else 0.

    Reading them in one call keeps a record longer than a read linear: topping the buffer up a read at a time
    copied it once per read (quadratic in the record's length).
    """
    if buf.size - pos < 12:
        return 0
    length = int(_u32(buf, pos)) | (int(_u32(buf, pos + 4)) << 32)  # _split checked its CRC and its cap
    return pos + 12 + length + 4 - buf.size


def looks_like_tfrecord(path: Path) -> bool:
    """Tell whether a file starts with a valid TFRecord header (after decompression)."""
    with InputFile(path) as f:
        header = f.read(12)
    if len(header) < 12:
        return False
    return masked_crc32c(header[:8]) == struct.unpack("<I", header[8:])[0]
