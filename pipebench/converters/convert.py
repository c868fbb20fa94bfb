"""`pipebench convert`: libsvm or TFRecord in; TFRecord (Example), packed or libsvm out; a manifest.

Chunks of whole lines are parsed, validated and serialized by compiled kernels that release the
GIL, on `workers` threads; one writer keeps input order, so output does not depend on the worker
count. At most `2 × workers` chunks are in flight: memory does not grow with input size. Output is
built in a temp folder renamed into place at the end, so a failure leaves nothing at `--out`.

Every row is validated by one rule set, whatever the input: libsvm lines by the grammar in
`converters.libsvm`, TFRecord rows by rendering the ones that break it as libsvm lines and running
the same parser, so reasons, counts and quarantine entries agree. `--on-error` applies to rows; a
damaged file (a TFRecord checksum, a truncated or corrupt gzip/zlib stream) always stops the run.
A run that yields no row at all (empty input, every row rejected) is an error, not an empty data set.

Raw Criteo input (`--from criteo`, converters.criteo) takes two passes over the same chunks: the
first counts values into a feature map (unless `--feature-map` gives one), saved in the output
folder as feature_map.json; the second maps and writes rows like the libsvm path.
"""
from __future__ import annotations

import base64
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
from pipebench.converters import MANIFEST, criteo, libsvm, packed, tfrecord
from pipebench.converters.example import SCHEMA, encode_examples
from pipebench.converters.inputs import InputFile, refuse_unusable, sniff_compression
from pipebench.converters.inverse import ExampleBatch, example_batches, format_libsvm
from pipebench.converters.manifest import (
    MANIFEST_VERSION,
    FeatureMapUsed,
    Made,
    Manifest,
    Rejected,
    Shard,
    SourceFile,
)
from pipebench.converters.shards import ShardWriter
from pipebench.atomic import atomic_dir, atomic_write_json
from pipebench.errors import DataError, UsageError
from pipebench.progress import Progress

FORMATS = ("tfrecord", "packed", "libsvm")
#: What the input is: "auto" tells libsvm from TFRecord by the bytes; "criteo" is raw Kaggle rows.
FROM = ("auto", "criteo")
ON_ERROR = ("fail", "skip", "quarantine")
SUFFIX = {"tfrecord": ".tfrecord", "packed": ".packed.tfrecord", "libsvm": ".libsvm"}
COMPRESSED_SUFFIX = {"none": "", "gzip": ".gz", "zlib": ".zz"}
DEFAULT_SHARD_MB = 128.0
MAX_SHARD_MB = float(1 << 20)  # 1 TiB: larger budgets overflow the byte count and mean "one file" anyway
CHUNK_BYTES = 4 << 20
#: The longest line read: a valid libsvm line of 39 fields is about 2 KB, a raw Criteo line under 1 KB.
MAX_LINE_BYTES = 4 << 20
#: Lines per chunk at most: a parser holds a row per line, (34 + 12 × field_size) bytes for libsvm.
CHUNK_LINES = 1 << 15
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
    from_format: str = "auto"
    feature_map: Path | None = None  # raw Criteo: map rows by this saved map instead of building one
    cutoff: int | None = None  # raw Criteo: keep categorical values seen at least this often (default 200)

    def check(self) -> None:
        """Raise UsageError for option values that cannot work together."""
        if not self.inputs:
            raise UsageError("convert: no input files")
        for path in self.inputs:
            refuse_unusable(Path(path))
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
        if self.shard_mb is not None and not (0 < self.shard_mb <= MAX_SHARD_MB):  # NaN fails too
            raise UsageError(f"--shard-mb must be a number above 0 and at most {MAX_SHARD_MB:.0f} (1 TiB), "
                             f"not {self.shard_mb}")
        if self.format == "packed" and self.feature_size and not packed.ids_fit(self.feature_size - 1):
            raise UsageError("--format packed stores ids as int32: feature_size must be below 2**31")
        if self.from_format not in FROM:
            raise UsageError(f"--from must be one of {', '.join(FROM)}, not {self.from_format!r}")
        if self.from_format != "criteo":
            if self.feature_map is not None or self.cutoff is not None:
                raise UsageError("--feature-map and --cutoff apply to raw Criteo input: add --from criteo")
            return
        if self.field_size != criteo.FIELD_SIZE:
            raise UsageError(f"--from criteo gives {criteo.FIELD_SIZE} fields; drop --field-size {self.field_size}")
        if self.feature_map is not None and self.cutoff is not None:
            raise UsageError("give --feature-map or --cutoff, not both (the map keeps the cutoff it was built with)")
        if self.feature_map is not None:
            refuse_unusable(Path(self.feature_map))


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
    rejects: list[tuple[int, str, str, bytes]]  # (line or record number, reason code, reason, line or record)
    packed_rows: np.ndarray | None = None


