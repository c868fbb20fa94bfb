"""`pipebench convert`: libsvm or TFRecord in; TFRecord (Example), packed or libsvm out; a manifest.

Chunks of whole lines are parsed, validated and serialized by compiled kernels that release the
GIL, on `workers` threads; one writer keeps input order, so output does not depend on the worker
count. At most `2 × workers` chunks are in flight: memory does not grow with input size. Output is
built in a temp folder renamed into place at the end, so a failure leaves nothing at `--out`.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import time
from collections import Counter, deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import pipebench
from converters import MANIFEST, libsvm, packed, tfrecord
from converters.example import SCHEMA, encode_examples
from converters.shards import ShardWriter
from pipebench.atomic import atomic_dir, atomic_write_json
from pipebench.errors import DataError, UsageError

FORMATS = ("tfrecord", "packed", "libsvm")
ON_ERROR = ("fail", "skip", "quarantine")
SUFFIX = {"tfrecord": ".tfrecord", "packed": ".packed.tfrecord", "libsvm": ".libsvm"}
COMPRESSED_SUFFIX = {"none": "", "gzip": ".gz", "zlib": ".zz"}
DEFAULT_SHARD_MB = 128.0
CHUNK_BYTES = 4 << 20
QUARANTINE_FILE = "quarantine.jsonl"


def default_workers() -> int:
    """Give the number of CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass(frozen=True)
