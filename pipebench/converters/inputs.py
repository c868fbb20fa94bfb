"""Input files: refused unless they are readable regular files, then read once, decompressed and hashed.

Every way reading can fail (an I/O error, a truncated or damaged gzip/zlib stream, bytes after
its end) becomes one DataError naming the file, raised from the one place input bytes are read.
"""
from __future__ import annotations

import hashlib
import os
import stat
import zlib
from pathlib import Path

from pipebench.errors import DataError, UsageError

_BLOCK_BYTES = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"
_WBITS = {"gzip": 31, "zlib": 15}
_NOT_REGULAR = {stat.S_ISFIFO: "a FIFO (pipe)", stat.S_ISCHR: "a character device",
                stat.S_ISBLK: "a block device", stat.S_ISSOCK: "a socket"}


def refuse_unusable(path: Path) -> None:
    """Raise UsageError unless `path` is a regular file this process can open for reading.

    Streams (a FIFO, /dev/stdin) are refused: an input is read more than once (its compression
    and format are sniffed first; --shards counts its rows before writing).
    """
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise UsageError(f"{path}: no such file") from None
    except OSError as err:
        raise UsageError(f"{path}: cannot read: {err.strerror}") from None
    if stat.S_ISDIR(mode):
        raise UsageError(f"{path}: is a directory, not a file (give the files in it, e.g. {path}/part-*)")
    for test, kind in _NOT_REGULAR.items():
        if test(mode):
            raise UsageError(f"{path}: is {kind}, not a regular file; inputs are read more than once, "
                             "so save the stream to a file first")
    try:
        with open(path, "rb"):
            pass
    except OSError as err:
        raise UsageError(f"{path}: cannot read: {err.strerror}") from None


def _read_failure(path: Path, err: OSError) -> DataError:
    return DataError(f"{path}: cannot read: {err.strerror or type(err).__name__}")


def sniff_compression(path: Path) -> str:
    """Guess a file's compression from its first bytes (gzip magic, zlib header), not its name."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as err:
        raise _read_failure(path, err) from None
    if head[:2] == _GZIP_MAGIC:
        return "gzip"
    if len(head) >= 2 and head[0] & 0x0F == 8 and ((head[0] << 8) | head[1]) % 31 == 0:
        try:  # two bytes can pass the header check by chance; a real stream also inflates
            zlib.decompressobj(15).decompress(head)
            return "zlib"
        except zlib.error:
            pass
    return "none"


class InputFile:
    """One input read front to back: its decompressed bytes, and the sha256 of the bytes as stored.

    `hash=False` skips the sha256 (sha256 stays None): a later pass over a file already hashed.

    Gzip input may hold several members (concatenated .gz files) and zero padding; anything else
    after the end of the compressed stream is an error, as is a stream that stops before its end.
    """

    def __init__(self, path: Path, compression: str | None = None, *, hash: bool = True) -> None:
        self.path = Path(path)
        self.compression = compression or sniff_compression(self.path)
        self.sha256: str | None = None  # set once the whole file has been read
        self.decompressed_bytes = 0
        self.stored_bytes_read = 0  # of the file as stored: how far through it the reading is (progress)
        self._digest = hashlib.sha256() if hash else None
        self._inflate = self._new_inflate()
        try:
            self._raw = open(self.path, "rb", buffering=0)
        except OSError as err:
            raise _read_failure(self.path, err) from None

    def _new_inflate(self):
        wbits = _WBITS.get(self.compression)
        return None if wbits is None else zlib.decompressobj(wbits)

    def _raw_read(self, size: int) -> bytes:
        data = self._raw.read(size)
        if data:
            if self._digest is not None:
                self._digest.update(data)
            self.stored_bytes_read += len(data)
        elif self._digest is not None:
            self.sha256 = self._digest.hexdigest()
        return data

    def read(self, size: int) -> bytes:
        """Give up to `size` decompressed bytes (fewer only near the end); b"" at the end."""
        try:
            data = self._raw_read(size) if self._inflate is None else self._inflate_some(size)
        except OSError as err:
            raise _read_failure(self.path, err) from None
        except zlib.error as err:
            raise DataError(f"{self.path}: damaged {self.compression} data after "
                            f"{self.decompressed_bytes:,} bytes: {err}") from None
        self.decompressed_bytes += len(data)
        return data

    def _inflate_some(self, size: int) -> bytes:
        parts: list[bytes] = []
        got = 0
        while got < size:
            inflate = self._inflate
            if inflate.eof:
                tail = self._after_stream(inflate.unused_data)
                if not tail:
                    break
                if self.compression != "gzip" or tail[: len(_GZIP_MAGIC)] != _GZIP_MAGIC:
                    raise DataError(f"{self.path}: bytes after the end of the {self.compression} data, at "
                                    f"{self.decompressed_bytes + got:,} bytes, are not {self.compression} data "
                                    "(a damaged or appended file)")
                self._inflate = inflate = self._new_inflate()  # the next gzip member
                data = tail
            elif inflate.unconsumed_tail:
                data = inflate.unconsumed_tail
            else:
                data = self._raw_read(_BLOCK_BYTES)
                if not data:
                    raise DataError(f"{self.path}: the {self.compression} data ends early, after "
                                    f"{self.decompressed_bytes + got:,} bytes (a truncated file)")
            piece = inflate.decompress(data, size - got)  # bounded: a small file may inflate hugely
            parts.append(piece)
            got += len(piece)
        return b"".join(parts)

    def _after_stream(self, tail: bytes) -> bytes:
        """Give what follows a finished compressed stream: enough to tell a next gzip member, or b"" at the end.

        Zero bytes after a gzip member are padding (tar and tape tools write it; gzip and Python skip it).
        """
        while True:
            if self.compression == "gzip":
                tail = tail.lstrip(b"\0")
            if len(tail) >= len(_GZIP_MAGIC):
                return tail
            more = self._raw_read(_BLOCK_BYTES)
            if not more:
                return tail
            tail += more

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> InputFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
