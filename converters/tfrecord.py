"""TFRecord framing without TensorFlow: CRC-32C, record framing, compression, a plain reader.

A TFRecord file is a sequence of `uint64 length | uint32 masked_crc(length) | data |
uint32 masked_crc(data)`, little-endian, optionally wrapped whole in a gzip or zlib stream. Framing
many records in one compiled call keeps per-record Python work out of the converter.
"""
from __future__ import annotations

import gzip
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import numba
import numpy as np

from converters import COMPRESSIONS, TF_COMPRESSION  # noqa: F401 (re-exported for callers)
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


def sniff_compression(path: Path) -> str:
    """Guess a file's compression from its first bytes (gzip magic, zlib header), not its name."""
    with open(path, "rb") as f:
        head = f.read(4096)
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    if len(head) >= 2 and head[0] & 0x0F == 8 and ((head[0] << 8) | head[1]) % 31 == 0:
        try:  # two bytes can pass the header check by chance; a real stream also inflates
            zlib.decompressobj(15).decompress(head)
            return "zlib"
        except zlib.error:
            pass
    return "none"


def open_stream(path: Path, compression: str | None = None):
    """Open a possibly compressed file for reading as one decompressed byte stream."""
    compression = compression or sniff_compression(path)
    if compression == "gzip":
        return gzip.open(path, "rb")
    if compression == "zlib":
        return _ZlibReader(path)
    return open(path, "rb")


class _ZlibReader:
    """A minimal file-like reader over a zlib stream (gzip.open's counterpart for zlib)."""

    def __init__(self, path: Path) -> None:
        self._file = open(path, "rb")
        self._inflate = zlib.decompressobj(15)
        self._pending = b""

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._pending) < size:
            block = self._file.read(1 << 20)
            if not block:
                self._pending += self._inflate.flush()
                break
            self._pending += self._inflate.decompress(block)
        if size < 0:
            size = len(self._pending)
        out, self._pending = self._pending[:size], self._pending[size:]
        return out

    def close(self) -> None:
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_records(path: Path, compression: str | None = None) -> Iterator[bytes]:
    """Yield each record's data from a TFRecord file, checking both CRCs."""
    with open_stream(path, compression) as f:
        index = 0
        while True:
            header = f.read(12)
            if not header:
                return
            if len(header) < 12:
                raise DataError(f"{path}: record {index}: truncated header")
            (length,) = struct.unpack("<Q", header[:8])
            (length_crc,) = struct.unpack("<I", header[8:])
            if masked_crc32c(header[:8]) != length_crc:
                raise DataError(f"{path}: record {index}: length CRC mismatch (not a TFRecord file?)")
            data = f.read(length)
            footer = f.read(4)
            if len(data) < length or len(footer) < 4:
                raise DataError(f"{path}: record {index}: truncated data")
            if masked_crc32c(data) != struct.unpack("<I", footer)[0]:
                raise DataError(f"{path}: record {index}: data CRC mismatch")
            yield data
            index += 1


def looks_like_tfrecord(path: Path) -> bool:
    """Tell whether a file starts with a valid TFRecord header (after decompression)."""
    with open_stream(path) as f:
        header = f.read(12)
    if len(header) < 12:
        return False
    return masked_crc32c(header[:8]) == struct.unpack("<I", header[8:])[0]