class ConvertRequest:
    """What to convert and how; mirrors the `pipebench convert` flags."""

    inputs: tuple[Path, ...]
    out: Path
    format: str = "tfrecord"
    field_size: int = 39
    feature_size: int | None = None
    shards: int | None = None
    shard_mb: float | None = None
    compression: str = "none"
    on_error: str = "fail"
    workers: int = field(default_factory=default_workers)
    rows_per_record: int = packed.DEFAULT_ROWS_PER_RECORD
    force: bool = False
    chunk_bytes: int = CHUNK_BYTES

    def check(self) -> None:
        """Raise UsageError for option values that cannot work together."""
        if not self.inputs:
            raise UsageError("convert: no input files")
        for path in self.inputs:
            if not Path(path).is_file():
                raise UsageError(f"{path}: no such file")
        if self.format not in FORMATS:
            raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {self.format!r}")
        if self.compression not in tfrecord.COMPRESSIONS:
            raise UsageError(f"--compression must be one of {', '.join(tfrecord.COMPRESSIONS)}")
        if self.on_error not in ON_ERROR:
            raise UsageError(f"--on-error must be one of {', '.join(ON_ERROR)}")
        if self.shards is not None and self.shard_mb is not None:
            raise UsageError("give --shards or --shard-mb, not both")
        for name in ("field_size", "workers", "rows_per_record", "shards", "feature_size"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UsageError(f"--{name.replace('_', '-')} must be at least 1, not {value}")
        if self.shard_mb is not None and self.shard_mb <= 0:
            raise UsageError(f"--shard-mb must be positive, not {self.shard_mb}")
        if self.format == "packed" and self.feature_size and not packed.ids_fit(self.feature_size - 1):
            raise UsageError("--format packed stores ids as int32: feature_size must be below 2**31")


@dataclass
class _Chunk:
    """What a worker gives back for one chunk of input."""

    source: int
    first_line: int
    lines: int
    payload: np.ndarray
    ends: np.ndarray
    rows: int
    label_sum: float
    max_id: int
    rejects: list[tuple[int, int, str, bytes]]  # (line number, status, reason, line)
    packed_rows: np.ndarray | None = None


class _Source:
    """One input file: size and checksum as stored (hashed while it is read), line count."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.compression = tfrecord.sniff_compression(self.path)
        self.bytes = self.path.stat().st_size
        self.sha256: str | None = None
        self.lines = 0

    def describe(self) -> dict:
        if self.sha256 is None:  # read by TensorFlow, not through _line_chunks
            self.sha256 = _sha256(self.path)
        return {"path": str(self.path), "bytes": self.bytes, "sha256": self.sha256,
                "compression": self.compression, "lines": self.lines}


class _HashingReader:
    """A file read through once, hashing every byte, so checksums cost no second pass."""

    def __init__(self, path: Path) -> None:
        self._file = open(path, "rb", buffering=0)
        self.digest = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self._file.read(size) if size >= 0 else self._file.readall()
        self.digest.update(data)
        return data

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> _HashingReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def _line_chunks(source: _Source, chunk_bytes: int) -> Iterator[tuple[int, bytes]]:
    """Yield (first line number, chunk of whole lines) from a libsvm file; set its sha256."""
    line = 1
    carry = b""
    raw = _HashingReader(source.path)
    stream = gzip.GzipFile(fileobj=raw) if source.compression == "gzip" else raw
    with raw, stream:
        while True:
            block = stream.read(chunk_bytes)
            if not block:
                break
            cut = block.rfind(b"\n") + 1
            if cut == 0:
                carry += block
                continue
            chunk = b"".join((carry, memoryview(block)[:cut]))  # one copy, whatever the carry
            carry = block[cut:]
            yield line, chunk
            line += chunk.count(b"\n")
        source.sha256 = raw.digest.hexdigest()
    if carry:
        yield line, carry


def _count_input_rows(sources: list[_Source], tf_input: bool, field_size: int) -> int:
    """Count lines (or records) of all inputs: `--shards N` needs the total before writing."""
    if tf_input:
        return sum(1 for s in sources for _ in tfrecord.read_records(s.path, s.compression))
    total = 0
    for source in sources:
        for _, chunk in _line_chunks(source, CHUNK_BYTES):
            total += libsvm.count_lines(chunk)
    return total


class _Converter:
    def __init__(self, req: ConvertRequest) -> None:
        self.req = req
        self.sources = [_Source(p) for p in req.inputs]
        self.tf_input = all(tfrecord.looks_like_tfrecord(s.path) for s in self.sources)
        if not self.tf_input and req.format == "libsvm":
            raise UsageError("--format libsvm converts TFRecord (Example) input back to libsvm; "
                             "the inputs are not TFRecord files")
        self.rejected: Counter[str] = Counter()
        self.rows = 0
        self.label_sum = 0.0
        self.max_id = -1
        self.packer = packed.Packer(req.rows_per_record) if req.format == "packed" else None

    def run(self) -> dict:
        req = self.req
        started = time.perf_counter()
        with atomic_dir(req.out, force=req.force) as tmp:
            writer = self._writer(tmp)
            quarantine = open(tmp / QUARANTINE_FILE, "w") if req.on_error == "quarantine" else None
            try:
                with ThreadPoolExecutor(req.workers) as pool:
                    try:
                        self._pump(pool, writer, quarantine)
                    except BaseException:
                        pool.shutdown(wait=True, cancel_futures=True)
                        raise
                if self.packer is not None:
                    writer.write(*self._frame(*self.packer.flush()))
                shards = writer.close()
            except BaseException:
                writer.abort()
                raise
            finally:
                if quarantine is not None:
                    quarantine.close()
            manifest = self._manifest(shards, time.perf_counter() - started)
            atomic_write_json(tmp / MANIFEST, manifest)
        return manifest

    def _writer(self, folder: Path) -> ShardWriter:
        req = self.req
        suffix = SUFFIX[req.format] + COMPRESSED_SUFFIX[req.compression]
        if req.shards is not None:
            total = _count_input_rows(self.sources, self.tf_input, req.field_size)
            per_shard = max(1, -(-total // req.shards))
            if self.packer is not None:
                per_shard = -(-per_shard // req.rows_per_record) * req.rows_per_record
            return ShardWriter(folder, suffix, req.compression, rows_per_shard=per_shard, shard_count=req.shards)
        shard_mb = req.shard_mb if req.shard_mb is not None else DEFAULT_SHARD_MB
        return ShardWriter(folder, suffix, req.compression, bytes_per_shard=int(shard_mb * (1 << 20)))

    def _tasks(self) -> Iterator[tuple]:
        for index, source in enumerate(self.sources):
            if self.tf_input:
                from converters.inverse import example_batches  # imports TensorFlow

                for first, (labels, ids, values) in example_batches(source.path, source.compression,
                                                                    self.req.field_size):
                    source.lines = first + len(labels) - 1
                    yield _encode_rows, (index, first, labels, ids, values)
            else:
                for first, chunk in _line_chunks(source, self.req.chunk_bytes):
                    yield _parse_and_encode, (index, first, chunk)

    def _pump(self, pool: ThreadPoolExecutor, writer: ShardWriter, quarantine) -> None:
        window: deque[Future] = deque()
        for func, args in self._tasks():
            window.append(pool.submit(func, self.req, *args))
            if len(window) >= 2 * self.req.workers:
                self._collect(window.popleft().result(), writer, quarantine)
        while window:
            self._collect(window.popleft().result(), writer, quarantine)

    def _collect(self, chunk: _Chunk, writer: ShardWriter, quarantine) -> None:
        source = self.sources[chunk.source]
        source.lines = max(source.lines, chunk.first_line + chunk.lines - 1)
        for line, status, reason, text in chunk.rejects:
            where = f"{source.path}:{line}: {reason}"
            if self.req.on_error == "fail":
                raise DataError(where)
            self.rejected[libsvm.REASON_KEYS[status]] += 1
            if quarantine is not None:
                quarantine.write(json.dumps({
                    "file": str(source.path), "line": line, "reason": reason,
                    "code": libsvm.REASON_KEYS[status], "text": text.decode("utf-8", "surrogateescape"),
                }, ensure_ascii=True) + "\n")
        if self.packer is not None and chunk.max_id >= 0 and not packed.ids_fit(chunk.max_id):
            raise DataError(f"{source.path}: id {chunk.max_id} does not fit the packed format's int32 "
                            "id column; use --format tfrecord")
        self.rows += chunk.rows
        self.label_sum += chunk.label_sum
        self.max_id = max(self.max_id, chunk.max_id)
        if self.packer is not None:
            writer.write(*self._frame(*self.packer.add(chunk.packed_rows)))
        else:
            writer.write(chunk.payload, chunk.ends)

    @staticmethod
    def _frame(payload: np.ndarray, ends: np.ndarray, counts: np.ndarray):
        framed, framed_ends = tfrecord.frame(payload, ends)
        return framed, framed_ends, counts

    def _manifest(self, shards, seconds: float) -> dict:
        req = self.req
        manifest = {
            "manifest_version": 1,
            "converter": {"name": "pipebench convert", "version": pipebench.__version__},
            "format": req.format,
            "compression": req.compression,
            "tf_compression_type": tfrecord.TF_COMPRESSION[req.compression],
            "field_size": req.field_size,
            "feature_size": req.feature_size,
            "feature_size_seen": self.max_id + 1,
            "rows": self.rows,
            "positive_rate": self.label_sum / self.rows if self.rows else None,
            "schema": None if req.format == "libsvm" else {
                name: {"dtype": dtype, "shape": [req.field_size if d == "F" else d for d in shape]}
                for name, (dtype, shape) in SCHEMA.items()
            },
            "shards": [s.to_dict() for s in shards],
            "sources": [s.describe() for s in self.sources],
            "input_format": "tfrecord" if self.tf_input else "libsvm",
            "on_error": req.on_error,
            "rejected": {"total": sum(self.rejected.values()), "by_reason": dict(sorted(self.rejected.items()))},
            "seconds": round(seconds, 3),
        }
        if req.format == "packed":
            manifest["packed_layout"] = packed.layout(req.field_size, req.rows_per_record)
        if req.on_error == "quarantine":
            manifest["quarantine_file"] = QUARANTINE_FILE
        return manifest


def _parse_and_encode(req: ConvertRequest, source: int, first_line: int, chunk: bytes) -> _Chunk:
    parsed = libsvm.parse_chunk(chunk, req.field_size, req.feature_size)
    bad = np.flatnonzero(parsed.status)
    rejects = [(first_line + int(r), int(parsed.status[r]),
                libsvm.reason(parsed, chunk, int(r), req.field_size, req.feature_size), parsed.line(chunk, int(r)))
               for r in bad]
    labels, ids, values = parsed.labels, parsed.ids, parsed.values
    if len(bad):
        good = parsed.status == libsvm.OK
        labels, ids, values = labels[good], ids[good], values[good]
    out = _encode_rows(req, source, first_line, labels, ids, values)
    out.lines = len(parsed.status)
    out.rejects = rejects
    return out


def _encode_rows(req: ConvertRequest, source: int, first_line: int,
                 labels: np.ndarray, ids: np.ndarray, values: np.ndarray) -> _Chunk:
    n = len(labels)
    max_id = int(ids.max()) if ids.size else -1
    chunk = _Chunk(source, first_line, n, np.empty(0, np.uint8), np.empty(0, np.int64), n,
                   float(labels.sum(dtype=np.float64)), max_id, [])
    if req.format == "tfrecord":
        chunk.payload, chunk.ends = tfrecord.frame(*encode_examples(labels, ids, values))
    elif req.format == "packed":
        chunk.packed_rows = packed.pack_rows(labels, ids, values) if packed.ids_fit(max_id) else None
    else:
        from converters.inverse import format_libsvm

        chunk.payload, chunk.ends = format_libsvm(labels, ids, values)
    return chunk


def convert(req: ConvertRequest) -> dict:
    """Convert `req.inputs` into `req.out`; give the manifest written beside the output."""
    req.check()
    return _Converter(req).run()