class _Source:
    """One input file: size and checksum as stored (hashed while it is first read), line count.

    A later pass (raw Criteo's second, `--shards`' count) does not hash again; it checks instead
    that size and modification time are still those of the first pass.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.compression = sniff_compression(self.path)
        self.stamp = self._stamp()
        self.bytes = self.stamp[0]
        self.sha256: str | None = None
        self.lines = 0
        self.reading: InputFile | None = None  # the latest pass over it, for progress

    def _stamp(self) -> tuple[int, int]:
        st = self.path.stat()
        return st.st_size, st.st_mtime_ns

    def open(self) -> InputFile:
        self.reading = InputFile(self.path, self.compression, hash=self.sha256 is None)
        return self.reading

    def read_to_end(self, stream: InputFile) -> None:
        """Take the checksum of a first pass; refuse a file changed since the first pass."""
        if stream.sha256 is not None:
            self.sha256 = stream.sha256
        elif self._stamp() != self.stamp:
            raise DataError(f"{self.path}: changed while it was being converted (its size or modification "
                            "time differ from the first pass over it); convert it again")

    def describe(self) -> SourceFile:
        return SourceFile(str(self.path), self.bytes, self.sha256, self.compression, self.lines)


def _line_chunks(source: _Source, chunk_bytes: int) -> Iterator[tuple[int, bytes]]:
    """Yield (first line number, chunk of whole lines) from a text file; see it read to its end.

    Linear time and bounded memory whatever the bytes: a line longer than MAX_LINE_BYTES is a
    DataError as soon as that many bytes of it are read (reads are at most that long, so a line
    within one read is shorter), and a chunk holds at most CHUNK_LINES lines, so the parsers' arrays
    (a row per line) stay small for a file of empty lines too.
    """
    line = 1
    head = bytearray()  # the start of the line the last read ended in (appended to in place: linear)
    with source.open() as stream:
        while block := stream.read(min(chunk_bytes, MAX_LINE_BYTES)):
            first_end = block.find(b"\n")
            if len(head) + (len(block) if first_end < 0 else first_end) > MAX_LINE_BYTES:
                raise DataError(f"{source.path}:{line}: line longer than {MAX_LINE_BYTES:,} bytes (not line-oriented "
                                "text: a binary or damaged file?)")
            if first_end < 0:
                head += block
                continue
            cut = block.rfind(b"\n") + 1
            chunk = b"".join((head, memoryview(block)[:cut]))  # one copy, whatever the head
            head = bytearray(block[cut:])
            for piece, lines in _at_most_lines(chunk, CHUNK_LINES):
                yield line, piece
                line += lines
        source.read_to_end(stream)
    if head:
        yield line, bytes(head)


def _at_most_lines(chunk: bytes, most: int) -> Iterator[tuple[bytes, int]]:
    """Yield `chunk` (whole lines) in pieces of at most `most` lines each, with their line counts."""
    lines = chunk.count(b"\n")
    if lines <= most:
        yield chunk, lines
        return
    ends = [*(np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 10)[most - 1 :: most] + 1).tolist(), len(chunk)]
    start = 0
    for end in ends:
        if end > start:
            yield chunk[start:end], min(most, lines)
            lines -= most
        start = end


def _count_input_rows(sources: list[_Source], tf_input: bool, field_size: int) -> int:
    """Count lines (or records) of all inputs: `--shards N` needs the total before writing."""
    if tf_input:
        total = 0
        for source in sources:
            with source.open() as stream:
                total += sum(len(records) for _, records in tfrecord.record_batches(stream))
                source.read_to_end(stream)
        return total
    total = 0
    for source in sources:
        for _, chunk in _line_chunks(source, CHUNK_BYTES):
            total += libsvm.count_lines(chunk)
    return total


class _Converter:
    def __init__(self, req: ConvertRequest, display: Progress | None = None) -> None:
        self.req = req
        self.display = display
        self.announced = 0  # inputs whose end the display has announced
        self.counted = 0  # bytes read by raw Criteo's first pass, for the display
        self.sources = [_Source(p) for p in req.inputs]
        kinds = {s.path: tfrecord.looks_like_tfrecord(s.path) for s in self.sources}
        self.raw_criteo = req.from_format == "criteo"
        self.feature_map: criteo.FeatureMap | None = None
        if self.raw_criteo and any(kinds.values()):
            tf_file = next(p for p, tf in kinds.items() if tf)
            raise UsageError(f"{tf_file} is TFRecord, not raw Criteo text; drop --from criteo")
        self.tf_input = all(kinds.values())
        if any(kinds.values()) and not self.tf_input:
            tf_file = next(p for p, tf in kinds.items() if tf)
            text_file = next(p for p, tf in kinds.items() if not tf)
            raise UsageError(f"{tf_file} is TFRecord but {text_file} is not; convert one kind of input at a time")
        if not self.tf_input and not self.raw_criteo:
            raw = next((s.path for s in self.sources if criteo.looks_like_raw(s.path)), None)
            if raw is not None:
                raise UsageError(f"{raw} looks like raw Criteo rows (40 tab-separated columns: label, I1-I13, "
                                 "C1-C26), not libsvm; add --from criteo")
        if not self.tf_input and not self.raw_criteo and req.format == "libsvm":
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
        if self.display is not None:  # raw Criteo counting its own map reads every input twice
            passes = 2 if self.raw_criteo and req.feature_map is None else 1
            self.display.total = passes * sum(s.bytes for s in self.sources)
        with atomic_dir(req.out, force=req.force, inputs=req.inputs) as tmp:
            writer = self._writer(tmp)
            quarantine = open(tmp / QUARANTINE_FILE, "w") if req.on_error == "quarantine" else None
            try:
                with ThreadPoolExecutor(req.workers) as pool:
                    try:
                        if self.raw_criteo:
                            self.feature_map = self._load_or_build_map(pool)
                            self.feature_map.save(tmp / criteo.FEATURE_MAP_FILE)
                        self._pump(pool, writer, quarantine)
                    except BaseException:
                        pool.shutdown(wait=True, cancel_futures=True)
                        raise
                if not self.rows:
                    raise self._no_rows()
                self._announce(sum(s.bytes for s in self.sources))
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
            atomic_write_json(tmp / MANIFEST, manifest.to_json(), allow_nan=False)
        return manifest

    def _load_or_build_map(self, pool: ThreadPoolExecutor) -> criteo.FeatureMap:
        """Give the raw Criteo feature map: the one given, or one counted from the inputs (the first pass).

        A bad line fails here already when --on-error is fail; otherwise it is left out of the
        counts, and the second pass rejects it as it would any bad line.
        """
        req = self.req
        if req.feature_map is not None:
            fmap = criteo.FeatureMap.load(req.feature_map)
        else:
            counter = criteo.Counter()
            window: deque[tuple[Future, int]] = deque()

            def collect(future: Future, read_up_to: int) -> None:
                index, first, parsed, chunk, counts = future.result()
                source = self.sources[index]
                source.lines = max(source.lines, first + len(parsed.status) - 1)
                if req.on_error == "fail" and not parsed.good.all():
                    row = int(np.flatnonzero(~parsed.good)[0])
                    raise DataError(f"{source.path}:{first + row}: {criteo.reason(parsed, chunk, row)}")
                counter.add(counts)
                if self.display is not None:
                    self.display.advance(read_up_to - self.display.done, f"pass 1/2: {counter.rows:,} rows counted")

            for index, source in enumerate(self.sources):
                for first, chunk in _line_chunks(source, req.chunk_bytes):
                    window.append((pool.submit(_count_raw, index, first, chunk), self._read_up_to(index)))
                    if len(window) >= 2 * req.workers:
                        collect(*window.popleft())
            while window:
                collect(*window.popleft())
            fmap = counter.feature_map(req.cutoff or criteo.DEFAULT_CUTOFF, tuple(s.describe() for s in self.sources))
            self.counted = sum(s.bytes for s in self.sources)
            if self.display is not None:
                self.display.unit_done(f"convert: pass 1/2 done: feature map of {fmap.rows:,} rows, feature_size "
                                       f"{fmap.feature_size:,} (cutoff {fmap.cutoff})")
        if req.feature_size is not None and fmap.feature_size > req.feature_size:
            raise UsageError(f"--feature-size {req.feature_size}: the feature map gives ids up to "
                             f"{fmap.feature_size - 1}; drop --feature-size or raise it to {fmap.feature_size}")
        return fmap

    def _no_rows(self) -> DataError:
        """Give the error for a run that produced no row: an empty data set is never what was asked."""
        where = str(self.sources[0].path) + (f" (and {len(self.sources) - 1} more)" if len(self.sources) > 1 else "")
        rejected = sum(self.rejected.values())
        if rejected:
            reasons = ", ".join(f"{count:,} {key}" for key, count in self.rejected.most_common(3))
            return DataError(f"{where}: all {rejected:,} rows were rejected ({reasons}); nothing written")
        return DataError(f"{where}: no rows: the input is empty; nothing written")

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
                with source.open() as stream:  # example_batches imports TensorFlow
                    for batch in example_batches(stream, self.req.field_size, self.req.on_error == "fail"):
                        yield _check_and_encode, (index, batch)
                    source.read_to_end(stream)
            elif self.raw_criteo:
                for first, chunk in _line_chunks(source, self.req.chunk_bytes):
                    yield _map_and_encode, (index, first, chunk, self.feature_map)
            else:
                for first, chunk in _line_chunks(source, self.req.chunk_bytes):
                    yield _parse_and_encode, (index, first, chunk)

    def _pump(self, pool: ThreadPoolExecutor, writer: ShardWriter, quarantine) -> None:
        window: deque[tuple[Future, int]] = deque()  # with how far through the inputs its chunk ends (bytes)
        for func, args in self._tasks():
            window.append((pool.submit(func, self.req, *args), self._read_up_to(args[0])))
            if len(window) >= 2 * self.req.workers:
                self._collect(*self._next(window), writer, quarantine)
        while window:
            self._collect(*self._next(window), writer, quarantine)

    @staticmethod
    def _next(window: deque[tuple[Future, int]]) -> tuple[_Chunk, int]:
        future, read_up_to = window.popleft()
        return future.result(), read_up_to

    def _read_up_to(self, index: int) -> int:
        """Give the bytes (as stored) of the inputs read so far, input `index` being read now."""
        return sum(s.bytes for s in self.sources[:index]) + self.sources[index].reading.stored_bytes_read

    def _collect(self, chunk: _Chunk, read_up_to: int, writer: ShardWriter, quarantine) -> None:
        source = self.sources[chunk.source]
        source.lines = max(source.lines, chunk.first_line + chunk.lines - 1)
        for number, code, reason, text in chunk.rejects:
            if self.req.on_error == "fail":
                raise DataError(f"{source.path}:{number}: {reason}")
            self.rejected[code] += 1
            if quarantine is not None:
                where = {"record": number, "data_base64": base64.b64encode(text).decode()} if self.tf_input \
                    else {"line": number, "text": text.decode("utf-8", "surrogateescape")}
                entry = {"file": str(source.path), **where, "reason": reason, "code": code}
                quarantine.write(json.dumps(entry, ensure_ascii=True, allow_nan=False) + "\n")
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
        self._announce(read_up_to)

    def _announce(self, read_up_to: int) -> None:
        """Show the input converted so far (bytes as stored), and a line for each input converted to its end."""
        if self.display is None:
            return
        self.display.advance(self.counted + read_up_to - self.display.done,
                             f"{'pass 2/2: ' if self.counted else ''}{self.rows:,} rows")
        ends = np.cumsum([s.bytes for s in self.sources])
        while self.announced < len(self.sources) and ends[self.announced] <= read_up_to:
            source = self.sources[self.announced]
            self.announced += 1
            self.display.unit_done(f"convert: {source.path}: converted ({self.announced}/{len(self.sources)} "
                                   f"inputs, {self.rows:,} rows so far, {self.display.done_text()})")

    @staticmethod
    def _frame(payload: np.ndarray, ends: np.ndarray, counts: np.ndarray):
        framed, framed_ends = tfrecord.frame(payload, ends)
        return framed, framed_ends, counts

    def _manifest(self, shards: list[Shard], seconds: float) -> Manifest:
        req = self.req
        return Manifest(
            MANIFEST_VERSION, Made("pipebench convert", pipebench.__version__), req.format, req.compression,
            tfrecord.TF_COMPRESSION[req.compression], req.field_size,
            self.feature_map.feature_size if self.feature_map else req.feature_size, self.max_id + 1, self.rows,
            self.label_sum / self.rows if self.rows else None,
            None if req.format == "libsvm" else {
                name: {"dtype": dtype, "shape": [req.field_size if d == "F" else d for d in shape]}
                for name, (dtype, shape) in SCHEMA.items()},
            tuple(shards), tuple(s.describe() for s in self.sources),
            "tfrecord" if self.tf_input else "criteo" if self.raw_criteo else "libsvm", req.on_error,
            Rejected(sum(self.rejected.values()), dict(sorted(self.rejected.items()))), round(seconds, 3),
            packed.layout(req.field_size, req.rows_per_record) if req.format == "packed" else None,
            QUARANTINE_FILE if req.on_error == "quarantine" else None,
            None if self.feature_map is None else FeatureMapUsed(
                criteo.FEATURE_MAP_FILE, self.feature_map.cutoff, None if req.feature_map is None else str(req.feature_map)))


def _told(bad: np.ndarray, req: ConvertRequest) -> np.ndarray:
    """Give the rejected rows whose reasons are needed: the first only when it stops the run (--on-error fail)."""
    return bad[:1] if req.on_error == "fail" else bad


def _parse_and_encode(req: ConvertRequest, source: int, first_line: int, chunk: bytes) -> _Chunk:
    parsed = libsvm.parse_chunk(chunk, req.field_size, req.feature_size)
    bad = np.flatnonzero(parsed.status)
    rejects = [(first_line + int(r), libsvm.REASON_KEYS[int(parsed.status[r])],
                libsvm.reason(parsed, chunk, int(r), req.field_size, req.feature_size), parsed.line(chunk, int(r)))
               for r in _told(bad, req)]
    labels, ids, values = parsed.labels, parsed.ids, parsed.values
    if len(bad):
        good = parsed.status == libsvm.OK
        labels, ids, values = labels[good], ids[good], values[good]
    out = _encode_rows(req, source, first_line, labels, ids, values)
    out.lines = len(parsed.status)
    out.rejects = rejects
    return out


def _count_raw(source: int, first_line: int, chunk: bytes) -> tuple:
    """Give the first pass's view of a raw Criteo chunk: (source, first line, parsed, chunk, counts)."""
    parsed = criteo.parse_chunk(chunk)
    return source, first_line, parsed, chunk, criteo.count_chunk(parsed)


def _map_and_encode(req: ConvertRequest, source: int, first_line: int, chunk: bytes,
                    fmap: criteo.FeatureMap) -> _Chunk:
    """Parse raw Criteo lines, map the good ones through the feature map, encode them."""
    parsed = criteo.parse_chunk(chunk)
    bad = np.flatnonzero(~parsed.good)
    rejects = [(first_line + int(r), criteo.REASON_KEYS[int(parsed.status[r])], criteo.reason(parsed, chunk, int(r)),
                parsed.line(chunk, int(r))) for r in _told(bad, req)]
    out = _encode_rows(req, source, first_line, *fmap.encode(parsed))
    out.lines = len(parsed.status)
    out.rejects = rejects
    return out


def _check_and_encode(req: ConvertRequest, source: int, batch: ExampleBatch) -> _Chunk:
    """Validate a batch of TFRecord rows by the libsvm rules, then encode the good ones."""
    labels, ids, values = batch.labels, batch.ids, batch.values
    bad = ~((labels >= 0) & (labels <= 1)) | (ids < 0).any(axis=1) | ~np.isfinite(values).all(axis=1)  # NaN too
    if req.feature_size:
        bad |= (ids >= req.feature_size).any(axis=1)
    rejects = [(number, code, reason, batch.records[number - batch.first]) for number, code, reason in batch.failures]
    if bad.any():
        rows = np.flatnonzero(bad)
        text = format_libsvm(labels[rows], ids[rows], values[rows])[0].tobytes()
        parsed = libsvm.parse_chunk(text, req.field_size, req.feature_size)
        for k, row in enumerate(rows.tolist()):
            status = int(parsed.status[k])
            if status == libsvm.OK:
                raise AssertionError(f"row {row} breaks the rules; its libsvm text {parsed.line(text, k)!r} does not")
            number = int(batch.numbers[row])
            rejects.append((number, libsvm.REASON_KEYS[status],
                            libsvm.reason(parsed, text, k, req.field_size, req.feature_size),
                            batch.records[number - batch.first]))
        rejects.sort()
        labels, ids, values = labels[~bad], ids[~bad], values[~bad]
    chunk = _encode_rows(req, source, batch.first, labels, ids, values)
    chunk.lines = len(batch.records)
    chunk.rejects = rejects
    return chunk


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
        chunk.payload, chunk.ends = format_libsvm(labels, ids, values)
    return chunk


def convert(req: ConvertRequest, display: Progress | None = None) -> dict:
    """Convert `req.inputs` into `req.out`; give the manifest written beside the output.

    `display` (pipebench.progress) hears the bytes of input read and each input finished; its total
    is set here.
    """
    req.check()
    return _Converter(req, display).run()
